"""No secret reaches disk in any form (issue 30, item 3): a key a provider echoes into the response cache,
a password in a `base_url`, a token in a bot URL's query string, and every configured secret in its common
encodings (base64 / base64url at any alignment, hex, HTML entities, percent-encoding in either case)."""

from __future__ import annotations

import base64
import gzip
import html
import json
import sqlite3
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest

from simulator.cli import main
from simulator.config.secrets import REDACTED, redact_url, url_secrets
from simulator.config.suite import Suite
from simulator.providers.base import ModelResponse
from simulator.providers.cache import ResponseCache
from simulator.record.redact import redact, register_secrets, suite_secrets

SECRETS = ["tok-9f8e7d6c5b4a", 'p@ss"w/rd{x}&<y>', "clé-secrète-✓-42", "Zz" * 40]


def _encodings(secret: str) -> dict[str, str]:
    raw = secret.encode()
    return {
        "base64": base64.b64encode(raw).decode(),
        "base64-in-basic-auth-1": base64.b64encode(b"u:" + raw).decode(),
        "base64-in-basic-auth-2": base64.b64encode(b"user:" + raw + b"!").decode(),
        "base64url": base64.urlsafe_b64encode(b"ab" + raw).decode().rstrip("="),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "percent-upper": "".join(f"%{b:02X}" for b in raw),
        "percent-lower": "".join(f"%{b:02x}" for b in raw),
        "quote": quote(secret, safe=""),
        "html-escape": html.escape(secret),
        "html-decimal": "".join(f"&#{ord(c)};" for c in secret),
        "html-hex": "".join(f"&#x{ord(c):x};" for c in secret),
        "json": json.dumps(secret)[1:-1],
    }


def _exposes(text: str, secret: str) -> list[str]:
    """Which encodings of `secret` (or their long cores) `text` still holds."""
    found = []
    for name, encoded in _encodings(secret).items():
        core = encoded[4:-4] if name.startswith("base64") else encoded
        if core and core in text:
            found.append(name)
    return found + (["plain"] if secret in text else [])


@pytest.mark.parametrize("secret", SECRETS)
def test_every_encoding_of_a_secret_is_redacted(secret: str) -> None:
    register_secrets([secret])
    for name, encoded in _encodings(secret).items():
        text = redact(f"echo: [{encoded}] done")
        assert REDACTED in text, name
        assert not _exposes(text, secret), (name, text)


URLS = [
    ("https://alice:s3cr3t-pass@llm.example/v1", {"s3cr3t-pass"}),
    ("http://127.0.0.1:9/chat?token=abcd-1234-token&lang=en", {"abcd-1234-token"}),
    ("http://host/chat?x=1&api_key=K3Y-VALUE-99&sig=Zm9vYmFy", {"K3Y-VALUE-99", "Zm9vYmFy"}),
    ("https://u:p%40ss-word@h/x?t=tok%2Fslash", {"p@ss-word", "tok/slash"}),
]


@pytest.mark.parametrize(("url", "secrets"), URLS)
def test_url_secrets_and_redact_url(url: str, secrets: set[str]) -> None:
    assert secrets <= url_secrets(url)
    redacted = redact_url(url)
    assert REDACTED in redacted
    assert not any(s in redacted or quote(s, safe="") in redacted for s in secrets)
    assert (
        redacted.split("//")[1].split("/")[0].rpartition("@")[2]
        == url.split("//")[1].split("/")[0].rpartition("@")[2]
    )


def test_a_base_url_password_is_a_suite_secret() -> None:
    suite = Suite.model_validate(
        {
            "bot": {"type": "chat", "model": "openai:gpt-x", "system_prompt": "hi"},
            "providers": {"openai": {"base_url": "https://me:hunter2-pw@proxy.example/v1"}},
        }
    )
    assert "hunter2-pw" in suite_secrets(suite, environ={})


