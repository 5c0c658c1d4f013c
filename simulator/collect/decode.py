"""OTLP/HTTP request bodies: read within a size limit, gunzipped within it too, decoded into spans.

Protobuf (`application/x-protobuf`, what the standard OTel exporters send) is parsed with the
OpenTelemetry protocol's own messages and read straight into spans (traces/otlp_proto.py, the same spans
and the same rejections as the JSON form gives); JSON (`application/json`) goes through the one decoder
`simulator import` uses (traces/otlp_decode.py).
"""

from __future__ import annotations

__all__ = ["BodyError", "decode_export", "decode_request", "read_limited"]

import functools
from collections.abc import AsyncIterator
from typing import Any

from simulator.inflate import DamagedBody, Inflate
from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.readers import InputRefused, parse_protobuf
from simulator.traces.otlp_decode import MAX_DEPTH, Decoded, ShapeError, decode_documents
from simulator.traces.otlp_proto import decode_logs_request, decode_traces_request

OTLP_JSON_DEPTH = 4 * MAX_DEPTH + 32

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class BodyError(Exception):
    """A request the collector refuses: the HTTP status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_limited(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """The body, read chunk by chunk; BodyError 413 as soon as it passes `limit` (never read in full)."""
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise BodyError(413, f"request body over the limit of {limit} bytes; send smaller batches")
    return bytes(body)


def gunzip(body: bytes, limit: int) -> bytes:
    """Decompress a gzip body, refusing one that inflates past `limit` (a decompression bomb), and one that
    is not one whole gzip stream (damaged, cut before its end, or going on after it: `simulator.inflate`)."""
    inflate = Inflate("gzip", "the request")
    out = bytearray()
    try:
        for piece in inflate.feed(body):
            out += piece
            if len(out) > limit:
                raise BodyError(413, f"the decompressed body is over the limit of {limit} bytes")
        out += inflate.end()
    except DamagedBody as exc:
        raise BodyError(400, f"the body is not valid gzip: {exc}; send it whole, or uncompressed") from None
    return bytes(out)


@functools.cache
def _request_type(kind: str) -> Any:
    """The protobuf export request message type of `kind` (imported once, on the first request: a function's
    import statement costs a few microseconds at each call)."""
    if kind == "traces":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        return ExportTraceServiceRequest
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    return ExportLogsServiceRequest


def _parse(body: bytes, kind: str) -> Any:
    """The protobuf export request message; BodyError 400 when the body is not one."""
    request = _request_type(kind)()
    try:  # the one bounded reader's protobuf door (the body's size is bounded by `read_limited` already)
        parse_protobuf(body, request, f"the body (an OTLP {kind} protobuf message)", max_bytes=len(body))
    except InputRefused:
        raise BodyError(
            400,
            f"the body is not an OTLP {kind} protobuf message (cut short, or fields of the wrong type); send "
            "what an OpenTelemetry SDK's OTLP exporter sends",
        ) from None
    return request


def _unwrapped(body: bytes, content_type: str, encoding: str, limit: int) -> tuple[bytes, str]:
    """The body gunzipped (when it says gzip) and its media type; BodyError 415 for what is not OTLP/HTTP."""
    if encoding.strip().lower() == "gzip":
        body = gunzip(body, limit)
    elif encoding.strip() and encoding.strip().lower() != "identity":
        raise BodyError(415, f"Content-Encoding {encoding!r} is not supported; use gzip or none")
    media = content_type.split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise BodyError(415, f"Content-Type {media!r} is not supported; send {PROTOBUF} or {JSON}")
    return body, media


def decode_export(body: bytes, content_type: str, encoding: str, kind: str, limit: int) -> Decoded:
    """An OTLP export request body as its spans (log records as their spans' events), each checked at the
    door; BodyError for a body that is not one, ValueError for a document that is not OTLP."""
    body, media = _unwrapped(body, content_type, encoding, limit)
    if media == PROTOBUF:
        request = _parse(body, kind)
        return decode_traces_request(request) if kind == "traces" else decode_logs_request(request)
    try:
        return decode_documents([(None, _json(body, kind))])
    except ShapeError as exc:
        raise ValueError(f"not an OTLP export request ({exc})") from None


def decode_request(body: bytes, content_type: str, encoding: str, kind: str, limit: int) -> dict[str, Any]:
    """An OTLP export request body as an OTLP JSON document (protobuf through its JSON mapping); BodyError for
    anything else. The receiver uses `decode_export`; this is the reference its protobuf path is held to."""
    body, media = _unwrapped(body, content_type, encoding, limit)
    if media == PROTOBUF:
        from simulator.traces.otlp_json import request_to_json

        return request_to_json(_parse(body, kind))
    return _json(body, kind)


def _json(body: bytes, kind: str) -> dict[str, Any]:
    """An OTLP JSON body as its document; BodyError 400 when it is not JSON or not an export request."""
    try:
        # Deep enough for the span decoder to refuse one over-deep attribute on its own (partial success):
        # an AnyValue level is three JSON levels, under an envelope of about a dozen.
        doc = loads_bounded(body, "the body", max_depth=OTLP_JSON_DEPTH)
    except JSONRefused as exc:
        raise BodyError(400, str(exc)) from None
    key = "resourceSpans" if kind == "traces" else "resourceLogs"
    if not isinstance(doc, dict) or not isinstance(doc.get(key, []), list):
        raise BodyError(400, f"the body is not an OTLP JSON {kind} request (no {key} list)")
    return doc
