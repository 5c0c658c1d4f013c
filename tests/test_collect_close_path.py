"""Closing a conversation costs less and writes the same: each span's input is parsed only past the history
the call before it held (traces/genai.py `InputHistory`), a record's turns are validated once (traces/records.py),
and the rephrasing signal's difflib ratio is computed with `str.find` (collect/signals.py), not at all below
its length bound. Each shortcut is held to the whole computation it replaces, over several inputs: the
ways a history can grow or not, conversations that share their text, spans in any order and in several
requests, text UTF-8 cannot store in merged messages, and pairs of texts near and past the threshold."""

from __future__ import annotations

import itertools
import json
import random
import re
from datetime import UTC, datetime
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import pytest

from simulator.collect.signals import _alike, _ratio, _rephrased
from simulator.jsonbounds import MAX_JSON_DEPTH
from simulator.record.parts import TextPart
from simulator.traces import genai
from simulator.traces.genai import InputHistory, messages_from_json
from simulator.traces.messages import Conversation, Message, Parsed
from simulator.traces.otlp import Span, conversations_from_spans
from simulator.traces.records import ConvertOptions, to_record
from tests.collect_helpers import collector, records

START = 1_700_000_000_000_000_000


def _message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


M1, M2, M3 = _message("user", "my chest hurts"), _message("assistant", "since when?"), _message("user", "2h")
COMPACT = [json.dumps([M1]), json.dumps([M1, M2]), json.dumps([M1, M2, M3])]
TIGHT = [json.dumps(h, separators=(",", ":")) for h in ([M1], [M1, M2], [M1, M2, M3])]
PRETTY = [json.dumps(h, indent=2) for h in ([M1], [M1, M2], [M1, M2, M3])]
HEAD = json.dumps([M1])[:-1]  # `[{...}`: the first history without its closing bracket
DEEP = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH  # in a message in an array: past the bound
DEEPEST = "[" * (MAX_JSON_DEPTH - 2) + "]" * (MAX_JSON_DEPTH - 2)  # at the bound: read
NUMBERED = '[{{"role": "user", "parts": [], "n": {}}}]'

# Sequences of `gen_ai.input.messages` values, as one conversation's calls send them, in time order.
SEQUENCES = {
    "grows": COMPACT,
    "grows, no spaces": TIGHT,
    "pretty-printed": PRETTY,
    "spaces and newlines around the comma": [COMPACT[0], HEAD + " \n\t, " + json.dumps(M2) + " ]\n"],
    "the same text twice, then more": [COMPACT[1], COMPACT[1], COMPACT[2]],
    "history rewritten (trimmed), then grows from there": [COMPACT[1], json.dumps([M2, M3]), COMPACT[2]],
    "a trailing comma": [COMPACT[0], HEAD + ", ]", COMPACT[1]],
    "a message that is not an object": [COMPACT[0], HEAD + ", 5]", COMPACT[1]],
    "a message without a role": [COMPACT[0], HEAD + ', {"parts": []}]'],
    "not JSON past the history": [COMPACT[0], HEAD + ', {"role": }]', COMPACT[1]],
    "a repeated key past the history": [COMPACT[0], HEAD + ', {"role": "user", "role": "x", "parts": []}]'],
    "NaN past the history": [COMPACT[0], HEAD + ', {"role": "user", "parts": [], "n": NaN}]'],
    "white space JSON does not allow before the comma": [COMPACT[0], HEAD + "\xa0, " + json.dumps(M2) + "]"],
    "nested past the bound": [COMPACT[0], HEAD + f', {{"role": "user", "parts": [], "x": {DEEP}}}]'],
    "nested to the bound": [COMPACT[0], HEAD + f', {{"role": "user", "parts": [], "x": {DEEPEST}}}]'],
    "an empty history first": ["[]", "[, " + json.dumps(M1) + "]", COMPACT[0]],
    "a byte order mark": ["\ufeff" + COMPACT[0], "\ufeff" + COMPACT[1]],
    "not an array": [COMPACT[0], json.dumps(M1), COMPACT[1]],
    "a longer number after the history": [NUMBERED.format(1), NUMBERED.format(12)],
    "already decoded, then text": [[M1, M2], COMPACT[1], COMPACT[2]],
}


def _outcome(parse: Any, value: Any) -> tuple[Any, list[Message]]:
    """What parsing `value` gave: the messages (role, parts, time, latency) or the error's text; and the
    messages themselves."""
    try:
        found = parse(value, genai.INPUT)
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}", []
    return [(m.role, m.parts, m.time, m.latency_s) for m in found], found


# Where the history is reused (its messages' parts are the same objects), not parsed again.
REUSED = (
    "grows",
    "grows, no spaces",
    "spaces and newlines around the comma",
    "the same text twice, then more",
    "a byte order mark",
)


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_a_history_parses_each_input_as_a_whole_parse_does(name: str) -> None:
    history = InputHistory()
    outcomes, parts = [], []
    for value in SEQUENCES[name]:
        got, messages = _outcome(history.messages, value)
        assert got == _outcome(messages_from_json, value)[0], value
        outcomes.append(got)
        parts.append(messages[0].parts if messages else None)
        for message in messages:  # as conversations_from_spans stamps them: never seen by the next call
            message.time, message.latency_s = datetime(2025, 1, 1, tzinfo=UTC), 1.0
    if name in REUSED or name in ("pretty-printed", "nested to the bound"):
        assert all(not isinstance(o, str) for o in outcomes)  # the shapes that must parse, did
    if name in REUSED:
        assert all(later is parts[0] for later in parts[1:])


