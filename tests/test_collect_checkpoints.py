"""The current folder's manifest is written when it changed, at most every `MANIFEST_EVERY_S` seconds
(collect/folders.py): it lists every conversation of the folder, and was rewritten at every tick of the
close loop, busy or idle (~40 ms a second at 5,000 conversations). Nothing is lost between two writes: a
folder finished or a collector stopped writes it at once, and a restart rebuilds it from the records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.collect.folders import MANIFEST_EVERY_S, Roll, collected_folders
from simulator.record.folder import RunFolder
from tests.collect_helpers import collector, records


def _document(key: str, number: int) -> dict[str, Any]:
    """One conversation of one LLM call, as an OTLP JSON export request."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.conversation.id": key,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "how can I help?"}]}]
        ),
    }
    span = {
        "traceId": f"{number + 1:032x}",
        "spanId": f"{number + 1:016x}",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + number),
        "endTimeUnixNano": str(1_700_000_000_500_000_000 + number),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def _writes(folder: Path) -> str:
    """When the manifest was last written, as it says (each write stamps its session's checkpoint)."""
    return str(json.loads((folder / "manifest.json").read_text())["sessions"][-1]["checkpoint_at"])


@pytest.mark.parametrize("idle_ticks", [1, 5, 30])
def test_an_idle_collector_does_not_rewrite_the_manifest(tmp_path: Path, idle_ticks: int) -> None:
    out = tmp_path / "live"
    c = collector(out, idle_s=1.0)
    c.start()
    c.accept(_document("conv-a", 0), now=0.0)
    c.tick(now=10.0)  # closed and written, the manifest with it
    (folder,) = collected_folders(out)
    written = _writes(folder)
    assert [e.id for e in RunFolder.open(folder).read_manifest().scenarios] == ["conv-a"]
    for tick in range(idle_ticks):  # nothing arrives: the figures do not change
        c.tick(now=20.0 + MANIFEST_EVERY_S * (tick + 1))
    assert _writes(folder) == written
    c.stop()


@pytest.mark.parametrize("seconds_between", [0.5, 1.0, 2.0])
def test_a_busy_collector_writes_the_manifest_at_most_every_few_seconds(
    tmp_path: Path, seconds_between: float
) -> None:
    out = tmp_path / "live"
    c = collector(out, idle_s=0.1)
    c.start()
    seen, now = set(), 100.0
    for number in range(40):  # a conversation closes at every tick
        c.accept(_document(f"conv-{number}", number), now=now)
        now += seconds_between
        c.tick(now=now)
        seen.add(_writes(collected_folders(out)[0]))
    elapsed = 40 * seconds_between
    assert 2 <= len(seen) <= elapsed / MANIFEST_EVERY_S + 2
    c.stop()
    manifest = RunFolder.open(collected_folders(out)[0]).read_manifest()
    assert len(manifest.scenarios) == manifest.counts.conversations == 40  # all of them once stopped
    assert (
        manifest.status == "interrupted" and manifest.source["collected_since_start"]["conversations"] == 40
    )


@pytest.mark.parametrize("every", [1, 2, 3])
def test_a_folder_rolled_over_is_finished_at_once(tmp_path: Path, every: int) -> None:
    out = tmp_path / "live"
    c = collector(out, idle_s=0.1, roll=Roll(daily=True, every=every))
    c.start()
    for number in range(every + 1):  # the last one starts the next folder, within the same second
        c.accept(_document(f"conv-{number}", number), now=1.0)
        c.tick(now=1.2)
    first, second = collected_folders(out)
    manifest = RunFolder.open(first).read_manifest()
    assert manifest.status == "complete" and len(manifest.scenarios) == every
    c.stop()
    assert len(RunFolder.open(second).read_manifest().scenarios) == 1
    assert len(records(out)) == every + 1