@pytest.mark.parametrize(
    ("bot", "field"),
    [
        (
            {"type": "openai_endpoint", "base_url": "https://me:hunter2-pw@llm.example/v1", "model": "m"},
            "base_url",
        ),
        ({"type": "whatsapp", "webhook_url": "https://bot.example/hook?token=hunter2-pw"}, "webhook_url"),
        (
            {
                "type": "whatsapp",
                "webhook_url": "https://bot.example/hook",
                "state_url": "https://me:hunter2-pw@b.example/s",
            },
            "state_url",
        ),
    ],
)
def test_other_bots_urls_are_suite_secrets_and_redacted_in_the_manifest(
    bot: dict[str, str], field: str
) -> None:
    """Every bot type's URLs, not only an http bot's: a password or a token there is a secret, and the
    suite the manifest keeps holds `[redacted]` in its place."""
    from simulator.record.redact import redacted_suite

    suite = Suite.model_validate({"bot": bot})
    assert "hunter2-pw" in suite_secrets(suite, environ={})
    kept = getattr(redacted_suite(suite).bot, field)
    assert "hunter2-pw" not in kept and REDACTED in kept


@pytest.mark.parametrize("secret", SECRETS[:3])
def test_the_response_cache_never_stores_an_echoed_key(tmp_path: Path, secret: str) -> None:
    register_secrets([secret])
    cache = ResponseCache(tmp_path / "cache.sqlite")
    echoed = f"your key is {secret}; base64 {base64.b64encode(secret.encode()).decode()}"
    cache.put("k", "openai", "judge", ModelResponse(text=echoed, raw={"headers": {"x-api-key": secret}}))
    cache.close()
    stored = (
        sqlite3.connect(tmp_path / "cache.sqlite").execute("SELECT response FROM responses").fetchone()[0]
    )
    assert REDACTED in stored and not _exposes(stored, secret)


