"""The collector's memory of closed spans (`collect/assembler.py`): a span sent again after its
conversation closed is not taken twice, whatever its ids look like, and the memory keeps only the newest."""

from __future__ import annotations

import pytest

from simulator.collect import assembler as assembler_module
from simulator.collect.assembler import Assembler
from simulator.traces.otlp import Span


def _span(trace: str, span: str) -> Span:
    return Span(trace, span, 1, 2, {"gen_ai.conversation.id": "c-" + trace}, {}, None)


def _closed(assembler: Assembler, spans: list[Span]) -> None:
    assembler.add(assembler.fresh(spans), now=0.0)
    assert assembler.due(now=10.0)  # idle: closed


@pytest.mark.parametrize(
    ("trace", "span"),
    [("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"), ("t-1", "s-1"), ("ab", "cd"), ("a", "bcd")],
)
def test_a_span_sent_again_after_its_conversation_closed_is_not_taken(trace: str, span: str) -> None:
    assembler = Assembler(None, idle_s=1.0, max_spans=100)
    _closed(assembler, [_span(trace, span)])
    assert assembler.fresh([_span(trace, span)]) == []
    assert assembler.spans == 0 and not assembler.open


def test_ids_that_read_alike_when_joined_stay_apart() -> None:
    assembler = Assembler(None, idle_s=1.0, max_spans=100)
    _closed(assembler, [_span("ab", "cd")])
    assert len(assembler.fresh([_span("a", "bcd")])) == 1


def test_the_memory_keeps_the_newest_closed_spans_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assembler_module, "RECENT", 3)
    assembler = Assembler(None, idle_s=1.0, max_spans=100)
    spans = [_span(f"{i:032x}", f"{i:016x}") for i in range(1, 6)]  # all-zero ids are invalid in OTLP
    _closed(assembler, spans)
    assert len(assembler.recent) == 3
    assert [len(assembler.fresh([s])) for s in spans] == [1, 1, 0, 0, 0]  # the two oldest forgotten
