"""The collector's fast paths give what the reference paths give.

- A protobuf export request read straight into spans (traces/otlp_proto.py) equals the same request through
  protobuf's JSON mapping and the JSON decoder (`decode_request` + `decode_documents`): the spans, their
  values, and the rejected spans with their reasons, for requests built by hypothesis (every AnyValue kind,
  nesting past MAX_DEPTH, odd id lengths, error status, events, scopes) and for the real SDK's requests.
- The redactor's built-in patterns run between a text's double quotes, skipping pieces without a digit or
  an `@` and remembering pieces: the text and the counts by label are those of one pass over the whole text.
"""

from __future__ import annotations

import gzip
import math
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.collect.decode import decode_export, decode_request
from simulator.record.secret_keys import without_secret_pairs
from simulator.traces.otlp_decode import MAX_DEPTH, decode_documents
from simulator.traces.redact import Redactor, load_redactor
from tests.traces_helpers import require

require("opentelemetry.proto")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import (  # noqa: E402
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource  # noqa: E402
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status  # noqa: E402

PROTOBUF = "application/x-protobuf"
FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

scalar = st.one_of(
    st.builds(lambda v: AnyValue(string_value=v), st.text(max_size=30)),
    st.builds(lambda v: AnyValue(int_value=v), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: AnyValue(double_value=v), st.floats()),
    st.builds(lambda v: AnyValue(bool_value=v), st.booleans()),
    st.builds(lambda v: AnyValue(bytes_value=v), st.binary(max_size=12)),
    st.just(AnyValue()),
)
value = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.builds(lambda vs: AnyValue(array_value=ArrayValue(values=vs)), st.lists(inner, max_size=3)),
        st.builds(
            lambda kvs: AnyValue(
                kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs])
            ),
            st.lists(st.tuples(st.text(max_size=6), inner), max_size=3),
        ),
    ),
    max_leaves=10,
)


def _deep(depth: int) -> AnyValue:
    deep = AnyValue(string_value="bottom")
    for level in range(depth):
        deep = AnyValue(array_value=ArrayValue(values=[deep])) if level % 2 else _kv(deep)
    return deep


def _kv(inner: AnyValue) -> AnyValue:
    return AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key="k", value=inner)]))


values = st.one_of(
    value, st.sampled_from([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 3]).map(_deep)
)
attributes = st.lists(
    st.builds(
        lambda k, v, has: KeyValue(key=k, value=v) if has else KeyValue(key=k),
        st.one_of(
            st.sampled_from(["gen_ai.conversation.id", "gen_ai.input.messages", ""]), st.text(max_size=8)
        ),
        values,
        st.booleans(),
    ),
    max_size=4,
)
ids = st.one_of(
    st.sampled_from([8, 16]).flatmap(lambda n: st.binary(min_size=n, max_size=n)), st.binary(max_size=20)
)
times = st.integers(0, 2**64 - 1)
span = st.builds(
    lambda t, s, a, b, attrs, events, code, message: Span(
        trace_id=t, span_id=s, start_time_unix_nano=a, end_time_unix_nano=b, attributes=attrs,
        events=events, status=Status(code=code, message=message),
    ),
    ids, ids, times, st.one_of(st.just(0), times), attributes,
    st.lists(st.builds(lambda n, t, a: Span.Event(name=n, time_unix_nano=t, attributes=a), st.text(max_size=8), times, attributes), max_size=2),
    st.sampled_from([0, 1, 2]), st.text(max_size=10),
)  # fmt: skip
scope = st.one_of(
    st.none(), st.builds(lambda n, v: InstrumentationScope(name=n, version=v), st.text(max_size=250), st.text(max_size=70))
)  # fmt: skip
request = st.builds(
    lambda groups: ExportTraceServiceRequest(resource_spans=groups),
    st.lists(
        st.builds(
            lambda res, scopes: ResourceSpans(resource=Resource(attributes=res), scope_spans=scopes),
            attributes,
            st.lists(
                st.builds(
                    lambda sc, spans: ScopeSpans(scope=sc, spans=spans) if sc else ScopeSpans(spans=spans),
                    scope,
                    st.lists(span, max_size=3),
                ),
                max_size=2,
            ),
        ),
        max_size=2,
    ),
)


