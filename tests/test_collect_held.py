"""Open spans are held as where their lines are in the spool, not in memory (collect/assembler.py `Held`), and
read back when their conversation closes: the record is the same whether the span's log events came before
or after it, in one request or later ones, and whether the spool was compacted (the lines moved) in between.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.collect_helpers import collector, records

TRACE = "ab" * 16


def _span(span_id: str, key: str, turns: list[tuple[str, str]]) -> dict[str, Any]:
    import json

    history = [{"role": r, "parts": [{"type": "text", "content": c}]} for pair in turns for r, c in
               zip(("user", "assistant"), pair, strict=True)][:-1]  # fmt: skip
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": turns[-1][1]}]}]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.conversation.id": key,
        "gen_ai.input.messages": json.dumps(history),
        "gen_ai.output.messages": json.dumps(answer),
    }
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + int(span_id, 16)),
        "endTimeUnixNano": str(1_700_000_000_500_000_000 + int(span_id, 16)),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


def _spans(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def _note(span_id: str, text: str, number: int) -> dict[str, Any]:
    """A log record for the span: an event the record does not show, but which must reach the span."""
    return {
        "resourceLogs": [{"scopeLogs": [{"logRecords": [{
            "traceId": TRACE, "spanId": span_id, "eventName": "app.note",
            "timeUnixNano": str(1_700_000_000_100_000_000 + number),
            "attributes": [{"key": "note", "value": {"stringValue": text}}],
        }]}]}]
    }  # fmt: skip


TURNS = [("my chest hurts", "How long for?"), ("two hours", "Call 999 now.")]


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("notes_first", [False, True])
def test_held_spans_are_read_back_whole(tmp_path: Path, compact: bool, notes_first: bool) -> None:
    out = tmp_path / "live"
    c = collector(out, idle_s=60.0, spool_limit=1 if compact else 64 << 20)
    c.start(now=0.0)
    first, second = _span("0000000000000001", "held-1", TURNS[:1]), _span("0000000000000002", "held-1", TURNS)
    notes = [_note("0000000000000001", "triaged", 1), _note("0000000000000001", "escalated", 2)]
    order = [*notes, _spans(first)] if notes_first else [_spans(first), notes[0]]
    for document in order:
        c.accept(document, now=1.0)
        c.tick(now=2.0)  # not idle yet: with a tiny spool limit, the spool is compacted each time
    c.accept(_spans(first, second), now=3.0)  # the first sent again (a retry): a duplicate
    c.accept(notes[1], now=3.0)  # a note already held, sent again: nothing new
    if not notes_first:
        c.accept(notes[1], now=3.0)
    assert c.counts["duplicates"] >= 1
    held = [h for conversation in c.assembler.open.values() for h in conversation.spans.values()]
    assert held and all(isinstance(part, tuple) for h in held for part in h.parts)  # on disk, not in memory
    spans = c._spans(c.assembler.open["held-1"])
    events = {s.span_id: sorted(n for n, _, a in s.events) for s in spans}
    notes_of_first = sorted(a["note"] for s in spans for _, _, a in s.events if s.span_id.endswith("1"))
    assert events["0000000000000002"] == [] and notes_of_first == ["escalated", "triaged"]
    assert c.tick(now=100.0) == 1
    (record,) = records(out)
    assert [t.text for t in record.turns] == [m for pair in TURNS for m in pair]
