"""Conversation and user ids that redaction would change keep apart under a keyed pseudonym, in `collect`
(real OTel SDK exporter) and in `import`: distinct ids never merge into one conversation or one user,
equal ids stay equal (across a collector's restart, and across imports sharing a key), and the original
id is written nowhere. The class: every built-in pattern and a user's own, in several id shapes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from simulator.traces.pseudonym import Pseudonyms, load_key
from simulator.traces.redact import Redactor, load_redactor
from tests.collect_helpers import collector, genai_turns, receiver, records, tracer, wait_for
from tests.traces_helpers import cli, every_file_text, require

# Pairs of distinct ids that redaction turns into one text each: phone-shaped digit runs, emails, NHS
# numbers, dates, SSN-shaped numbers, and mixtures inside longer ids.
ALIKE = [
    ("steady-100000", "steady-100001"),
    ("+44 7700 900123", "+44 7700 900456"),
    ("jane.doe@example.org", "john.doe@example.org"),
    ("nhs-943 476 5919", "nhs-401 023 2137"),
    ("visit-2024-03-01", "visit-2024-03-02"),
    ("case 123-45-6789", "case 987-65-4321"),
    ("sess:07700900123:web", "sess:07700900124:web"),
]
PLAIN = ["conv-1", "a1b2c3", "triage/session/abc", "4bf92f35"]


def _pseudonyms(key: bytes = b"k" * 32) -> Pseudonyms:
    return Pseudonyms(load_redactor(None), key)


@pytest.mark.parametrize(("first", "second"), ALIKE)
def test_ids_redaction_would_merge_stay_distinct_and_hide_the_original(first: str, second: str) -> None:
    redactor = load_redactor(None)
    assert redactor.text(first) == redactor.text(second)  # the defect: both become one placeholder text
    p = _pseudonyms()
    one, two = p.of(first), p.of(second)
    assert one != two
    assert p.of(first) == one  # stable
    assert one.startswith(redactor.text(first) + "~")  # still says what kind of id it was
    digits = "".join(c for c in first if c.isdigit())
    assert first not in one and (len(digits) < 6 or digits not in one.replace("-", ""))


def test_the_key_decides_the_pseudonym_so_a_guessable_id_cannot_be_reversed_without_it() -> None:
    assert _pseudonyms(b"a" * 32).of("07700900123") != _pseudonyms(b"b" * 32).of("07700900123")


@pytest.mark.parametrize("plain", PLAIN)
def test_ids_redaction_leaves_alone_are_kept_as_they_are(plain: str) -> None:
    assert _pseudonyms().of(plain) == plain


def test_a_users_own_pattern_and_names_are_pseudonymised_too() -> None:
    redactor = Redactor([("member", r"MBR\d+"), ("name", r"(?i:\bjane\b)")], [])
    p = Pseudonyms(redactor, b"k" * 32)
    ids = ["MBR001", "MBR002", "jane-1", "Jane-1"]
    out = [p.of(i) for i in ids]
    assert len(set(out)) == 4 and all("MBR0" not in o and "jane" not in o.lower() for o in out)


def test_identifier_attributes_of_any_type_are_pseudonymised_others_redacted() -> None:
    p = _pseudonyms()
    attrs = {
        "gen_ai.conversation.id": "steady-100000",
        "user.id": 447700900123,  # a number: pseudonymised as text, never written as it was
        "enduser.id": "anon-7",
        "session.id": 12,  # a number redaction leaves alone keeps its type
        "note": "call me on 07700 900123",
        "flag": True,
    }
    out = p.attributes_of(attrs)
    assert out["gen_ai.conversation.id"].startswith("steady-[PHONE]~")
    assert isinstance(out["user.id"], str) and "447700900123" not in out["user.id"]
    assert out["enduser.id"] == "anon-7" and out["session.id"] == 12 and out["flag"] is True
    assert out["note"] == "call me on [PHONE]"


def test_the_collector_keeps_conversations_and_users_apart_and_its_key_outlives_a_restart(
    tmp_path: Path,
) -> None:
    out = tmp_path / "live"
    ids = [a for pair in ALIKE[:5] for a in pair]  # ten ids, five placeholder texts
    c = collector(out)
    with receiver(c) as url:
        provider = tracer(url, gzip=True)
        for n, key in enumerate(ids):
            genai_turns(provider, key, [(f"question {n}", f"answer {n}")], **{"user.id": f"0770090{n:04d}"})
        provider.shutdown()
        wait_for(lambda: c.counts["conversations"] == len(ids))
    found = records(out)
    assert len(found) == len(ids)  # before the fix: five conversations of two merged transcripts each
    assert sorted(len(r.turns) for r in found) == [2] * len(ids)
    answers = {r.turns[1].messages[0]: r.bot_conversation_id for r in found}
    assert len(set(answers.values())) == len(ids)
    written = every_file_text(out)
    for original in ids:
        assert original not in written
    signals = [
        json.loads(line)
        for folder in out.iterdir()
        if folder.is_dir() and (folder / "signals.jsonl").exists()
        for line in (folder / "signals.jsonl").read_text().splitlines()
    ]
    users = [s["user"] for s in signals]
    assert len(users) == len(ids) and len(set(users)) == len(ids)  # ten users, not one "[PHONE]"
    key_file = out / ".collect" / "pseudonym.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_bytes()
    assert key.hex() not in written and key not in written.encode("utf-8", "surrogateescape")

    again = collector(out)  # a restart reads the same key: the same id gets the same pseudonym
    assert again.pseudonyms.of(ids[0]) == Pseudonyms(load_redactor(None), key).of(ids[0])
    assert again.pseudonyms.of(ids[0]) in answers.values()


def _otlp_file(path: Path, ids: list[str]) -> Path:
    require("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from simulator.traces.otlp_json import spans_to_json

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for n, key in enumerate(ids):
        genai_turns(provider, key, [(f"question {n}", f"answer {n}")])
    path.write_text(json.dumps(spans_to_json(memory.get_finished_spans())))
    return path


def _keys(folder: Path) -> list[str]:
    from simulator.record.folder import RunFolder

    return sorted(str(r.bot_conversation_id) for r in RunFolder.open(folder).conversations())


def test_import_gives_each_id_its_own_conversation_and_a_shared_key_gives_the_same_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = [a for pair in ALIKE for a in pair] + PLAIN
    source = _otlp_file(tmp_path / "traces.json", ids)
    key = tmp_path / "pseudonym.key"
    load_key(key, create=True)
    folders = []
    for n, extra in enumerate([["--pseudonym-key", key], ["--pseudonym-key", key], []]):
        folders.append(tmp_path / f"run{n}")
        assert cli("import", source, "--out", folders[-1], *extra) == 0
    first, second, fresh = (_keys(f) for f in folders)
    assert len(set(first)) == len(ids)
    assert first == second  # one key, one set of ids: labels and comparisons line up
    assert first != fresh and set(PLAIN) <= set(fresh) & set(first)  # a fresh key: other pseudonyms
    for folder in folders:
        written = every_file_text(folder)
        assert not [i for i, _ in ALIKE if i in written]
    assert "steady-100000" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: None, "--pseudonym-key {p}: no such file"),
        (lambda p: p.write_bytes(b"short"), "holds 5 bytes, too short"),
        (lambda p: p.mkdir(), "a folder"),
        (lambda p: os.mkfifo(p), "named pipe"),
        (lambda p: p.write_bytes(b"x" * 10_000), "larger than"),
    ],
)
def test_a_bad_key_file_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, says: str
) -> None:
    source = _otlp_file(tmp_path / "traces.json", ["steady-100000"])
    key = tmp_path / "the.key"
    make(key)  # type: ignore[operator]
    assert cli("import", source, "--out", tmp_path / "run", "--pseudonym-key", key) == 2
    err = capsys.readouterr().err
    assert says.format(p=key) in err and str(key) in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
