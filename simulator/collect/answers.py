"""The collector's answer to an export request it decoded, as the OTLP/HTTP specification has it.

Everything taken: 200 with an empty `Export*ServiceResponse`. Some spans (or log records) malformed and
rejected at the door, the rest taken: 200 with `partial_success` (how many were rejected, and why: the first
reasons, each naming the span and the field), which exporters log and do not retry. All of them rejected:
400 Bad Request with the reasons, which exporters do not retry either (the data will not get better).
"""

from __future__ import annotations

__all__ = ["accepted_answer"]

import json

from starlette.responses import PlainTextResponse, Response

from simulator.traces.otlp_decode import Decoded

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
REASONS_SHOWN = 3
# Everything taken, the answer to nearly every request (an empty Export*ServiceResponse is no bytes in
# protobuf and `{}` in JSON). The bytes are constant; the small Response around them is built per request
# (about 1.4 us): one shared Response would hand the same mutable header list to every request's `send`, so
# a middleware that edits headers in place would change every later answer.
TAKEN_PROTOBUF = b""
TAKEN_JSON = b"{}"


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


def accepted_answer(decoded: Decoded, kind: str, content_type: str) -> Response:
    """200 (full or partial success) or 400 (nothing usable), in the request's encoding."""
    rejected = decoded.rejected_spans if kind == "traces" else decoded.rejected_logs
    as_json = content_type.split(";")[0].strip().lower() == JSON
    if not rejected:
        taken, media_type = (TAKEN_JSON, JSON) if as_json else (TAKEN_PROTOBUF, PROTOBUF)
        return Response(taken, 200, media_type=media_type)
    total = decoded.span_records if kind == "traces" else decoded.log_records
    message = _message([reason for _, reason in rejected])
    if len(rejected) >= total:
        return PlainTextResponse(f"{message}; fix the instrumentation or exporter that wrote them", 400)
    if as_json:
        field = "rejectedSpans" if kind == "traces" else "rejectedLogRecords"
        body = {"partialSuccess": {field: str(len(rejected)), "errorMessage": message}}
        return Response(json.dumps(body).encode(), 200, media_type=JSON)
    return Response(_protobuf(kind, len(rejected), message), 200, media_type=PROTOBUF)
