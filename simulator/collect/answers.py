"""The collector's answer to an export request it decoded, as the OTLP/HTTP specification has it.

Everything taken: 200 with an empty `Export*ServiceResponse`. Some spans (or log records) malformed and
rejected at the door, the rest taken: 200 with `partial_success` (how many were rejected, and why: the first
reasons, each naming the span and the field), which exporters log and do not retry. All of them rejected:
400 Bad Request with the reasons, which exporters do not retry either (the data will not get better).
"""

from __future__ import annotations

__all__ = ["Answer", "accepted_answer", "refusal"]

import json
from typing import NamedTuple

from simulator.traces.otlp_decode import Decoded

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
REASONS_SHOWN = 3


class Answer(NamedTuple):
    """An HTTP answer as the receiver sends it: status, media type, body, and Retry-After when it has one."""

    status: int
    media_type: str
    body: bytes
    retry_after: str | None = None


def refusal(status: int, message: str, retry_after: str | None = None) -> Answer:
    """A refused request: the status and a plain-text message saying why (and when to retry)."""
    return Answer(status, TEXT, message.encode(), retry_after)


# Everything taken, the answer to nearly every request: built once (an empty Export*ServiceResponse is no
# bytes in protobuf and `{}` in JSON).
TAKEN_PROTOBUF = Answer(200, PROTOBUF, b"")
TAKEN_JSON = Answer(200, JSON, b"{}")


def _message(reasons: list[str]) -> str:
    shown = "; ".join(reasons[:REASONS_SHOWN])
    more = f" (and {len(reasons) - REASONS_SHOWN} more)" if len(reasons) > REASONS_SHOWN else ""
    return f"rejected {len(reasons)} malformed: {shown}{more}"


def _protobuf(kind: str, rejected: int, message: str) -> bytes:
    if kind == "traces":
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as traces

        partial = traces.ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
        return bytes(traces.ExportTraceServiceResponse(partial_success=partial).SerializeToString())
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as logs

    partial_logs = logs.ExportLogsPartialSuccess(rejected_log_records=rejected, error_message=message)
    return bytes(logs.ExportLogsServiceResponse(partial_success=partial_logs).SerializeToString())


def accepted_answer(decoded: Decoded, kind: str, content_type: str) -> Answer:
    """200 (full or partial success) or 400 (nothing usable), in the request's encoding."""
    rejected = decoded.rejected_spans if kind == "traces" else decoded.rejected_logs
    as_json = content_type.split(";")[0].strip().lower() == JSON
    if not rejected:
        return TAKEN_JSON if as_json else TAKEN_PROTOBUF
    total = decoded.span_records if kind == "traces" else decoded.log_records
    message = _message([reason for _, reason in rejected])
    if len(rejected) >= total:
        return refusal(400, f"{message}; fix the instrumentation or exporter that wrote them")
    if as_json:
        field = "rejectedSpans" if kind == "traces" else "rejectedLogRecords"
        body = {"partialSuccess": {field: str(len(rejected)), "errorMessage": message}}
        return Answer(200, JSON, json.dumps(body).encode())
    return Answer(200, PROTOBUF, _protobuf(kind, len(rejected), message))
