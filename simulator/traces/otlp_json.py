"""Finished OpenTelemetry SDK spans as OTLP JSON, through the official protobuf encoding.

The OTLP exporters' own encoder (`opentelemetry-exporter-otlp-proto-common`) builds the
ExportTraceServiceRequest; protobuf's JSON mapping writes it, and trace and span ids are turned from
base64 into the hex that OTLP JSON (and the Collector's file exporter) uses.
"""

from __future__ import annotations

__all__ = ["request_to_json", "spans_to_json"]

import base64
from collections.abc import Sequence
from typing import Any

_ID_KEYS = {"traceId", "spanId", "parentSpanId"}


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def request_to_json(request: Any) -> dict[str, Any]:
    """An ExportTraceServiceRequest (protobuf) as an OTLP JSON object."""
    from google.protobuf.json_format import MessageToDict

    result: dict[str, Any] = _hex_ids(MessageToDict(request))
    return result


def spans_to_json(spans: Sequence[Any]) -> dict[str, Any]:
    """Finished SDK spans (ReadableSpan) as one OTLP JSON `{"resourceSpans": [...]}` object."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return request_to_json(encode_spans(spans))