def _span(key: str, number: int, inputs: Any, reply: str, **attributes: Any) -> Span:
    """A GenAI chat span of conversation `key`, the `number`th call (its times follow from it)."""
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.conversation.id": key,
        "gen_ai.input.messages": inputs,
        "gen_ai.output.messages": json.dumps([_message("assistant", reply)]),
        **attributes,
    }
    trace = (key.encode().hex() * 32)[:32]
    start = START + number * 1_000_000_000
    return Span(trace, f"{number:016x}", start, start + 400_000_000, attrs, {}, None)


def _calls(key: str, turns: list[str], first: int = 0) -> list[Span]:
    """A conversation of one call a turn, each repeating the history (as instrumentations send it)."""
    history: list[dict[str, Any]] = []
    spans = []
    for n, said in enumerate(turns):
        history.append(_message("user", said))
        spans.append(_span(key, first + n, json.dumps(history), f"reply {n} to {key}"))
        history.append(_message("assistant", f"reply {n} to {key}"))
    return spans


def _decoded(span: Span) -> Span:
    """The span with its input already decoded: parsed whole, whatever the history holds (the oracle)."""
    attributes = dict(span.attributes)
    for name in (genai.INPUT,):
        if isinstance(attributes.get(name), str):
            attributes[name] = json.loads(attributes[name])
    events = [(n, t, {**a, **({genai.INPUT: json.loads(a[genai.INPUT])} if genai.INPUT in a else {})})
              for n, t, a in span.events]  # fmt: skip
    return Span(span.trace_id, span.span_id, span.start, span.end, attributes, span.resource, None, events)


def _read(spans: list[Span]) -> Any:
    keys = {s.ref: str(s.attributes["gen_ai.conversation.id"]) for s in spans}
    parsed = conversations_from_spans(spans, keys, "here", Parsed([]))
    conversations = {
        c.key: ([(m.role, m.parts, m.time, m.latency_s) for m in c.messages], c.system, c.models, c.error)
        for c in parsed.conversations
    }
    return conversations, [str(p) for p in parsed.problems]


TURNS = ["my chest hurts", "since this morning", "it spreads to my arm"]


def _shapes() -> dict[str, list[Span]]:
    same_a, same_b = _calls("a", TURNS), _calls("b", TURNS, first=1)  # the same words, interleaved in time
    trimmed = _calls("t", TURNS)
    trimmed[2].attributes[genai.INPUT] = json.dumps([_message("user", TURNS[2])])  # the app kept one message
    early = _calls("e", TURNS)
    early.append(_span("e", 9, json.dumps([_message("user", TURNS[0])]), "a side call on the first turn"))
    doubled = _calls("d", TURNS)
    for span in doubled:  # span_and_event: the input on the span and on its details event
        span.events.append(("gen_ai.client.inference.operation.details", span.start, dict(span.attributes)))
    broken = _calls("x", TURNS)
    broken[1].attributes[genai.INPUT] = broken[1].attributes[genai.INPUT][:-1] + ", 7]"
    several = _calls("p", TURNS) + _calls("q", TURNS[:2]) + _calls("s", TURNS[1:])
    return {
        "two conversations with the same words, interleaved": same_a + same_b,
        "spans listed out of order": list(reversed(_calls("r", TURNS))),
        "shuffled, several conversations": random.Random(7).sample(several, len(several)),
        "history trimmed by the app": trimmed,
        "a later call on an earlier history": early,
        "the input on the span and its event": doubled,
        "a malformed call in the middle": broken,
    }


@pytest.mark.parametrize("shape", list(_shapes()))
def test_conversations_read_through_histories_are_those_of_whole_parses(shape: str) -> None:
    spans = _shapes()[shape]
    got = _read(spans)
    assert got == _read([_decoded(s) for s in spans])
    assert got[0]  # conversations were read
    if shape == "a malformed call in the middle":
        assert got[1] and "[3] must be an object" in got[1][0]


def _request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def _wire(span: Span) -> dict[str, Any]:
    return {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "startTimeUnixNano": str(span.start),
        "endTimeUnixNano": str(span.end),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in span.attributes.items()],
    }


def _written(tmp_path: Path, name: str, requests: list[list[Span]]) -> dict[str, list[Any]]:
    """Each conversation's written turns (role, text, time, latency) after `requests`, closed in one tick."""
    out = tmp_path / name
    c = collector(out, idle_s=60.0)
    c.start(now=0.0)
    for number, request in enumerate(requests):
        c.accept(_request(*(_wire(s) for s in request)), now=float(number))
        c.tick(now=float(number))  # nothing idle yet
    assert c.tick(now=1000.0) == len({s.attributes["gen_ai.conversation.id"] for r in requests for s in r})
    return {
        r.bot_conversation_id: [(t.role, t.text, t.started_at, t.latency_s) for t in r.turns]
        for r in records(out)
    }


