"""A secret is found however a bot rewrote it (the leak probe's forms): any case, reversed, ROT13, fullwidth,
split by zero-width spaces, soft hyphens, other format characters or spaces; base64 broken into lines or
groups, hex with separators, octal escapes, decimal byte lists, UTF-16 in hex or base64; the key without its
well-known prefix; and each half of a key split between two messages. Checked through `redact`,
`contains_secret` and the record writer (`dump_line`), and end to end through a run whose bot echoes them
in its replies, its state, a tool call, a media part and an exception (every file, report and `show`).
Ordinary text (prose, a megabyte of base64, compact JSON, uuids, sha256 digests) is left as it is."""

from __future__ import annotations

import base64
import codecs
import hashlib
import html
import json
import random
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.secrets import REDACTED
from simulator.record.folder import dump_line
from simulator.record.redact import contains_secret, forget_secrets, redact, register_secrets
from simulator.record.secret_variants import FRAGMENT_CHARS
from tests.support.records import bot_said

OPENAI = (
    "sk-proj-XOiHor3zih5vAHOhtKw9wmntZ2M3EZ-RYAEFIzzGM_M7mBs3MdkTO08f2muQlsAhKcMvVB-2p5ZF3py9FPbGhWkLJe8tLzzpQ"
    "zg5EZH-ssB64hBzizShlUcdPbPX_8rHXDPOYo2zw7zHWDhD6_dqFkjPTzHr"
)
ANTHROPIC = "sk-ant-api03-Q5yA4yc2RV1FCyqVYdh1iko3Fn1-EjkH6ZCnnTeqaBPKFkrGHdfZogf8eWhk4rchQyttKh5zH79xG8ogqfAO5ow_kPSIhAA"
TOKEN = "Gri3aX514PLl1uxejrzF8dOXjeGJQWHe"  # a bot's header token: 32 characters, no prefix
SECRETS = {"openai": OPENAI, "anthropic": ANTHROPIC, "header token": TOKEN}
PREFIXES = {"openai": "sk-proj-", "anthropic": "sk-ant-api03-", "header token": ""}


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _joined(separator: str) -> Callable[[str], str]:
    return lambda secret: separator.join(secret)


FORMS: dict[str, Callable[[str], str]] = {
    "upper": str.upper,
    "lower": str.lower,
    "reversed": lambda s: s[::-1],
    "rot13": lambda s: codecs.encode(s, "rot13"),
    "fullwidth": lambda s: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s),
    "zero-width spaces": _joined("\u200b"),
    "soft hyphens": _joined("\u00ad"),
    "word joiners": _joined("\u2060"),
    "byte order marks and zero-width joiners": lambda s: "".join(c + "\ufeff\u200d" for c in s),
    "a space between characters": _joined(" "),
    "base64 in lines (MIME)": lambda s: base64.encodebytes(s.encode()).decode(),
    "base64 in CRLF lines of 20": lambda s: "\r\n".join(textwrap.wrap(_b64(s.encode()), 20)),
    "base64 in groups of 4": lambda s: " ".join(textwrap.wrap(_b64(s.encode()), 4)),
    "hex with colons": lambda s: ":".join(f"{b:02x}" for b in s.encode()),
    "hex with spaces, upper case": lambda s: " ".join(f"{b:02X}" for b in s.encode()),
    "octal escapes": lambda s: "".join(f"\\{b:03o}" for b in s.encode()),
    "decimal bytes with spaces": lambda s: " ".join(str(b) for b in s.encode()),
    "decimal bytes with commas": lambda s: ",".join(str(b) for b in s.encode()),
    "UTF-16LE in hex": lambda s: s.encode("utf-16-le").hex(),
    "UTF-16BE in hex": lambda s: s.encode("utf-16-be").hex(),
    "UTF-16 in base64": lambda s: _b64(s.encode("utf-16-le")),
    "UTF-16 with BOM in base64": lambda s: _b64(s.encode("utf-16")),
}


