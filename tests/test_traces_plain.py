"""Plain transcripts (JSONL both shapes, CSV, a mapping file), malformed records, and redaction: nothing
redacted reaches disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.record.folder import RunFolder
from simulator.traces.redact import load_redactor
from tests.traces_helpers import EXAMPLES, cli, every_file_text


def _turns(folder: Path) -> dict[str, list[tuple[str, list[str]]]]:
    return {
        r.scenario_id: [(t.role, t.messages) for t in r.turns] for r in RunFolder.open(folder).conversations()
    }


def test_one_conversation_per_line_with_expected_and_final_state(tmp_path: Path) -> None:
    assert cli("import", EXAMPLES / "transcripts.jsonl", "--out", tmp_path / "run") == 0
    folder = RunFolder.open(tmp_path / "run")
    records = {r.scenario_id: r for r in folder.conversations()}
    assert len(records) == 10
    assert records["real-002"].final_state == {"triage_level": "urgent"}
    assert folder.read_manifest().scenario("real-002").expected == {"triage_level": "emergency"}
    assert [t.role for t in records["real-008"].turns] == ["user", "bot"] * 3


def test_one_message_per_line_and_csv_with_a_mapping(tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(
        "conversation: thread\nrole: speaker\ntext: body\ntime: at\n"
        "roles: {user: [caller], assistant: [nurse-bot]}\nexpected: {triage_level: label}\n"
    )
    rows = [
        ("t1", "caller", "my knee hurts", "2026-01-01T10:00:00Z", ""),
        ("t2", "caller", "i feel dizzy", "2026-01-01T09:00:00Z", "gp"),
        ("t1", "nurse-bot", "since when?", "2026-01-01T10:01:00Z", "self_care"),
        ("t2", "nurse-bot", "are you sitting down?", "2026-01-01T09:01:00Z", ""),
    ]
    jsonl = tmp_path / "messages.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps(dict(zip(["thread", "speaker", "body", "at", "label"], r, strict=True))) + "\n"
            for r in rows
        )
    )
    csv_file = tmp_path / "messages.csv"
    csv_file.write_text("thread,speaker,body,at,label\n" + "".join(",".join(r) + "\n" for r in rows))
    expected = {
        "t1": [("user", ["my knee hurts"]), ("bot", ["since when?"])],
        "t2": [("user", ["i feel dizzy"]), ("bot", ["are you sitting down?"])],
    }
    for source, name in ((jsonl, "a"), (csv_file, "b")):
        assert cli("import", source, "--mapping", mapping, "--out", tmp_path / name) == 0
        assert _turns(tmp_path / name) == expected
        manifest = RunFolder.open(tmp_path / name).read_manifest()
        assert manifest.scenario("t2").expected == {"triage_level": "gp"}
    assert RunFolder.open(tmp_path / "b").read_manifest().source["format"] == "csv"


def test_malformed_records_are_reported_with_line_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {
        "conversation_id": "ok",
        "messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "hello"}],
    }
    lines = [
        json.dumps(good),
        "{broken",
        json.dumps({"conversation_id": "r", "messages": [{"role": "alien", "content": "x"}]}),
        json.dumps(
            {"conversation_id": "t", "messages": [{"role": "user", "content": "x", "timestamp": "yesterday"}]}
        ),
        json.dumps({"role": "user", "content": "no conversation id"}),
        json.dumps(
            {"conversation_id": "only-user", "messages": [{"role": "user", "content": "anyone there?"}]}
        ),
        json.dumps(["not", "an", "object"]),
    ]
    source = tmp_path / "t.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert cli("import", source, "--out", tmp_path / "run") == 0
    err = capsys.readouterr()
    for line, reason in [
        (2, "not JSON"),
        (3, "messages[0]: field 'role' is missing or not a known role"),
        (4, "messages[0]: 'yesterday' is not a time"),
        (5, "field 'conversation_id' (the conversation id) is missing"),
        (6, "conversation 'only-user' skipped: no user message or no assistant message"),
        (7, "not a JSON object"),
    ]:
        assert f"{source}:{line}: {reason}" in err.err
    assert (
        "imported 1 conversation (2 turns) from 7 jsonl records; skipped 5 malformed records and 1 conversation"
        in err.out
    )
    manifest = RunFolder.open(tmp_path / "run").read_manifest()
    assert manifest.counts.conversations == 1 and len(manifest.source["problems"]) == 6


def test_a_csv_row_with_too_many_cells_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "t.csv"
    source.write_text(
        "conversation_id,role,content\nc1,user,hello\nc1,assistant,hi,extra\nc1,assistant,how can I help\n"
    )
    assert cli("import", source, "--out", tmp_path / "run") == 0
    assert f"{source}:3: more cells than header columns" in capsys.readouterr().err
    assert _turns(tmp_path / "run") == {"c1": [("user", ["hello"]), ("bot", ["how can I help"])]}


def test_a_bad_mapping_file_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mapping = tmp_path / "m.yaml"
    mapping.write_text("conversation: id\nspeaker: role\n")
    assert cli("import", EXAMPLES / "transcripts.jsonl", "--mapping", mapping, "--out", tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "m.yaml:2" in err and "speaker" in err
    assert not (tmp_path / "run").exists()


SECRETS = {
    "email": "jane.doe@example.org",
    "phone": "+44 7700 900123",
    "nhs_number": "943 476 5919",  # passes the modulus-11 check
    "ssn": "123-45-6789",
    "date": "12/03/1971",
    "name": "Priya Patel",
}


def test_nothing_redacted_reaches_disk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    redact = tmp_path / "redact.yaml"
    (tmp_path / "names.txt").write_text("Priya Patel\nOmar Haddad\n")
    redact.write_text("names_file: names.txt\ncustom: {hospital_id: 'HOSP-\\d{6}'}\n")
    message = (
        f"I am {SECRETS['name']}, born {SECRETS['date']}, NHS number {SECRETS['nhs_number']}, "
        f"SSN {SECRETS['ssn']}, call {SECRETS['phone']} or mail {SECRETS['email']}; ref HOSP-123456"
    )
    record = {
        "conversation_id": SECRETS["email"],  # ids can hold personal data too
        "messages": [
            {"role": "system", "content": f"The patient is {SECRETS['name']}"},
            {"role": "user", "content": message},
            {
                "role": "assistant",
                "content": f"Thanks {SECRETS['name'].split()[0]} Patel, noted {SECRETS['phone']}.",
            },
        ],
        "final_state": {"callback": SECRETS["phone"]},
        "expected": {"note": SECRETS["email"]},
        "tags": [SECRETS["name"]],
    }
    source = tmp_path / "t.jsonl"
    source.write_text(json.dumps(record) + "\n" + "{bad line with " + SECRETS["email"] + "\n")
    assert cli("import", source, "--redact", redact, "--out", tmp_path / "run") == 0
    out = capsys.readouterr()
    written = every_file_text(tmp_path / "run")
    for secret in [*SECRETS.values(), "HOSP-123456", "Priya"]:
        assert secret not in written, secret
        assert secret not in out.out + out.err, secret
    assert "[NHS_NUMBER]" in written and "[HOSPITAL_ID]" in written and "[DATE]" in written
    counts = RunFolder.open(tmp_path / "run").read_manifest().source["redacted"]
    assert counts["name"] >= 3 and counts["nhs_number"] == 1 and counts["ssn"] == 1 and counts["email"] >= 2


@pytest.mark.parametrize(
    "text, label",
    [
        ("ring 07700 900123", "PHONE"),
        ("ring (555) 123-4567", "PHONE"),
        ("NHS 4010232137", "NHS_NUMBER"),
        ("SSN 078-05-1120", "SSN"),
        ("born 1971-03-12", "DATE"),
        ("born 3 March 1971", "DATE"),
        ("born March 3rd, 1971", "DATE"),
        ("a.b+c@mail.example.co.uk", "EMAIL"),
    ],
)
def test_builtin_patterns(text: str, label: str) -> None:
    redactor = load_redactor(None)
    assert f"[{label}]" in redactor.text(text)
    assert redactor.counts[label.lower()] == 1


def test_clinical_numbers_are_not_redacted() -> None:
    text = "temperature 38.5, blood pressure 120/80, 20 a day for 30 years, 2 tablets"
    assert load_redactor(None).text(text) == text