def _comparable(decoded: Any) -> Any:
    """The decoded spans and rejections, with NaN made comparable (it is kept as its JSON text anyway)."""

    def clean(item: Any) -> Any:
        if isinstance(item, float) and math.isnan(item):
            return "nan"
        if isinstance(item, dict):
            return {k: clean(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [clean(v) for v in item]
        return item

    spans = {ref: clean(vars(s)) for ref, s in decoded.spans.items()}
    return spans, decoded.span_records, decoded.rejected_spans


def _both(body: bytes) -> tuple[Any, Any]:
    fast = decode_export(body, PROTOBUF, "", "traces", 1 << 24)
    reference = decode_documents([(None, decode_request(body, PROTOBUF, "", "traces", 1 << 24))])
    return _comparable(fast), _comparable(reference)


@FUZZ
@given(message=request)
def test_protobuf_straight_into_spans_equals_the_json_mapping(message: ExportTraceServiceRequest) -> None:
    fast, reference = _both(message.SerializeToString())
    assert fast == reference


@pytest.mark.parametrize(
    "resource",
    [
        [KeyValue(key="service.name", value=AnyValue(string_value="triage-web"))],
        [KeyValue(key="n", value=AnyValue(int_value=3)), KeyValue(key="empty")],
        [KeyValue(key="nested", value=_kv(AnyValue(string_value="x")))],  # not remembered: a map
        [KeyValue(key="", value=AnyValue(string_value="refused"))],  # every span rejected, every time
        [KeyValue(key="big", value=AnyValue(string_value="x" * 5000))],  # past the bytes remembered
    ],
)
def test_a_resource_sent_again_decodes_alike_and_unshared(resource: list[KeyValue]) -> None:
    """The same resource in every request (as an exporter sends it) is read once and remembered
    (traces/otlp_proto.py `_resource`): each request still decodes as the JSON path has it, into its own
    attributes, which one request's reader changing leaves the next request's alone."""
    message = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=resource),
                scope_spans=[ScopeSpans(spans=[Span(trace_id=b"\1" * 16, span_id=b"\2" * 8)])],
            )
        ]
    )
    first = decode_export(message.SerializeToString(), PROTOBUF, "", "traces", 1 << 24)
    for span in first.spans.values():
        span.resource["changed"] = True
        for value in span.resource.values():
            if isinstance(value, dict):
                value["changed"] = True
    for _ in range(3):
        fast, reference = _both(message.SerializeToString())
        assert fast == reference
        assert "changed" not in repr(fast)


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 5])
def test_a_deep_resource_rejects_its_spans_as_the_json_path_does(depth: int) -> None:
    spans = [Span(trace_id=b"\1" * 16, span_id=bytes([n]) * 8) for n in (1, 2)]
    message = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[KeyValue(key="deep", value=_deep(depth))]),
                scope_spans=[ScopeSpans(spans=spans)],
            ),
            ResourceSpans(scope_spans=[ScopeSpans(spans=[Span(trace_id=b"\2" * 16, span_id=b"\3" * 8)])]),
        ]
    )
    fast, reference = _both(message.SerializeToString())
    assert fast == reference
    assert len(fast[2]) == (2 if depth > MAX_DEPTH else 0)


