"""OTLP/HTTP request bodies: read within a size limit, gunzipped within it too, decoded to OTLP JSON.

Protobuf (`application/x-protobuf`, what the standard OTel exporters send) is parsed with the
OpenTelemetry protocol's own messages and mapped to OTLP JSON the way `simulator import` reads files
(ids in hex); JSON (`application/json`) is read as it is. Either way the spans then go through the one
reader `simulator import` uses (simulator/traces/otlp.py).
"""

from __future__ import annotations

__all__ = ["BodyError", "decode_request", "read_limited"]

import zlib
from collections.abc import AsyncIterator
from typing import Any

from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.traces.otlp_decode import MAX_DEPTH

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
    """Decompress a gzip body, refusing one that inflates past `limit` (a decompression bomb)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BodyError(400, f"the body is not valid gzip ({exc})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise BodyError(413, f"the decompressed body is over the limit of {limit} bytes")
    return out


def _protobuf(body: bytes, kind: str) -> dict[str, Any]:
    from simulator.readers import InputRefused, parse_protobuf
    from simulator.traces.otlp_json import request_to_json

    if kind == "traces":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        request: Any = ExportTraceServiceRequest()
    else:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        request = ExportLogsServiceRequest()
    try:  # the one bounded reader's protobuf door (the body's size is bounded by `read_limited` already)
        parse_protobuf(body, request, f"the body (an OTLP {kind} protobuf message)", max_bytes=len(body))
    except InputRefused:
        raise BodyError(
            400,
            f"the body is not an OTLP {kind} protobuf message (cut short, or fields of the wrong type); send "
            "what an OpenTelemetry SDK's OTLP exporter sends",
        ) from None
    return request_to_json(request)


def decode_request(body: bytes, content_type: str, encoding: str, kind: str, limit: int) -> dict[str, Any]:
    """An OTLP export request body as an OTLP JSON document; BodyError for anything else."""
    if encoding.strip().lower() == "gzip":
        body = gunzip(body, limit)
    elif encoding.strip() and encoding.strip().lower() != "identity":
        raise BodyError(415, f"Content-Encoding {encoding!r} is not supported; use gzip or none")
    media = content_type.split(";")[0].strip().lower()
    if media == PROTOBUF:
        return _protobuf(body, kind)
    if media == JSON:
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
    raise BodyError(415, f"Content-Type {media!r} is not supported; send {PROTOBUF} or {JSON}")
