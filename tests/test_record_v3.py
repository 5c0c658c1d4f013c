"""A run folder written by schema version 3 (an environment suite: tool calls, environment state, tool and
environment checks) reads under version 4 as it was written, and its report keeps every figure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from simulator.analysis.rundata import load_run
from simulator.record.folder import RunFolder
from simulator.record.models import SCHEMA_VERSION
from simulator.record.parts import ToolCallPart
from simulator.report.model import build_report

DATA = Path(__file__).resolve().parent / "data" / "runs"


def _copy(tmp_path: Path) -> Path:
    run = tmp_path / "v3"
    shutil.copytree(DATA / "v3-environment", run)
    return run


def test_a_v3_folder_reads_with_its_tool_calls_and_environment_state(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    raw = [json.loads(line) for line in (run / "conversations.jsonl").read_text().splitlines()]
    assert SCHEMA_VERSION == 4 and {r["schema_version"] for r in raw} == {3}
    records = {r.id: r for r in RunFolder.open(run).conversations()}
    assert len(records) == len(raw) == 12
    for old in raw:
        new = records[old["id"]]
        assert new.environment_state == old.get("environment_state")
        calls = [p for t in new.turns for p in t.parts if isinstance(p, ToolCallPart)]
        wanted = [p for t in old["turns"] for p in t["parts"] if p["type"] == "tool_call"]
        assert [(c.name, c.arguments, c.result, c.error) for c in calls] == [
            (p["name"], p.get("arguments", {}), p.get("result"), p.get("error")) for p in wanted
        ]
    assert (
        sum(1 for r in records.values() for t in r.turns for p in t.parts if isinstance(p, ToolCallPart)) > 20
    )
    # The files are read, never rewritten.
    assert [json.loads(line) for line in (run / "conversations.jsonl").read_text().splitlines()] == raw


def test_v3_code_verdicts_get_decided_by_code_from_their_structure(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    raw = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    unset = {(v["category"], v.get("decided_by")) for v in raw if v["kind"] == "code"}
    assert ("tool", None) in unset and ("environment", None) in unset  # what version 3 wrote
    verdicts = list(RunFolder.open(run).verdicts())
    assert len(verdicts) == len(raw)
    assert {v.decided_by for v in verdicts if v.kind == "code"} == {"code"}


def test_a_v3_folder_reports_every_figure_it_reported(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    before = json.loads((DATA / "v3-environment.report.json").read_text())
    after = json.loads(build_report(load_run(run)).model_dump_json())
    assert after["overall"]["k"] == before["overall"]["k"] and after["overall"]["n"] == before["overall"]["n"]
    assert [(c["id"], c["counts"]) for c in after["criteria"]] == [
        (c["id"], c["counts"]) for c in before["criteria"]
    ]
    assert [(s["id"], s["statuses"], s["counts"]) for s in after["scenarios"]] == [
        (s["id"], s["statuses"], s["counts"]) for s in before["scenarios"]
    ]