def test_the_sdk_exporters_requests_decode_alike() -> None:
    """What the real OTLP exporter encodes (GenAI chat spans, the history repeated), gzip'd as it sends it."""
    require("opentelemetry.sdk")
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.collect_helpers import SECRET_EMAIL, SECRET_NHS, genai_turns

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for number in range(3):
        turns = [(f"my email is {SECRET_EMAIL}, NHS {SECRET_NHS}", "thanks"), ("chest pain 2 days", "ok")]
        genai_turns(provider, f"conv-{number}", turns, temperature=0.5, tries=3, flags=(True, False))
    body = gzip.compress(encode_spans(memory.get_finished_spans()).SerializeToString())
    fast = decode_export(body, PROTOBUF, "gzip", "traces", 1 << 24)
    reference = decode_documents([(None, decode_request(body, PROTOBUF, "gzip", "traces", 1 << 24))])
    assert len(fast.spans) == 6 and _comparable(fast) == _comparable(reference)


# ------------------------------------------------------------------------------------------ redaction

PIECES = ['"', "@", "a", "x.y", " ", "-", "/", "+44 ", "(020) ", "3", "07700 900123", "943 476 5919",
          "123-45-6789", "12/03/1971", "3 March 1971", "March 3, 1971", "jane@example.org", "\\", "\u0663",
          # the credential formats (record/redact.py) and their pieces
          "sk-", "ant-api03-", "AbCdEfGhIjKlMnOpQrStUvWx", "password is ", "passwd=", "hunter-Secret!", "not ",
          "Bearer ", "eyJhbGciOiJ", ".", "-----BEGIN RSA PRIVATE KEY-----", "\n", "-----END RSA PRIVATE KEY-----",
          "AKIAZQWERTYUIOPASDFG", "xoxb-", "ghp_", "aws_secret_access_key = ", "AIza",
          # a value under a credential's name (record/secret_keys.py), across quotes
          '"api_key": ', '\\"pin\\":', "token=", "&", "': ", "clientSecret", "1234", "[PASSWORD]",
          # what chooses a piece's patterns and where they may start (traces/redact.py `_KIND`, `_STARTS`):
          # a month named (any case, `ſ` for s), a credential's start that is none (`task_id`, `laws`)
          "may ", "Sept ", "ſept ", "DEC", "12th ", "(", "+1 555 ", "\u0664\u0665", "task_id", "laws "]  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=25).map("".join)


def _one_pass(redactor: Redactor, text: str) -> tuple[str, Counter[str]]:
    """The reference: the built-in patterns over the whole text at once, then the values under a
    credential's name."""
    reference = Redactor([], [label for label in redactor.labels])
    assert reference.builtin is not None
    result = reference.builtin.sub(reference._replace, text)
    return without_secret_pairs(result, lambda label, _: reference.counts.update([label])), reference.counts


@FUZZ
@given(items=st.lists(texts, min_size=1, max_size=6))
def test_redacting_between_quotes_equals_one_pass(items: list[str]) -> None:
    redactor = load_redactor(None)
    expected: Counter[str] = Counter()
    for text in items + items:  # the second time from memory
        result, counts = _one_pass(redactor, text)
        expected.update(counts)
        assert redactor.text(text) == result
    assert redactor.counts == expected


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_piece_searched_for_its_kinds_only_equals_one_pass(seed: int) -> None:
    """A piece is searched only with the patterns of the kinds it holds, each from where its matches can
    start (traces/redact.py `_searched_with`), and a text with no credential's start only in its pieces with
    an `@` or a digit: the same text and counts as every pattern over the whole text, on 400 texts mixing
    every kind, JSON quotes and the look-alikes, short (remembered whole) and long."""
    rng = random.Random(seed)
    redactor = load_redactor(None)
    expected: Counter[str] = Counter()
    for number in range(400):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 60 if number % 2 else 12)))
        result, counts = _one_pass(redactor, text)
        expected.update(counts)
        assert redactor.text(text) == result, text
    assert redactor.counts == expected


def test_the_memory_of_pieces_is_bounded() -> None:
    from simulator.traces import redact

    redactor = load_redactor(None)
    for number in range(redact.MEMO_PIECES + 50):
        assert redactor.text(f'"call 07700 900{number:03d}"') == '"call [PHONE]"'
    assert len(redactor._memo) == redact.MEMO_PIECES
    assert redactor.counts["phone"] == redact.MEMO_PIECES + 50
