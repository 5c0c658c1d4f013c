"""Conformance with the real GenAI instrumentations: the `openai` SDK instrumented by OpenTelemetry's
openai-v2 and by OpenInference, in each of their capture modes, talking to the fake LLM server; what they
emit goes through `simulator import` (OTLP JSON lines, spans and logs) and `simulator collect` (the real
OTLP/HTTP protobuf exporters, and JSON bodies), and must give back the transcript the app held: one turn
per call however many times the call was recorded. Modes that record no content must say which setting,
named as the instrumentation seen takes it."""

from __future__ import annotations

import json
import logging
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from simulator.record.folder import RunFolder
from simulator.record.parts import TextPart, ToolCallPart
from tests.collect_helpers import collector, receiver, records, wait_for
from tests.instrumented_app import (
    CAPTURE,
    CONTENT_MODES,
    NO_CONTENT_MODES,
    AppRun,
    Mode,
    export_protobuf,
    json_bodies,
    json_lines,
    run_app,
)
from tests.traces_helpers import cli

_RUNS: dict[str, AppRun] = {}


def _run(mode: Mode) -> AppRun:
    """Each mode's app is run once per test process; every channel reads the same spans and logs."""
    if mode.id not in _RUNS:
        _RUNS[mode.id] = run_app(mode)
    return _RUNS[mode.id]


def _transcript(record: Any) -> list[tuple[str, str]]:
    return [
        (turn.role, " ".join(p.text for p in turn.parts if isinstance(p, TextPart))) for turn in record.turns
    ]


def _calls(record: Any) -> list[tuple[str, dict[str, Any], Any]]:
    return [
        (p.name, p.arguments, p.result)
        for turn in record.turns
        for p in turn.parts
        if isinstance(p, ToolCallPart)
    ]


def _check_against_reference(found: list[Any], run: AppRun) -> None:
    by_key = {record.bot_conversation_id: record for record in found}
    assert sorted(by_key) == sorted(run.transcripts), by_key.keys()
    for key, reference in run.transcripts.items():
        assert _transcript(by_key[key]) == reference, key  # no turn repeated, none lost
        expected = [
            (name, arguments, f"see a doctor today about {arguments['symptom']}")
            for name, arguments in run.tool_calls[key]
        ]
        assert _calls(by_key[key]) == expected, key
    assert sum(len(r.turns) for r in found) == 12  # 2 conversations of 3 user and 3 bot turns


@pytest.mark.parametrize("mode", CONTENT_MODES, ids=lambda m: m.id)
def test_import_gives_the_reference_transcript(tmp_path: Path, mode: Mode) -> None:
    run = _run(mode)
    source = json_lines(run, tmp_path / "telemetry.jsonl")  # spans, then logs: the file exporters' lines
    assert cli("import", source, "--out", tmp_path / "run") == 0
    _check_against_reference(list(RunFolder.open(tmp_path / "run").conversations()), run)


def _close_now(c: Any) -> None:
    """Every span and log record is accepted (the exporters had their answers): let the next tick close
    every conversation, rather than wait for an idle time a busy machine could overrun between requests."""
    c.assembler.idle_s = 0.0


def _post(url: str, path: str, body: bytes) -> int:
    request = urllib.request.Request(
        url + path, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return int(answer.status)


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("mode", CONTENT_MODES, ids=lambda m: m.id)
def test_collect_gives_the_reference_transcript(tmp_path: Path, mode: Mode, encoding: str) -> None:
    run = _run(mode)
    out = tmp_path / "live"
    c = collector(out, idle_s=60)
    with receiver(c, tick_s=0.05) as url:
        if encoding == "protobuf":
            export_protobuf(run, url)
        else:
            for path, body in json_bodies(run):
                assert _post(url, path, body) == 200
        _close_now(c)
        wait_for(lambda: len(records(out)) == 2)
    _check_against_reference(records(out), run)
    assert c.status()["health"]["quarantined"] == 0


@pytest.mark.parametrize("mode", NO_CONTENT_MODES, ids=lambda m: m.id)
def test_import_of_a_content_less_mode_names_its_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: Mode
) -> None:
    source = json_lines(_run(mode), tmp_path / "telemetry.jsonl")
    assert cli("import", source, "--out", tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "imported 0 conversations" in err
    assert mode.hint in err, err
    if mode.instrumentation == "openai-v2":
        # 2.4b0 takes span_only / event_only / span_and_event: `true` is what made this file content-less.
        assert f"{CAPTURE}=true" not in err and "opentelemetry.util.genai" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("mode", NO_CONTENT_MODES, ids=lambda m: m.id)
def test_collect_says_what_it_skipped_and_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: Mode
) -> None:
    run = _run(mode)
    out = tmp_path / "live"
    c = collector(out, idle_s=60)
    with caplog.at_level(logging.WARNING, logger="simulator.collect"), receiver(c, tick_s=0.05) as url:
        export_protobuf(run, url)
        _close_now(c)
        wait_for(lambda: not c.assembler.open and c.counts["spans"] > 0)
    assert records(out) == []
    said = [r.getMessage() for r in caplog.records if r.name == "simulator.collect"]
    assert said and "not written" in said[0] and mode.hint in said[0], said
    status = c.status()
    assert status["counts"]["skipped_no_content"] == 2  # both conversations, and why
    assert status["skipped"] == {"LLM calls without their messages": 2}


@pytest.mark.parametrize("between", ["", "\n", "\n\n  "])
def test_saved_bodies_concatenated_are_read(tmp_path: Path, between: str) -> None:
    """Two OTLP/JSON request bodies saved as they were sent and joined with `cat` (pretty-printed or not)."""
    from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans

    run = _run(CONTENT_MODES[0])
    half = len(run.spans) // 2
    bodies = [encode_spans(part).to_dict() for part in (run.spans[:half], run.spans[half:])]
    source = tmp_path / "both.json"
    source.write_text(json.dumps(bodies[0], indent=2) + between + json.dumps(bodies[1]))
    assert cli("import", source, "--out", tmp_path / "run") == 0
    _check_against_reference(list(RunFolder.open(tmp_path / "run").conversations()), run)


def test_calls_without_content_beside_others_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with_content = json_lines(_run(CONTENT_MODES[0]), tmp_path / "a.jsonl").read_text()
    without = json_lines(_run(NO_CONTENT_MODES[0]), tmp_path / "b.jsonl").read_text()
    source = tmp_path / "both.jsonl"
    source.write_text(with_content + without)
    assert cli("import", source, "--out", tmp_path / "run") == 0
    err = capsys.readouterr().err
    assert "left out: 8 LLM calls recorded without their messages" in err and f"{CAPTURE}=span_only" in err
    manifest = RunFolder.open(tmp_path / "run").read_manifest()
    assert sum(manifest.source["llm_calls_without_messages"].values()) == 8