def _cases() -> list[tuple[str, str, str]]:
    """(secret's name, form's name, text): every form of every secret, each half of each secret alone,
    and each key's body without its prefix."""
    cases = [(name, form, FORMS[form](secret)) for name, secret in SECRETS.items() for form in FORMS]
    # The token's base64 fits one MIME line: plain base64, found before these variants were searched.
    cases.remove(("header token", "base64 in lines (MIME)", FORMS["base64 in lines (MIME)"](TOKEN)))
    for name, secret in SECRETS.items():
        half = len(secret) // 2
        cases += [(name, "first half", secret[:half]), (name, "second half", secret[half:])]
        if PREFIXES[name]:
            cases.append((name, "without its prefix", secret.removeprefix(PREFIXES[name])))
    return cases


CASES = _cases()


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def _shows(text: str, form: str) -> bool:
    """Whether `text` still shows `form`: its middle third (as it is, escaped in JSON or HTML), a piece that
    carries more of the secret than FRAGMENT_CHARS of it."""
    middle = form[len(form) // 3 : 2 * len(form) // 3]
    escaped = {middle, json.dumps(middle)[1:-1], json.dumps(middle, ensure_ascii=False)[1:-1]}
    return any(piece in text for piece in escaped | {html.escape(p) for p in escaped})


@pytest.mark.parametrize(("secret", "form", "text"), CASES, ids=[f"{s}: {f}" for s, f, _ in CASES])
def test_every_form_is_found_and_replaced(secret: str, form: str, text: str) -> None:
    register_secrets(SECRETS.values())
    assert contains_secret(f"echo: {text} done") and contains_secret(json.dumps({"m": text}))
    out = redact(f"echo: {text} done")
    assert REDACTED in out and not _shows(out, text) and not contains_secret(out), out
    assert out.startswith("echo: ") and out.endswith(" done")
    line = dump_line(bot_said(["echo:", text, "done"], {"echo": text, text: 1}))
    assert REDACTED in line and not _shows(line, text) and not contains_secret(line), line


def test_a_key_split_between_two_messages_leaves_neither_half() -> None:
    register_secrets(SECRETS.values())
    for secret in SECRETS.values():
        half = len(secret) // 2
        line = dump_line(bot_said([f"part 1: {secret[:half]}", f"part 2: {secret[half:]}"]))
        parts = [part["text"] for part in json.loads(line)["turns"][0]["parts"]]
        assert parts == [f"part 1: {REDACTED}", f"part 2: {REDACTED}"] or all(
            not _shows(p, secret[:half]) and not _shows(p, secret[half:]) for p in parts
        ), parts


def test_a_list_of_a_secrets_byte_values_is_replaced_whole() -> None:
    register_secrets(SECRETS.values())
    record = bot_said(["nothing here"], {"bytes": list(ANTHROPIC.encode()), "counts": list(range(40))})
    state = json.loads(dump_line(record))["final_state"]
    assert state == {"bytes": REDACTED, "counts": list(range(40))}


def test_a_piece_shorter_than_the_fragment_is_left() -> None:
    """The stated limit: a piece of a key shorter than FRAGMENT_CHARS is no evidence of it."""
    register_secrets([TOKEN])
    piece = TOKEN[3 : 3 + FRAGMENT_CHARS - 1]
    assert not contains_secret(f"echo {piece} done")
    assert redact(f"echo {TOKEN[3 : 3 + FRAGMENT_CHARS]} done") == f"echo {REDACTED} done"


def test_a_short_or_plain_secret_has_no_variants() -> None:
    """A secret too short (or of too few different characters) to tell from ordinary text once case,
    order and separators are folded is searched only as it is (and its encodings)."""
    register_secrets(["Tok-42ab", "Zz" * 40, "my-organisation-name-production"])
    for text in ("TOK-42AB", "ba24-koT", "zZ" * 40, "a " + "z" * 200, "organisation name production"):
        assert not contains_secret(text) and redact(text) == text, text
    assert redact("Tok-42ab") == REDACTED
    assert redact("My organisation name: production") == REDACTED  # the whole value, spelled out


_WORDS = (
    "the patient said that her fever started on 3 March and the pain in her chest goes to the left arm "
    "call 999 now or write to a.b@example.com about tokens keys secrets sk proj ant api"
)


def _prose() -> str:
    words = _WORDS.split()
    pick = random.Random(11).choice
    return " ".join(pick(words) for _ in range(40_000))


ORDINARY = {
    "English prose": _prose(),
    "a 1 MB base64 image": "data:image/png;base64," + _b64(random.Random(3).randbytes(750_000)),
    "compact JSON": json.dumps(
        [{"id": str(uuid.UUID(int=i)), "role": "user", "n": i, "ok": i % 2 == 0} for i in range(5000)],
        separators=(",", ":"),
    ),
    "uuids": " ".join(str(uuid.uuid4()) for _ in range(2000)),
    "sha256 hex digests": "\n".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(2000)),
    "decimal numbers": ",".join(str(random.Random(5).randrange(256)) for _ in range(20_000)),
}


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_ordinary_text_is_left_alone_within_a_bound(name: str) -> None:
    register_secrets(SECRETS.values())
    text = ORDINARY[name]
    start = time.process_time()
    assert not contains_secret(text)
    assert redact(text) == text
    assert time.process_time() - start < 10  # about 0.5 s on a busy two-core machine


