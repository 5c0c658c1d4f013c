"""A report that leaves the turns in the run folder (record/stored_turns.py) says exactly what one that
holds them says; the turns read again are the validated, sealed turns of the file it loaded."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.errors import UserError
from simulator.record.folder import CONVERSATIONS, MANIFEST
from simulator.record.models import ErrorInfo
from simulator.record.stored_turns import StoredTurns, facts_of_turns, turn_facts
from simulator.record.transcript import Turn, Usage
from simulator.report.html import render_html
from simulator.report.json_report import report_json
from simulator.report.model import ReportOptions, build_report
from tests.test_report_support import make_judged_run, record, verdict, write_run


def _turns(n: int, offset: int, with_usage: bool) -> list[Turn]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    turns = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "bot"
        usage = Usage(input_tokens=10 + i, output_tokens=5, cached_input_tokens=i, calls=1)
        turns.append(
            Turn(
                index=i,
                role=role,
                messages=[f"{role} says {i + offset}"],
                started_at=start + timedelta(seconds=i),
                latency_s=0.1 * (i + 1),
                time_to_first_token_s=0.05 if role == "bot" and i % 4 == 1 else None,
                usage=usage if with_usage else None,
                model=("bot-model" if role == "bot" else "user-model") if i % 3 else None,
            )
        )
    return turns


def _synthetic_run(path: Path) -> Path:
    """Usage and models on some turns, an error, a character break, turns that differ between repeats."""
    records = []
    verdicts = []
    for s, scenario in enumerate(["alpha", "beta", "gamma"]):
        for repeat in range(4):
            fields: dict[str, Any] = {
                "turns": _turns(4 + 2 * (repeat % 2), repeat * s, with_usage=repeat != 3),
                "user_model": "user-default",
                "bot": "chat:bot-default",
                "usage_by_role": {"user": Usage(input_tokens=99, output_tokens=9, calls=3)},
                "tags": [f"tag-{s}"],
            }
            if scenario == "gamma" and repeat == 2:
                fields.update(
                    stop_reason="error", error=ErrorInfo(source="bot", kind="Timeout", message="slow bot")
                )
            if repeat == 1:
                fields["character_breaks"] = ["broke character"]
            rec = record(scenario, repeat, **fields)
            records.append(rec)
            for c in range(3):
                failed = (repeat + c + s) % 3 == 0
                verdicts.append(verdict(rec, f"c{c}", "fail" if failed else "pass", latency_s=0.5))
    return write_run(path, records, verdicts)


def _held_out(run: Path, scenario: str) -> Path:
    """Mark one scenario of a run held out (sealed) in its manifest, as a suite's `split:` would."""
    manifest = json.loads((run / MANIFEST).read_text(encoding="utf-8"))
    for entry in manifest["scenarios"]:
        if entry["id"] == scenario:
            entry["tags"] = [*entry.get("tags", []), "held-out"]
    (run / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stored")
    return {
        "tiny": make_judged_run(root / "tiny", runs=3),
        "synthetic": _synthetic_run(root / "synthetic"),
        "sealed": _held_out(_synthetic_run(root / "sealed"), "beta"),
    }


def _json(run: Path, keep_turns: bool) -> dict[str, Any]:
    options = ReportOptions(target=0.05, transcripts=True, passing_transcripts=None)
    document = report_json(build_report(load_run(run, keep_turns=keep_turns), options), True)
    document.pop("generated_at")
    return document


@pytest.mark.parametrize("name", ["tiny", "synthetic", "sealed"])
def test_the_report_is_the_same_with_the_turns_left_in_the_folder(runs: dict[str, Path], name: str) -> None:
    held, stored = _json(runs[name], True), _json(runs[name], False)
    assert stored == held
    assert len(stored["transcripts"]) == len(load_run(runs[name]).conversations)


@pytest.mark.parametrize("name", ["tiny", "synthetic", "sealed"])
def test_stored_turns_are_the_records_turns_and_their_facts(runs: dict[str, Path], name: str) -> None:
    held = load_run(runs[name]).conversations
    stored = load_run(runs[name], keep_turns=False).conversations
    assert [r.id for r in stored] == [r.id for r in held]
    for a, b in zip(held, stored, strict=True):
        assert isinstance(b.turns, StoredTurns)
        assert turn_facts(b) == facts_of_turns(a.turns) == turn_facts(a)
        assert len(b.turns) == len(a.turns)
        assert list(b.turns) == a.turns and b.turns == a.turns
        assert list(reversed(b.turns)) == a.turns[::-1]
        if a.turns:
            assert b.turns[-1] == a.turns[-1] and b.turns[:2] == a.turns[:2]
        assert b.model_dump(exclude={"turns"}) == a.model_dump(exclude={"turns"})


def test_sealed_turns_stay_sealed_when_read_again(runs: dict[str, Path]) -> None:
    stored = load_run(runs["sealed"], keep_turns=False).conversations
    beta = [r for r in stored if r.scenario_id == "beta"]
    others = [r for r in stored if r.scenario_id != "beta"]
    assert beta and all(m.startswith("[sealed") for r in beta for t in r.turns for m in t.messages)
    assert not any(m.startswith("[sealed") for r in others for t in r.turns for m in t.messages)


def test_stored_turns_read_the_file_they_were_loaded_from(tmp_path: Path) -> None:
    run = _synthetic_run(tmp_path / "run")
    before = {r.id: r.turns for r in load_run(run).conversations}
    loaded = load_run(run, keep_turns=False)
    # A writer replaces the file (write, then rename) after the report loaded it.
    lines = (run / CONVERSATIONS).read_bytes().splitlines(keepends=True)
    replacement = run / "replacement.jsonl"
    replacement.write_bytes(b"".join(reversed(lines)))
    os.replace(replacement, run / CONVERSATIONS)
    assert {r.id: list(r.turns) for r in loaded.conversations} == before


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda line: line[:40] + b"\n", "not a valid ConversationRecord"),
        (lambda line: b"[1, 2]\n", "not a JSON object"),
        (lambda line: line.replace(b'"role":"bot"', b'"role":"robot"', 1), "[turns[2].role]"),
        (lambda line: line.replace(b'"repeat":1', b'"repeat":"one"', 1), "[repeat]"),
    ],
)
def test_a_damaged_line_is_still_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, says: str
) -> None:
    run = _synthetic_run(tmp_path / "run")
    lines = (run / CONVERSATIONS).read_bytes().splitlines(keepends=True)
    lines[1] = damage(lines[1])
    (run / CONVERSATIONS).write_bytes(b"".join(lines))
    with pytest.raises(UserError) as stored:
        load_run(run, keep_turns=False)
    with pytest.raises(UserError) as held:
        load_run(run)
    assert str(stored.value) == str(held.value)  # the same one-line note as a reader holding the turns
    assert f"{CONVERSATIONS}:2" in str(stored.value) and says in str(stored.value)
    assert main(["report", str(run), "--quiet", "--json", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert f"{CONVERSATIONS}:2" in err and says in err and "Traceback" not in err


@pytest.mark.parametrize("escape", ["\\ud800", "\\uDFFF", "\\udbff"])
def test_an_escaped_lone_surrogate_in_a_line_is_still_repaired(tmp_path: Path, escape: str) -> None:
    # Written by another program (simulator never writes one: dump_line repairs first). A line without
    # such an escape skips the repair pass; one with it must still take it, whichever reader reads it.
    run = _synthetic_run(tmp_path / "run")
    lines = (run / CONVERSATIONS).read_bytes().splitlines(keepends=True)
    raw = json.loads(lines[0])
    raw["turns"][0]["parts"][0]["text"] = "user says @ \u00e9"
    raw["schema_version"] = raw.pop("schema_version")  # not the current-version prefix: the JSON path
    lines[0] = json.dumps(raw).replace("@", escape).encode() + b"\n"
    (run / CONVERSATIONS).write_bytes(b"".join(lines))
    for keep_turns in (True, False):
        first = load_run(run, keep_turns=keep_turns).conversations[0]
        assert first.turns[0].messages == ["user says \ufffd \u00e9"] and first.turns[0].text_repaired
        assert not first.turns[1].text_repaired


def test_every_verdict_is_on_the_page_and_plain_ones_share_a_line(runs: dict[str, Path]) -> None:
    report = build_report(
        load_run(runs["synthetic"], keep_turns=False), ReportOptions(passing_transcripts=None)
    )
    page = render_html(report)
    blocks = re.findall(r'<details class="conv" id="t\d+".*?</details>', page)
    assert len(blocks) == len(report.transcripts) == 12
    for block, transcript in zip(blocks, report.transcripts, strict=True):
        for v in transcript.verdicts:
            if v.result == "fail":  # drawn alone: clickable, with its criterion as data
                assert f'<div class="verdict r-fail" data-criterion="{v.criterion_id}">' in block
            else:  # a pass with no reasoning or evidence: named on its result's one line
                line = re.search(r'<div class="verdicts r-pass">.*?</div>', block)
                assert line is not None and v.criterion_id in line.group(0)
        assert 'class="verdict r-pass"' not in block
        assert block.count('<div class="u">') == sum(t.role == "user" for t in transcript.turns)


def test_shared_strings_and_field_sets_change_no_value(runs: dict[str, Path]) -> None:
    from simulator.record.compact import Sharing
    from simulator.record.folder import RunFolder

    folder = RunFolder.open(runs["tiny"])
    plain = list(folder.verdicts())
    shared = list(Sharing(("conversation_id", "criterion_id", "result"))(folder.verdicts()))
    assert [v.model_dump() for v in shared] == [v.model_dump() for v in plain]
    assert [v.model_fields_set for v in shared] == [v.model_fields_set for v in plain]
    same_ids = [v for v in shared if v.conversation_id == shared[0].conversation_id]
    assert len(same_ids) > 1 and all(v.conversation_id is same_ids[0].conversation_id for v in same_ids)
    sets = {id(v.__pydantic_fields_set__) for v in shared}
    assert len(sets) < len({frozenset(v.model_fields_set) for v in plain}) + 1 < len(shared)
    # A copy with an update gets a field set of its own: the shared one is never changed.
    before = [set(v.model_fields_set) for v in shared]
    changed = shared[0].model_copy(update={"score": 0.5})
    assert "score" in changed.model_fields_set
    assert [set(v.model_fields_set) for v in shared] == before


def _part_turn(index: int, role: str, parts: list[dict[str, Any]]) -> Turn:
    return Turn.model_validate(
        {"index": index, "role": role, "parts": parts, "started_at": datetime(2026, 1, 1, tzinfo=UTC)}
    )


def _parts_run(path: Path) -> Path:
    """Conversations with and without speech, refused and accepted tool calls (the bot's and the user's),
    picks and an error of the bot's: what the whole-run passes read of every conversation."""
    from simulator.record.parts import ARGUMENTS_DO_NOT_FIT, NO_SUCH_TOOL

    speech = {"type": "audio", "start_s": 1.0, "end_s": 2.5, "transcript": "my chest hurts"}
    call = {"type": "tool_call", "name": "book", "arguments": {"when": "now"}}
    shapes: list[list[Turn]] = [
        [_part_turn(0, "user", [{"type": "text", "text": "hello"}]), _part_turn(1, "bot", [{"type": "text", "text": "hi there"}])],
        [_part_turn(0, "user", [speech]), _part_turn(1, "bot", [{**speech, "start_s": 3.0, "end_s": 4.0, "transcript": "call 999"}])],
        [_part_turn(0, "user", [{"type": "text", "text": "book me"}]), _part_turn(1, "bot", [{**call, "error": f"{ARGUMENTS_DO_NOT_FIT}: when"}, {"type": "text", "text": "done"}])],
        [_part_turn(0, "user", [{"type": "text", "text": "x"}]), _part_turn(1, "bot", [{**call, "error": f"{NO_SUCH_TOOL} 'book'"}])],
        [_part_turn(0, "user", [{**call, "side": "user", "error": f"{NO_SUCH_TOOL} 'book'"}]), _part_turn(1, "bot", [{**call, "result": "ok"}])],
        [_part_turn(0, "user", [{"type": "pick", "id": "y", "title": "Yes"}]), _part_turn(1, "bot", [{"type": "text", "text": "ok"}, {"type": "text", "text": "and?"}])],
    ]  # fmt: skip
    records = []
    for n, turns in enumerate(shapes):
        fields: dict[str, Any] = {"turns": turns}
        if n == 5:
            fields |= {
                "stop_reason": "error",
                "error": ErrorInfo(source="bot", kind="invalid_reply", message="bad"),
            }
        records.append(record(f"s{n}", 0, **fields))
    return write_run(path, records, [verdict(r, "c0", "pass") for r in records])


def test_whole_run_passes_read_a_line_again_only_when_its_facts_say_they_must(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bot length, bot faults and the call timeline are the same from stored turns as from turns in memory,
    and a conversation whose facts show no speech and no refused call is not read again for them."""
    from simulator.analysis.length_bias import bot_length
    from simulator.record.faults import bot_faults
    from simulator.voice.timeline import timeline_of

    run = _parts_run(tmp_path / "run")
    held = load_run(run).conversations
    stored = load_run(run, keep_turns=False).conversations
    loads: list[str] = []
    real_load = StoredTurns.load

    def counted(self: StoredTurns) -> list[Turn]:
        loads.append(self._record_id)
        return real_load(self)

    monkeypatch.setattr(StoredTurns, "load", counted)
    for a, b in zip(held, stored, strict=True):
        assert bot_length(b.turns) == bot_length(a.turns)
        assert bot_faults(b) == bot_faults(a)
        assert timeline_of(b) == timeline_of(a)
    assert [bot_length(r.turns) for r in held] == [8, 8, 4, 0, 0, 6]
    assert [[f.kind for f in bot_faults(r)] for r in held] == [
        [],
        [],
        ["tool_arguments"],
        ["tool_arguments"],
        [],
        ["invalid_reply"],
    ]
    assert [timeline_of(r).is_call for r in held] == [False, True, False, False, False, False]
    assert sorted(set(loads)) == ["s1#0", "s2#0", "s3#0"]  # speech, the two refused calls of the bot
