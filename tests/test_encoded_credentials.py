"""A credential the engine was never configured with, of a well-known format, is found inside base64,
base64url and hex as well as written plainly (record/redact.py `_encoded_credentials`): a run whose first
bytes decode to text is decoded and searched as plain text is, and replaced whole by the placeholder of the
credential it holds. Hashes, ids, images and base64 of ordinary text decode to no credential and are left as
they are."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
from collections.abc import Callable

import pytest

from simulator.record.folder import dump_line
from simulator.record.redact import CredentialTally, LogRedactor, contains_secret, redact, register_secrets
from tests.support.records import bot_said

# Made up for these tests (none is a real credential): what a config or header holds, and its placeholder.
CREDENTIALS: dict[str, tuple[str, str]] = {
    "anthropic": ("ANTHROPIC_API_KEY=sk-ant-api03-Q2x9Vb7LmN3pR8sT1uW4yZ6aC0dE5fG7hJ9kL2mN4pQ6rS8tU0vW2xY4zA6bC8-AA", "[API_KEY]"),
    "openai": ('{"key": "sk-proj-abcDEF123ghiJKL456mnoPQR789stuVWX012yz"}', "[API_KEY]"),
    "aws": ("aws_access_key_id = AKIAZ7Q3W5E2R4T6Y7U3", "[API_KEY]"),
    "github": ("user:ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R", "[API_KEY]"),
    "slack": ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "[API_KEY]"),
    "jwt": (
        "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJwYXRpZW50LTQyIn0.Xk3b9Qm2Lp7Rt5Vw8Yb1Nc3Fh6Jk0Ms",
        "[TOKEN]",
    ),
    "password": ("db: {host: x, password: Tr0ub4dor-and-3}", "[PASSWORD]"),
}  # fmt: skip
ENCODINGS: dict[str, Callable[[bytes], str]] = {
    "base64": lambda raw: base64.b64encode(raw).decode(),
    "base64url": lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("="),
    "hex": lambda raw: raw.hex(),
    "HEX": lambda raw: raw.hex().upper(),
    "base64 of hex": lambda raw: base64.b64encode(raw.hex().encode()).decode(),
}
_RANDOM = random.Random(7)
INNOCENT = {
    "png": "data:image/png;base64,"
    + base64.b64encode(b"\x89PNG\r\n\x1a\n" + _RANDOM.randbytes(3000)).decode(),
    "gzip": base64.b64encode(gzip.compress(_RANDOM.randbytes(500))).decode(),
    "uuid": "conversation 3f2a5c1e-8b7d-4e6f-9a0b-1c2d3e4f5a6b",
    "digest": "judge set sha256:" + hashlib.sha256(b"judges").hexdigest(),
    "sha1": hashlib.sha1(b"x").hexdigest().upper(),
    "odd hex": hashlib.sha256(b"y").hexdigest()[:33],  # a probe at either alignment is whole bytes
    "text": base64.b64encode(b"The pain started yesterday evening and spreads to the jaw.").decode(),
    "talk about passwords": base64.b64encode(b"my password is not working, reset it please").decode(),
    "hex text": b"nothing secret in this sentence at all".hex(),
    "base64url id": base64.urlsafe_b64encode(_RANDOM.randbytes(48)).decode(),
    "scenario id": "chest-pain-radiating-to-the-jaw-elderly-02",
}


def _said(line: str) -> list[str]:
    """The bot's messages in a record line as written."""
    return [part["text"] for part in json.loads(line)["turns"][0]["parts"]]


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("case", sorted(CREDENTIALS))
def test_an_encoded_credential_is_replaced_whole(case: str, encoding: str) -> None:
    plain, placeholder = CREDENTIALS[case]
    for prefix in ("", "=", ": "):  # the credential at each alignment of the encoding
        blob = ENCODINGS[encoding]((prefix + plain).encode())
        said = f"the config is {blob} (encoded)"
        assert contains_secret(said), (prefix, blob)
        assert redact(said) == f"the config is {placeholder} (encoded)"
        assert redact(redact(said)) == redact(said)


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_a_record_line_and_a_log_line_hold_no_encoded_credential(encoding: str) -> None:
    blob = ENCODINGS[encoding](CREDENTIALS["openai"][0].encode())
    line = dump_line(bot_said([f"here: {blob}", json.dumps({"headers": {"x": blob}})]))
    assert blob not in line and "[API_KEY]" in line
    assert _said(line)[0] == "here: [API_KEY]"
    assert LogRedactor().line(f"GET /?cfg={blob} 200") == "GET /?cfg=[API_KEY] 200"


def test_a_credential_plain_and_encoded_is_counted_once() -> None:
    key = CREDENTIALS["aws"][0]
    tally = CredentialTally()
    said = redact(f"{key} then {base64.b64encode(key.encode()).decode()} then {key.encode().hex()}")
    assert said == "aws_access_key_id = [API_KEY] then [API_KEY] then [API_KEY]"
    assert tally.counts() == {"api_key": 1}


def test_an_encoded_credential_is_found_with_configured_secrets_too() -> None:
    register_secrets(["a-configured-secret-1234"])
    blob = base64.b64encode(CREDENTIALS["github"][0].encode()).decode()
    assert redact(f"token {blob}") == "token [API_KEY]"


@pytest.mark.parametrize("case", sorted(INNOCENT))
def test_an_innocent_blob_is_left_as_it_is(case: str) -> None:
    text = INNOCENT[case]
    assert not contains_secret(text)
    assert redact(text) == text
    line = dump_line(bot_said([text]))
    assert _said(line) == [text]
