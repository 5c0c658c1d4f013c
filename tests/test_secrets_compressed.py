"""Issue 43, class 12: a secret is searched for in every encoding a tool can produce, not only the common
ones: base32 (either case) and base85/ascii85 at any alignment, literal `\\uXXXX` escapes (either case, and
as they look inside JSON text), gzip or zlib streams in base64, base64url, base85 or ascii85 (decoded and
searched, then replaced whole), and combinations (a compressed JSON document holding the key escaped). Checked through
`redact`, `contains_secret` and the record writer every file goes through (`dump_line`)."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Iterator

import pytest

from simulator.config.secrets import REDACTED
from simulator.record.folder import dump_line
from simulator.record.redact import contains_secret, forget_secrets, redact, register_secrets
from tests.support.records import bot_said

SECRETS = ["tok-9f8e7d6c5b4a", "EAAGm0PX4ZCpsBAKZB7wa-secret", 'p@ss"w/rd{x}&<y>', "clé-secrète-✓-42"]


def _u(secret: str, upper: bool = False) -> str:
    units = secret.encode("utf-16-be")
    return "".join(
        f"\\u{int.from_bytes(units[i : i + 2], 'big'):04{'X' if upper else 'x'}}"
        for i in range(0, len(units), 2)
    )


def _encodings(secret: str) -> dict[str, str]:
    raw = secret.encode()
    return {
        "base32": base64.b32encode(raw).decode(),
        "base32 lower": base64.b32encode(raw).decode().lower().rstrip("="),
        "base32 inside": base64.b32encode(b"Bearer " + raw + b"; x").decode(),
        "base85": base64.b85encode(b"k:" + raw).decode(),
        "ascii85": base64.a85encode(b"abc" + raw + b"z").decode(),
        "\\u escapes": _u(secret),
        "\\U escapes": _u(secret, upper=True),
        "\\u inside json": json.dumps({"h": _u(secret)}),
        "gzip base64": base64.b64encode(gzip.compress(raw)).decode(),
        "gzip base64url": base64.urlsafe_b64encode(gzip.compress(b"token=" + raw)).decode().rstrip("="),
        "zlib base64": base64.b64encode(zlib.compress(raw)).decode(),
        "gzip of json": base64.b64encode(
            gzip.compress(json.dumps({"authorization": secret}).encode())
        ).decode(),
        "gzip of \\u json": base64.b64encode(
            gzip.compress(json.dumps({"k": secret}, ensure_ascii=True).encode())
        ).decode(),
        "gzip of gzip": base64.b64encode(gzip.compress(base64.b64encode(gzip.compress(raw)))).decode(),
        "gzip of base32": base64.b64encode(gzip.compress(base64.b32encode(raw))).decode(),
        # base85 and ascii85 as a layer: decoded, then inflated and searched like base64's (mtime=0: the
        # same bytes every run)
        "gzip base85": base64.b85encode(gzip.compress(raw, mtime=0)).decode(),
        "gzip ascii85": base64.a85encode(gzip.compress(raw, mtime=0)).decode(),
        "zlib ascii85 adobe": base64.a85encode(
            zlib.compress(b"Authorization: Bearer " + raw), adobe=True
        ).decode(),
        "zlib of hex base85": base64.b85encode(zlib.compress(raw.hex().encode())).decode(),
        "key= gzip base85": "key=" + base64.b85encode(gzip.compress(raw, mtime=0)).decode(),
        "gzip of json ascii85": "k:"
        + base64.a85encode(gzip.compress(json.dumps({"k": secret}).encode(), mtime=0)).decode(),
        "gzip of base64 base85": base64.b85encode(gzip.compress(base64.b64encode(raw), mtime=0)).decode(),
        "base64 of gzip base85": base64.b64encode(base64.b85encode(gzip.compress(raw, mtime=0))).decode(),
    }


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("name", sorted(_encodings("x" * 8)))
def test_every_encoding_is_found_and_replaced(secret: str, name: str) -> None:
    register_secrets([secret])
    encoded = _encodings(secret)[name]
    text = f"echo: [{encoded}] done"
    assert contains_secret(text), name
    out = redact(text)
    assert REDACTED in out and encoded not in out and out.startswith("echo: [")
    line = dump_line(bot_said([f"echo: {encoded}"]))
    assert REDACTED in line and not contains_secret(line), (name, line)


def test_ordinary_compressed_or_encoded_text_is_left_alone() -> None:
    register_secrets(SECRETS)
    other = base64.b64encode(gzip.compress(b"nothing secret here, just a long enough message")).decode()
    text = f"blob {other} and {base64.b32encode(b'an ordinary value').decode()}"
    assert not contains_secret(text) and redact(text) == text


def test_ordinary_base85_and_json_are_left_alone() -> None:
    """Base85 of other bytes, compressed or not, and JSON text (ascii85's alphabet end to end) stay as
    they are: nothing in them decodes to a secret."""
    register_secrets(SECRETS)
    texts = [
        base64.b85encode(gzip.compress(b"an ordinary long enough message, nothing secret", mtime=0)).decode(),
        base64.a85encode(zlib.compress(b"another ordinary message of some length")).decode(),
        base64.b85encode(bytes(range(256))).decode(),
        json.dumps(
            [{"id": i, "name": f"item{i}", "ok": i % 2 == 0} for i in range(50)], separators=(",", ":")
        ),
    ]
    for text in texts:
        assert not contains_secret(text) and redact(text) == text, text[:60]


def test_a_compressed_bomb_is_searched_within_a_bound() -> None:
    register_secrets(SECRETS)
    bomb = gzip.compress(b"\0" * 200_000_000)
    assert not contains_secret(base64.b64encode(bomb).decode())  # inflated only to the bound, never to 200 MB
    assert not contains_secret(base64.b85encode(bomb).decode())
