"""Conversations assembled as their spans arrive, and closed after an idle time.

Spans are grouped by conversation key as `simulator import` groups them (the span's own conversation
attribute or its resource's, else another span of its trace's, else the trace id); a log record for a span
becomes that span's event. A conversation closes when no span has arrived for `idle_s` seconds. Duplicates
(a span the exporter sends again after a timeout) are recognised by (trace id, span id), for open
conversations and for the most recently closed ones. Memory is bounded by `max_spans`: the receiver
answers 503 (try later) rather than hold more.

An open span is held as where its lines are in the spool (`Held`: their offsets, whether it has attributes
yet and its events' names and times, for dedup), not as the span: the spool already holds every accepted
span on disk, so an open conversation costs a few hundred bytes a span instead of its whole history (each
GenAI span repeats the conversation so far), and the collector's memory at a steady rate is the open set's
refs, not its text. The spans are read back when the conversation closes (service.py). The closed ones are remembered as 24 packed bytes each (the
ids' hex decoded) in a set and a queue: at the cap of RECENT spans that is about 21 MB instead of 58 MB as
tuples of id strings in an ordered dict, which at the collector's sustained rate grew for half an hour.
"""

from __future__ import annotations

__all__ = ["Assembler", "OpenConversation"]

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from simulator.collect.spans import Ref
from simulator.traces.otlp import Span, own_key

RECENT = 200_000  # closed span refs remembered for dedup
Location = tuple[int, int]  # a spool line's offset and length


class Held:
    """An open span: its lines, each where it is in the spool (or, given no location, the span itself), in
    the order they came (the first the span, later ones its log events or its attributes come late); whether
    it has attributes, and its events' (name, time), so a duplicate is known without reading it."""

    __slots__ = ("attributes", "events", "parts")

    def __init__(self) -> None:
        self.parts: list[Span | Location] = []
        self.attributes = False
        self.events: set[tuple[str, int]] | None = None  # None until it has one (an empty set is 216 bytes)

    def take(self, span: Span, location: Location | None) -> None:
        self.parts.append(span if location is None else location)
        self.attributes = self.attributes or bool(span.attributes)
        if span.events:
            self.events = (self.events or set()) | {(name, time) for name, time, _ in span.events}


@dataclass
class OpenConversation:
    key: str
    spans: dict[Ref, Held] = field(default_factory=dict)
    last_seen: float = 0.0


class Assembler:
    """The open conversations, keyed by conversation key."""

    def __init__(self, key_attr: str | None, idle_s: float, max_spans: int) -> None:
        self.key_attr = key_attr
        self.idle_s = idle_s
        self.max_spans = max_spans
        self.open: dict[str, OpenConversation] = {}
        self.where: dict[Ref, str] = {}  # span -> its open conversation's key
        self.trace_keys: dict[str, str] = {}  # trace id -> conversation key, for spans without one
        self.recent: set[bytes | str] = set()  # closed spans (`_packed`), for dedup; oldest first in `_order`
        self._order: deque[bytes | str] = deque()
        self.spans = 0

    @property
    def full(self) -> bool:
        return self.spans >= self.max_spans

    def fresh(self, spans: list[Span]) -> list[Span]:
        """The spans (and log events) not seen before: what is to be spooled and added."""
        out = []
        for span in spans:
            if _packed(span.ref) in self.recent:
                continue
            key = self.where.get(span.ref)
            held = self.open[key].spans.get(span.ref) if key is not None else None
            if held is None:
                out.append(span)
                continue
            if span.attributes and held.attributes:
                continue  # the same span again
            seen = held.events or set()
            events = [e for e in span.events if (e[0], e[1]) not in seen]
            if events or (span.attributes and not held.attributes):
                out.append(Span(*_fields(span, events)))
        return out

    def _key(self, span: Span) -> str:
        own = own_key(span, self.key_attr)
        if own is not None:
            key = str(own)
            self.trace_keys.setdefault(span.trace_id, key)
            if span.trace_id in self.open and span.trace_id != key:
                self._merge(span.trace_id, key)  # spans of this trace came first, without the key
            return key
        if span.ref in self.where:
            return self.where[span.ref]
        return self.trace_keys.get(span.trace_id, span.trace_id)

    def _merge(self, old: str, new: str) -> None:
        moved = self.open.pop(old)
        target = self.open.setdefault(new, OpenConversation(new, last_seen=moved.last_seen))
        for ref, span in moved.spans.items():
            target.spans[ref] = span
            self.where[ref] = new

    def add(self, spans: list[Span], now: float, locations: list[Location] | None = None) -> None:
        """Add fresh spans (from `fresh`) to their conversations, held as their spool `locations` (one per
        span; without them, the spans themselves); `now` restarts their idle clocks."""
        for number, span in enumerate(spans):
            key = self._key(span)
            conversation = self.open.setdefault(key, OpenConversation(key))
            conversation.last_seen = now
            ref = span.ref
            held = conversation.spans.get(ref)
            if held is None:
                held = conversation.spans[ref] = Held()
                self.where[ref] = key
                self.spans += 1
            held.take(span, locations[number] if locations is not None else None)

    def due(self, now: float, everything: bool = False) -> list[OpenConversation]:
        """Take out the conversations idle for `idle_s` (all of them with `everything`)."""
        done = [c for c in self.open.values() if everything or now - c.last_seen >= self.idle_s]
        for conversation in done:
            self.close(conversation)
        return done

    def close(self, conversation: OpenConversation) -> None:
        del self.open[conversation.key]
        for ref in conversation.spans:
            self.where.pop(ref, None)
        self.remember(list(conversation.spans))
        self.spans -= len(conversation.spans)
        traces = {ref[0] for ref in conversation.spans}
        for trace in traces:
            if self.trace_keys.get(trace) == conversation.key:
                del self.trace_keys[trace]

    def remember(self, refs: list[Ref]) -> None:
        """Spans of closed conversations (these, or before a restart): known, so not taken again."""
        for ref in refs:
            packed = _packed(ref)
            if packed not in self.recent:
                self.recent.add(packed)
                self._order.append(packed)
        while len(self._order) > RECENT:
            self.recent.discard(self._order.popleft())

    def held(self) -> list[Held]:
        return [h for c in self.open.values() for h in c.spans.values()]


def _packed(ref: Ref) -> bytes | str:
    """A span's (trace id, span id) in few bytes: OTLP's 32 + 16 hex digits decoded; any other ids as text
    (a str never equals bytes, so the two forms cannot collide)."""
    trace, span = ref
    if len(trace) == 32 and len(span) == 16:
        try:
            return bytes.fromhex(trace + span)
        except ValueError:
            pass
    return f"{trace}\x00{span}"


def _fields(span: Span, events: list[tuple[str, int, dict[str, Any]]]) -> tuple[Any, ...]:
    """The span's fields with other events (Span's positional order)."""
    return (
        span.trace_id,
        span.span_id,
        span.start,
        span.end,
        span.attributes,
        span.resource,
        None,
        events,
        span.error,
        span.scope,
    )
