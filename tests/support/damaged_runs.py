"""Synthetic runs as real runs leave them (each scenario's expected level in the manifest), then damaged as a
crash or a bad copy damages them: interrupted, conversations or verdict lines lost, a last line torn."""

from __future__ import annotations

import json
from pathlib import Path

from simulator.record.folder import RunFolder, dump_line
from tests.test_report_support import verdict


def as_recorded(run: Path, expected: str = "emergency") -> Path:
    """The manifest lists each scenario's expected level, as `simulator run` writes it."""
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["scenarios"]:
        entry["expected"] = {"triage_level": expected}
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return run


def add_rows(run: Path, criterion: str, result: str, reasoning: str = "") -> Path:
    """One `kind: llm` verdict row of `criterion` for every conversation (`not_judged`: no judge ran)."""
    records = list(RunFolder.open(run).conversations())
    rows = [verdict(r, criterion, result, reasoning=reasoning) for r in records]
    with (run / "verdicts.jsonl").open("a", encoding="utf-8") as handle:
        handle.writelines(dump_line(row) for row in rows)
    return run


def interrupt(run: Path, drop: int, status: str = "interrupted") -> Path:
    """The last `drop` conversations (and their verdicts) never recorded; the manifest keeps its plan."""
    lines = (run / "conversations.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    gone = {json.loads(line)["id"] for line in lines[len(lines) - drop :]}
    (run / "conversations.jsonl").write_text("".join(lines[: len(lines) - drop]), encoding="utf-8")
    keep = [
        line
        for line in (run / "verdicts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        if json.loads(line)["conversation_id"] not in gone
    ]
    (run / "verdicts.jsonl").write_text("".join(keep), encoding="utf-8")
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["status"] = status
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return run


def cut_verdicts(run: Path, keep_lines: int, torn: bool) -> Path:
    """verdicts.jsonl cut after `keep_lines` whole lines, and, when `torn`, half of the next one."""
    lines = (run / "verdicts.jsonl").read_bytes().splitlines(keepends=True)
    tail = lines[keep_lines][: len(lines[keep_lines]) // 2] if torn else b""
    (run / "verdicts.jsonl").write_bytes(b"".join(lines[:keep_lines]) + tail)
    return run