def test_a_collector_writes_the_same_records_whatever_the_order_and_requests(tmp_path: Path) -> None:
    a, b = _calls("same-a", TURNS), _calls("same-b", TURNS, first=1)
    orders = {
        "a span a request, in order": [[s] for s in sorted(a + b, key=lambda s: s.start)],
        "one request, reversed": [list(reversed(a + b))],
        "b first, a's second call last": [b, [a[0], a[2]], [a[1]]],
    }
    written = {name: _written(tmp_path, name.replace(" ", "-"), reqs) for name, reqs in orders.items()}
    first = written["a span a request, in order"]
    assert [text for _, text, _, _ in first["same-a"]] == [
        TURNS[0], "reply 0 to same-a", TURNS[1], "reply 1 to same-a", TURNS[2], "reply 2 to same-a"
    ]  # fmt: skip
    assert all(found == first for found in written.values())


BROKEN = "\ud800"  # a lone surrogate: text UTF-8 cannot store


@pytest.mark.parametrize(
    ("texts", "repaired"),
    [
        ((f"first {BROKEN}", "second"), True),  # in the message the turn was made of
        (("first", f"second {BROKEN}"), True),  # in a message merged into it afterwards
        ((f"first {BROKEN}", f"second {BROKEN}"), True),
        (("first", "second"), False),
    ],
)
def test_a_turn_of_merged_messages_is_repaired_whole(texts: tuple[str, str], repaired: bool) -> None:
    """Consecutive messages of one side become one turn, validated (and its text repaired) once, whole."""
    messages = [Message("user", [{"type": "text", "content": t}]) for t in texts]
    messages.append(Message("assistant", [{"type": "text", "content": "ok"}]))
    options = ConvertOptions(now=datetime(2025, 1, 1, tzinfo=UTC))
    record = to_record(Conversation("k", messages=messages), "k", options)
    user = record.turns[0]
    assert user.text_repaired is repaired and record.turns[1].text_repaired is False
    assert [p.text for p in user.parts if isinstance(p, TextPart)] == [
        t.replace(BROKEN, "\ufffd") for t in texts
    ]
    json.dumps(record.model_dump(mode="json")).encode("utf-8")  # storable: no lone surrogate left


def _pairs() -> list[tuple[str, str]]:
    """Pairs of texts: every pair of texts of up to 6 letters over `ab` (ties between equally long blocks
    everywhere), random ones over small alphabets (alike by chance), near-copies, a long text against a
    short one, and `b` from 200 characters on (where difflib treats frequent characters as junk)."""
    rng = random.Random(47)
    small = ["".join(p) for n in range(7) for p in itertools.product("ab", repeat=n)]
    pairs = [(a, b) for a in small for b in small]
    for _ in range(800):
        alphabet = rng.choice(["ab", "abc", "abcdefgh ", "the quick brown fox"])
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 190)))
        b = "".join(c if rng.random() > 0.3 else rng.choice(alphabet) for c in a)
        pairs.append((a, b[: rng.randint(1, len(b) + 5)] if rng.random() < 0.5 else b))
    for _ in range(30):
        a = "".join(rng.choice("abcdefgh ") for _ in range(rng.randint(200, 320)))
        pairs += [(a, "".join(c if rng.random() > 0.1 else "x" for c in a)), (a, a[50:90]), (a[50:90], a)]
    return pairs


def test_the_rephrasing_ratio_is_difflibs() -> None:
    decided = set()
    for a, b in _pairs():
        ratio = SequenceMatcher(None, a, b).ratio()
        assert _ratio(a, b) == ratio, (a, b)
        for threshold in (0.1, 0.6, 0.75, 0.9, 1.0, ratio):
            expected = ratio >= threshold
            assert _alike(a, b, threshold) is expected, (a, b, threshold)
            decided.add(expected)
    assert decided == {True, False}


@pytest.mark.parametrize(
    "texts",
    [
        ["user 1 says thing 0: my chest hurts a bit", "user 1 says thing 1: my chest hurts a bit"],
        ["my chest hurts", "my chest really hurts", "I said my chest hurts", "yes", "45", "my chest hurts"],
        ["where is the nearest pharmacy please", "which pharmacy is nearest to me please", "forget it"],
        ["one two three four", "four three two one", "one two three four five six seven eight"],
    ],
)
def test_rephrasings_are_counted_as_the_full_ratio_counts_them(texts: list[str]) -> None:
    words = [re.findall(r"\w+", t.lower()) for t in texts]
    expected = sum(
        1
        for a, b in itertools.pairwise(words)
        if len(a) >= 3
        and len(b) >= 3
        and len(set(a) & set(b)) / len(set(a) | set(b)) >= 0.6
        and SequenceMatcher(None, " ".join(a), " ".join(b)).ratio() >= 0.75
    )
    assert _rephrased(texts, 0.75) == expected