class _PathEcho(BaseHTTPRequestHandler):
    """Echoes the request path (with its query) and headers back as the bot's message."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        echo = {"path": self.path, "headers": dict(self.headers.items())}
        data = json.dumps({"message": f"echo {json.dumps(echo)}", "closed": True}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return


@pytest.mark.parametrize("query", ["token=qs-TOKEN-7f3a", "a=1&access_token=Acc3ss-QS-99", "sig=c2lnbmVk-x"])
def test_a_bot_url_token_reaches_no_file(
    suite_dir: Path, tmp_path: Path, query: str, capsys: pytest.CaptureFixture[str]
) -> None:
    token = query.rpartition("=")[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PathEcho)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    suite = suite_dir / "suite.yaml"
    url = f"http://botuser:pw-{token}@127.0.0.1:{server.server_port}/chat?{query}"
    suite.write_text(f"name: q\nbot: {{type: http, url: '{url}'}}\nuser: {{model: offline}}\nruns: 2\n")
    out, reports = tmp_path / "run", tmp_path / "reports"
    reports.mkdir()
    try:
        assert main(["run", str(suite), "--out", str(out), "--no-progress"]) == 0
        assert (
            main(["report", str(out), "--html", str(reports / "r.html"), "--json", str(reports / "r.json")])
            == 0
        )
        assert main(["show", str(out), "--raw"]) == 0
    finally:
        server.shutdown()
    assert "echo" in (out / "conversations.jsonl").read_text()
    printed = capsys.readouterr()
    files = [p for d in (out, reports) for p in d.rglob("*") if p.is_file()]
    for text in [p.read_bytes().decode("utf-8", "replace") for p in files] + [printed.out, printed.err]:
        for secret in (token, f"pw-{token}"):
            assert not _exposes(text, secret)
    manifest = json.loads((out / "manifest.json").read_text())
    assert REDACTED in manifest["suite"]["bot"]["url"]
    # The URL's secret was not recorded: a resume says how to keep it out of the suite instead of calling
    # a wrong URL.
    assert main(["run", "--resume", str(out), "--no-progress"]) == 2
    assert "${VAR}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "encode",
    [
        lambda raw: base64.b64encode(gzip.compress(b"key=" + raw)).decode(),
        lambda raw: gzip.compress(raw).hex(),
        lambda raw: base64.b85encode(gzip.compress(b"token " + raw)).decode(),
        lambda raw: base64.a85encode(zlib.compress(b"token " + raw)).decode(),
    ],
)  # compressed, so that only decoding the run finds the secret (its plain forms are searched apart)
@pytest.mark.parametrize("words", [0, 400], ids=["short text", "long text"])
def test_what_a_run_decoded_to_is_remembered_only_while_the_secrets_stay_the_same(
    encode: object, words: int
) -> None:
    """The search remembers each run's verdict (a run's records repeat the same hashes on every line), and a
    long text's verdict (a conversation's record is searched as written and as each judge is shown it); a
    secret registered or forgotten after a text was searched is found, or no longer found, in that text."""
    from simulator.record.redact import contains_secret, forget_secrets

    first, second = "first-secret-0a1b2c3d", "second-secret-4e5f6a7b"
    text = json.dumps({"blob": encode(second.encode()), "words": "said " * words})  # type: ignore[operator]
    forget_secrets()
    try:
        register_secrets([first])
        assert not contains_secret(text) and not contains_secret(text)  # searched twice: remembered as clean
        register_secrets([second])
        assert contains_secret(text)  # the same run, now holding a registered secret
        assert REDACTED in json.dumps(redact(json.loads(text)))
        forget_secrets()
        register_secrets([first])
        assert not contains_secret(text)
    finally:
        forget_secrets()


@pytest.mark.parametrize("pad", range(4))
@pytest.mark.parametrize("alphabet", ["a85", "b85"])
def test_a_compressed_secret_in_base85_or_ascii85_inside_a_json_record_is_found_at_every_length(
    pad: int, alphabet: str
) -> None:
    """A JSON string's quotes are ascii85 characters: a closing quote read as part of the run spoilt the last
    group of 3 lengths in 4, and the secret inside went through. Every length is searched now, inside JSON
    text and JSON in JSON."""
    from simulator.record.redact import contains_secret, forget_secrets

    secret = "third-secret-8c9d0e1f"
    encode = base64.a85encode if alphabet == "a85" else base64.b85encode
    blob = encode(zlib.compress(b"x" * pad + b"token " + secret.encode())).decode()
    record = {"turns": [{"text": blob}], "note": json.dumps({"inner": blob})}
    forget_secrets()
    try:
        register_secrets([secret])
        for text in (
            json.dumps(record),
            json.dumps(record, separators=(",", ":")),
            json.dumps(json.dumps(record)),
        ):
            assert contains_secret(text), text
        assert blob not in json.dumps(redact(record))
    finally:
        forget_secrets()


@pytest.mark.parametrize("pad", range(5))
@pytest.mark.parametrize("alphabet", ["a85", "b85"])
@pytest.mark.parametrize("compress", ["zlib", "gzip"])
@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")], ids=["compact", "spaced"])
def test_a_compressed_secret_followed_by_another_json_member_is_found(
    pad: int, alphabet: str, compress: str, separators: tuple[str, str]
) -> None:
    """Ascii85's alphabet holds `"`, `,` and `:`: in a record, a run of it reads on into the next member
    (`...C","next":`), which spoils its last group, the compressed stream's checksum, and the secret inside
    went through. The stream's body is read without its trailer now."""
    from simulator.record.redact import contains_secret, forget_secrets

    secret = "fourth-secret-2a3b4c5d"
    encode = base64.a85encode if alphabet == "a85" else base64.b85encode
    packed = zlib.compress if compress == "zlib" else gzip.compress
    blob = encode(packed(b"x" * pad + b"token " + secret.encode())).decode()
    forget_secrets()
    try:
        register_secrets([secret])
        for key in ("t", "reasoning", "a_key_of_twenty_chars"):
            for data in ({key: blob, "next": 1}, {"turns": [{key: blob, "role": "bot"}], "after": 2}):
                text = json.dumps(data, separators=separators)
                assert contains_secret(text), text
                written = json.dumps(redact(json.loads(text)))
                assert blob not in written and REDACTED in written
    finally:
        forget_secrets()
