"""Well-known credential formats (record/redact.py CREDENTIAL_FORMATS) are never written by import or
collect: each becomes a typed placeholder, through the real openai SDK and its OpenTelemetry openai-v2
instrumentation into `simulator collect` (records, spool, every file), and in a unit battery with the
near-misses that must stay as they are (ordinary words, trace ids, talk about passwords)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator.traces.redact import RedactionConfig, Redactor, load_redactor
from tests.collect_helpers import collector, receiver, records, wait_for
from tests.instrumented_app import V2_CONTENT, export_protobuf, run_app
from tests.traces_helpers import every_file_text

# Values in each format, made up for these tests (none is a real credential).
FORMATS: dict[str, tuple[str, str, str]] = {  # id: (what the user says, the secret, what is left)
    "anthropic": (
        "my api key sk-ant-api03-Q2x9Vb7LmN3pR8sT1uW4yZ6aC0dE5fG7hJ9kL2mN4pQ6rS8tU0vW2xY4zA6bC8dE0fG2hJ4-kL6mN8AA ok",
        "Q2x9Vb7LmN3pR8sT1uW4yZ6aC0dE5fG7",
        "my api key [API_KEY] ok",
    ),
    "openai": ("key: sk-proj-abcDEF123ghiJKL456mnoPQR789stuVWX012yz", "abcDEF123ghiJKL456", "key: [API_KEY]"),
    "openai_legacy": ("sk-T3BlbkFJ9aB8cD7eF6gH5iJ4kL3mN2oP1qR0s", "T3BlbkFJ9aB8cD7eF6gH5", "[API_KEY]"),
    "aws_access_key_id": ("id AKIAZ7Q3W5E2R4T6Y7U3 and ASIAQ2W3E4R5T6Y7U2I3", "Z7Q3W5E2R4T6Y7U3", "id [API_KEY] and [API_KEY]"),
    "aws_secret": (
        "aws_secret_access_key = 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",
        "wJalrXUtnFEMI/K7MDENG",
        "aws_secret_access_key = [AWS_SECRET_KEY]",
    ),
    "github": ("token ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R", "1a2B3c4D5e6F7g8H9i0J", "token [API_KEY]"),
    "github_oauth": ("gho_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8N", "Zz9Yy8Xx7Ww6Vv5Uu4Tt3", "[API_KEY]"),
    "github_server": ("ghs_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Y", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7", "[API_KEY]"),
    "github_pat": (
        "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRS",
        "11ABCDEFG0abcdefghijkl",
        "[API_KEY]",
    ),
    "slack": ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "1234567890123-AbCdEf", "slack [API_KEY]"),
    "google": ("AIzaSyD4-x9Qm2Lp7Rt5Vw8Yb1Nc3Fh6Jk0Ms-Tz4 is mine", "SyD4-x9Qm2Lp7Rt5Vw8Yb1", "[API_KEY] is mine"),
    "stripe": ("sk_live_51HxYzAbCdEfGhIjKlMnOp and rk_live_51HxQrStUvWxYz012345", "51HxYzAbCdEfGhIjKlMnOp", "[API_KEY] and [API_KEY]"),
    "jwt": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJwYXRpZW50LTQyIn0.Xk3b9Qm2Lp7Rt5Vw8Yb1Nc3Fh6Jk0Ms",
        "eyJzdWIiOiJwYXRpZW50LTQyIn0",
        "[TOKEN]",
    ),
    "pem": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "[PRIVATE_KEY]",
    ),
    "bearer": ("Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a3928", "Authorization: Bearer [TOKEN]"),
    "password_is": ("my password is hunter2-Secret! thanks", "hunter2-Secret", "my password is [PASSWORD] thanks"),
    "password_was": ("the old password was Tr0ub4dor&3", "Tr0ub4dor", "the old password was [PASSWORD]"),
    "password_colon": ("Password: correcthorsebatterystaple", "correcthorse", "Password: [PASSWORD]"),
    "passwd": ("passwd=s3cr3t!x", "s3cr3t", "passwd=[PASSWORD]"),
}  # fmt: skip

NEAR_MISSES = [
    "a skeleton of a task-based plan, sk-learn and risk-free",
    "trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7",  # hex ids
    "my password is not working, the password is incorrect and your password is too short",
    "reset your password: it is in the email",  # too short to be one
    "ghp_short and xoxb- alone, AKIA is a prefix, AIza too",
    "eyJ is how base64 JSON starts; a.b.c is not a token",
    "the bearer of bad news",
    "-----BEGIN PUBLIC KEY----- is public",
    "sk_live_ alone, the skill-of-the-trade",
]


@pytest.mark.parametrize("case", sorted(FORMATS))
def test_each_format_becomes_its_placeholder(case: str) -> None:
    said, secret, left = FORMATS[case]
    redactor = load_redactor(None)
    assert redactor.text(said) == left
    assert secret not in redactor.text(f'{{"content": "{said}"}}'.replace("\n", "\\n"))  # as JSON holds it


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_stay_as_they_are(text: str) -> None:
    assert load_redactor(None).text(text) == text


def test_credentials_are_removed_even_with_no_redact_or_a_file_that_chooses_only_email() -> None:
    said, secret, _ = FORMATS["anthropic"]
    off = load_redactor(None, enabled=False)
    assert secret not in off.text(said) and off.text("call 07700 900123") == "call 07700 900123"
    only_email = Redactor.from_config(RedactionConfig(patterns=["email"]), [])
    assert secret not in only_email.text(said)
    assert only_email.counts["api_key"] == 1


# ---------------------------------------------------------------------------- through collect, real SDK

_COLLECTED: dict[str, Any] = {}


def _collected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """One app run with the openai-v2 instrumentation (span_only) holding a conversation per format, sent
    by the real OTLP/HTTP protobuf exporter to a collector: once per test process."""
    if not _COLLECTED:
        conversations = {f"conv-{case}": [said] for case, (said, _, _) in FORMATS.items()}
        run = run_app(V2_CONTENT[0], conversations)
        out = tmp_path_factory.mktemp("collect") / "live"
        c = collector(out, idle_s=60)
        with receiver(c, tick_s=0.05) as url:
            export_protobuf(run, url)
            c.assembler.idle_s = 0.0  # every span accepted: the next tick closes every conversation
            wait_for(lambda: len(records(out)) == len(FORMATS))
        _COLLECTED.update(out=out, records=records(out))
    return _COLLECTED["out"], _COLLECTED["records"]


@pytest.mark.parametrize("case", sorted(FORMATS))
def test_collect_never_writes_a_credential_from_a_prompt(
    case: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The user says the credential; the fake model echoes it ("Noted: ..."): neither reaches a record, the
    spool or any other file, and the user's turn keeps the placeholder."""
    out, found = _collected(tmp_path_factory)
    _, secret, left = FORMATS[case]
    (record,) = [r for r in found if r.bot_conversation_id == f"conv-{case}"]
    user = " ".join(p.text for p in record.turns[0].parts if hasattr(p, "text"))
    assert user == left
    assert secret not in every_file_text(out)  # records, spool, journal, manifests