BOT = """
import base64, os
from simulator.bots import Reply

MADE = []


class Echo:
    def __init__(self):
        self.turn = 0

    def send(self, text):
        key, token = os.environ["OPENAI_API_KEY"], os.environ["SECRET_FORMS_TOKEN"]
        half = len(key) // 2
        self.turn += 1
        if self.turn == 1:
            return Reply([key[::-1], key.upper(), "\\u200b".join(token), f"one: {key[:half]}"])
        return Reply(
            parts=[
                f"two: {key[half:]}",
                base64.encodebytes(token.encode()).decode(),
                {"type": "tool_call", "name": "send", "arguments": {"k": token[::-1], "rest": key[8:]}, "id": "c1"},
                {"type": "media", "kind": "image", "caption": "cap " + key.lower(), "ref": "https://x.example/?t=" + token.upper()},
            ],
            closed=True,
            state={"triage_level": "emergency", "leak": " ".join(token), token[::-1]: 1},
        )


class Crash:
    def send(self, text):
        key = os.environ["ANTHROPIC_API_KEY"]
        raise RuntimeError("boom " + key[::-1] + " " + "\\u00ad".join(key.upper()))


def make():
    MADE.append(1)
    return Echo() if len(MADE) % 2 else Crash()
"""


def test_a_run_whose_bot_echoes_the_forms_writes_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC)
    monkeypatch.setenv("SECRET_FORMS_TOKEN", TOKEN)
    (tmp_path / "secret_forms_bot.py").write_text(BOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "chest.yaml").write_text(
        "id: chest-1\npersona: a man of 52.\ngoal: Ask about chest pain.\nfacts: [Pressure in the chest.]\n"
        "expected: {triage_level: emergency}\n"
    )
    (folder / "suite.yaml").write_text(
        "name: forms\nscenarios: {paths: ['.']}\nbot: {type: python, factory: 'secret_forms_bot:make'}\n"
        "user: {model: offline}\nruns: 2\nconcurrency: 1\n"
        "providers: {openai: {api_key_env: SECRET_FORMS_TOKEN}}\n"  # the token is a declared secret
        "outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}\n"
    )
    out, reports = tmp_path / "run", tmp_path / "reports"
    reports.mkdir()
    main(["run", str(folder / "suite.yaml"), "--out", str(out), "--no-progress"])
    assert main(
        ["report", str(out), "--html", str(reports / "r.html"), "--json", str(reports / "r.json")]
    ) in (0, 1)
    main(["show", str(out)])
    main(["show", str(out), "--raw"])
    lines = (out / "conversations.jsonl").read_text()
    assert lines.count(REDACTED) >= 10 and "boom" in lines  # the echo and the exception were recorded
    printed = capsys.readouterr()
    written = [
        p.read_bytes().decode("utf-8", "replace") for d in (out, reports) for p in d.rglob("*") if p.is_file()
    ]
    token_forms = [TOKEN[::-1], "\u200b".join(TOKEN), " ".join(TOKEN), TOKEN.upper(), TOKEN]
    key_forms = [OPENAI[::-1], OPENAI.upper(), OPENAI.lower(), OPENAI[8:], OPENAI[: len(OPENAI) // 2]]
    key_forms += [OPENAI[len(OPENAI) // 2 :], ANTHROPIC[::-1], "\u00ad".join(ANTHROPIC.upper())]
    for text in (*written, printed.out, printed.err):
        for form in (*token_forms, *key_forms, _b64(TOKEN.encode())):
            assert not _shows(text, form), form
