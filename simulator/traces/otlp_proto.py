"""OTLP protobuf export requests straight into spans, as `otlp_decode` decodes their JSON form.

The collector's hot path: the standard exporters send protobuf, and going through protobuf's generic JSON
mapping (`MessageToDict`, base64 ids turned to hex, every AnyValue re-checked as JSON) cost about ten times
the parse itself. Here the parsed messages are read field by field into the same `Span`s and `Decoded`, with
the same values: ids in lower-case hex, 64-bit integers as ints, a non-finite double as its proto3 JSON text,
bytes as base64 text, an empty AnyValue as None, the status code 2 as an error. Protobuf's types already
guarantee most of what the JSON door checks (keys are text, times are unsigned 64-bit, integers fit); what
they do not (nesting deeper than `MAX_DEPTH`, an empty key) sends that one span through the JSON path, which
rejects it with the same reason, naming the field. tests/test_collect_proto.py holds both paths to the
same output.
"""

from __future__ import annotations

__all__ = ["decode_logs_request", "decode_traces_request"]

import base64
import math
from typing import Any

from simulator.traces.otlp_decode import (
    MAX_DEPTH,
    SPAN_ID_BYTES,
    TRACE_ID_BYTES,
    Decoded,
    Malformed,
    Span,
    attributes,
    checked_id,
    decode_documents,
)
from simulator.traces.otlp_json import request_to_json

ERROR = 2  # Status.STATUS_CODE_ERROR
# A repeated field is walked as a slice (`items[:]`, a list): protobuf's containers are iterated by index
# until an IndexError, whose message is formatted at the end of each of a span's half-dozen loops.


class _Unsettled(Exception):
    """What protobuf's types do not settle (an AnyValue nested past MAX_DEPTH, an empty key, which the JSON
    mapping drops): the span is decoded again by the JSON path, which rejects it naming the field."""


def _value(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _Unsettled
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which is None:
        return None
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        number = value.double_value
        if math.isfinite(number):
            return number
        return "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    if which == "array_value":
        return [_value(v, depth + 1) for v in value.array_value.values[:]]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values, depth + 1)
    return base64.b64encode(value.bytes_value).decode("ascii")  # bytes_value, as the JSON mapping writes it


def _attributes(items: Any, depth: int = 0) -> dict[str, Any]:
    out = {kv.key: (_value(kv.value, depth) if kv.HasField("value") else None) for kv in items[:]}
    if "" in out:
        raise _Unsettled
    return out


def _id(raw: bytes, what: str, size: int) -> str:
    """An id as the JSON path has it, in hex; Malformed, as there, when it is missing, of another length or
    all zeros."""
    if len(raw) == size and raw.strip(b"\0"):
        return raw.hex()
    return checked_id(raw.hex(), what, size)


def _span(raw: Any, resource: dict[str, Any], scope: tuple[str, str]) -> Span:
    start = raw.start_time_unix_nano
    span = Span(
        _id(raw.trace_id, "traceId", TRACE_ID_BYTES),
        _id(raw.span_id, "spanId", SPAN_ID_BYTES),
        start,
        raw.end_time_unix_nano or start,
        _attributes(raw.attributes),
        resource,
        None,
        [(e.name, e.time_unix_nano, _attributes(e.attributes)) for e in raw.events[:]],
        scope=scope,
    )
    if raw.status.code == ERROR:
        span.error = raw.status.message or "the LLM call failed"
    return span


def _scope(holder: Any) -> tuple[str, str]:
    if not holder.HasField("scope"):
        return "", ""
    return holder.scope.name[:200], holder.scope.version[:60]


def _json_span(raw: Any, resource_error: str | None, number: int) -> tuple[Span | None, str | None]:
    """One span through the JSON path (the rare span protobuf's types do not settle): it, or why not."""
    from google.protobuf.json_format import MessageToDict

    from simulator.traces.otlp_json import _hex_ids

    doc = _hex_ids(MessageToDict(raw))
    label = f"span {doc['spanId'][:32]}" if doc.get("spanId") else f"span #{number + 1}"
    if resource_error:
        return None, f"{label}: {resource_error}"
    wrapped = {"resourceSpans": [{"scopeSpans": [{"spans": [doc]}]}]}
    decoded = decode_documents([(None, wrapped)])
    if decoded.rejected_spans:
        return None, f"{label}: {decoded.rejected_spans[0][1].split(': ', 1)[1]}"
    return next(iter(decoded.spans.values())), None


def _resource(rs: Any) -> tuple[dict[str, Any], str | None]:
    """The resource's attributes, or the JSON path's reason for refusing them, which every span of it gets;
    remembered by the resource's bytes, as an exporter sends the same resource in every request (a copy of
    the attributes each time, as when they are read; only flat ones, so that no list or map is shared)."""
    key = rs.resource.SerializeToString()
    found = _RESOURCES.get(key)
    if found is None:
        found = _resource_read(rs)
        if len(key) <= RESOURCE_BYTES and not any(isinstance(v, list | dict) for v in found[0].values()):
            if len(_RESOURCES) >= RESOURCES:
                del _RESOURCES[next(iter(_RESOURCES))]  # the oldest
            _RESOURCES[key] = found
    return dict(found[0]), found[1]


# The resources remembered (`_resource`): a few a service, each a few hundred bytes; a larger one is read
# each time rather than held.
RESOURCES = 256
RESOURCE_BYTES = 4096
_RESOURCES: dict[bytes, tuple[dict[str, Any], str | None]] = {}


def _resource_read(rs: Any) -> tuple[dict[str, Any], str | None]:
    try:
        return _attributes(rs.resource.attributes), None
    except _Unsettled:
        from google.protobuf.json_format import MessageToDict

        try:
            attributes(MessageToDict(rs.resource).get("attributes"), "resource")
        except Malformed as exc:
            return {}, str(exc)
        return {}, "resource attributes are malformed"  # not reached: the JSON path refuses what is unsettled


def decode_traces_request(request: Any) -> Decoded:
    """A parsed ExportTraceServiceRequest as `decode_documents` decodes its JSON form."""
    decoded = Decoded()
    for rs in request.resource_spans[:]:
        resource, resource_error = _resource(rs)
        for ss in rs.scope_spans[:]:
            scope = _scope(ss)
            for raw in ss.spans[:]:
                number = decoded.span_records
                decoded.span_records += 1
                span: Span | None
                try:
                    if resource_error:
                        raise _Unsettled
                    span = _span(raw, resource, scope)
                except Malformed as exc:
                    label = f"span {raw.span_id.hex()[:32]}" if raw.span_id else f"span #{number + 1}"
                    decoded.rejected_spans.append((None, f"{label}: {exc}"))
                    continue
                except _Unsettled:
                    span, why = _json_span(raw, resource_error, number)
                    if span is None:
                        decoded.rejected_spans.append((None, str(why)))
                        continue
                    span.resource, span.scope = resource, scope
                decoded.spans[span.ref] = span
    return decoded


def decode_logs_request(request: Any) -> Decoded:
    """A parsed ExportLogsServiceRequest: each log record an event of its span (`decode_documents`' rule).
    Log records are rare on the hot path; they go through the JSON form."""
    return decode_documents([(None, request_to_json(request))])
