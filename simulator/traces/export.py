"""`simulator export-otel`: a run's conversations as OpenTelemetry GenAI spans and its verdicts as
`gen_ai.evaluation.result` events, to an OTLP JSON file or an OTLP/HTTP endpoint (the real SDK exporter).

Each conversation is an `invoke_agent` span; each bot turn a child `chat` span whose
`gen_ai.input.messages` holds the history and `gen_ai.output.messages` the reply, as instrumented
applications write them, so `simulator import` reads an export back into the same transcripts.
"""

from __future__ import annotations

__all__ = ["export_run"]

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from simulator.errors import UserError
from simulator.record.folder import RunFolder, latest_by_id
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.parts import TextPart, ToolCallPart
from simulator.record.selection import select_verdicts
from simulator.record.transcript import Turn


def _ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1e9)


def _genai_parts(turn: Turn) -> list[dict[str, Any]]:
    """A turn's parts as GenAI message parts: text as `text`, a tool call as `tool_call` followed by its
    `tool_call_response`; options, picks, media and events as generic parts carrying the record's fields
    (the conventions allow parts of other types), so `simulator import` reads them back as they were."""
    out: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, TextPart):
            out.append({"type": "text", "content": part.text})
        elif isinstance(part, ToolCallPart):
            call_id = part.id or f"call_{turn.index}_{len(out)}"
            out.append({"type": "tool_call", "id": call_id, "name": part.name, "arguments": part.arguments})
            response = {"error": part.error} if part.error is not None else part.result
            out.append({"type": "tool_call_response", "id": call_id, "response": response})
        else:
            out.append(part.model_dump(mode="json", exclude_none=True))
    return out


def _messages(turns: list[Turn]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in turns:
        if turn.role == "user":
            if turn.is_text_only:
                out += [{"role": "user", "parts": [{"type": "text", "content": m}]} for m in turn.messages]
            else:
                out.append({"role": "user", "parts": _genai_parts(turn)})
        else:
            out.append(_reply(turn))
    return out


def _reply(turn: Turn) -> dict[str, Any]:
    parts = list((turn.raw or {}).get("parts", [])) if isinstance(turn.raw, dict) else []
    return {"role": "assistant", "parts": parts + _genai_parts(turn), "finish_reason": "stop"}


def _tool_spans(tracer: Any, context: Any, turn: Turn, common: dict[str, Any]) -> None:
    """One `execute_tool` span per tool call of a bot turn (OTel GenAI's tool-execution span)."""
    for part in turn.parts:
        if not isinstance(part, ToolCallPart):
            continue
        attrs: dict[str, Any] = {
            **common,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": part.name,
            "gen_ai.tool.call.arguments": json.dumps(part.arguments, ensure_ascii=False, default=str),
        }
        if part.id:
            attrs["gen_ai.tool.call.id"] = part.id
        if part.error is not None:
            attrs["error.type"] = "tool_error"
        else:
            attrs["gen_ai.tool.call.result"] = json.dumps(part.result, ensure_ascii=False, default=str)
        start = _ns(part.started_at or turn.started_at)
        span = tracer.start_span(
            f"execute_tool {part.name}", context=context, start_time=start, attributes=attrs
        )
        if part.error is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, part.error))
        span.end(end_time=start + int((part.latency_s or 0.0) * 1e9))


def _evaluation(verdict: Verdict) -> dict[str, Any] | None:
    """A verdict as the attributes of a `gen_ai.evaluation.result` event (None for `not_judged`)."""
    if verdict.result == "not_judged":
        return None
    attrs: dict[str, Any] = {"gen_ai.evaluation.name": verdict.criterion_id}
    if verdict.result == "error":
        attrs["error.type"] = verdict.error.kind if verdict.error else "error"
    else:
        attrs["gen_ai.evaluation.score.label"] = verdict.result
    if verdict.score is not None:
        attrs["gen_ai.evaluation.score.value"] = verdict.score
    quotes = "; ".join(json.dumps(e.quote, ensure_ascii=False) for e in verdict.evidence)
    explanation = verdict.reasoning + (f" Evidence: {quotes}" if quotes else "")
    if explanation.strip():
        attrs["gen_ai.evaluation.explanation"] = explanation.strip()
    return attrs


def _provider(bot: str) -> tuple[str | None, str]:
    """`chat:openai:gpt-4o` -> ("openai", "gpt-4o"); anything else is the model name as it is."""
    parts = bot.split(":")
    if parts[0] == "chat" and len(parts) >= 3:
        return parts[1], ":".join(parts[2:])
    return None, bot


def _conversation(tracer: Any, record: ConversationRecord, verdicts: list[Verdict]) -> None:
    from opentelemetry import trace

    provider, model = _provider(record.bot or "unknown")
    common: dict[str, Any] = {"gen_ai.conversation.id": record.id, "gen_ai.request.model": model}
    if provider:
        common["gen_ai.provider.name"] = provider
    root = tracer.start_span(
        "invoke_agent simulator",
        start_time=_ns(record.started_at),
        attributes={
            **common,
            "gen_ai.operation.name": "invoke_agent",
            "simulator.scenario_id": record.scenario_id,
        },
    )
    context = trace.set_span_in_context(root)
    system = (record.turns[0].raw or {}).get("system_instructions") if record.turns else None
    for position, turn in enumerate(record.turns):
        if turn.role != "bot":
            continue
        attrs = {
            **common,
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(_messages(record.turns[:position]), ensure_ascii=False),
            "gen_ai.output.messages": json.dumps([_reply(turn)], ensure_ascii=False),
        }
        if system:
            attrs["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": t} for t in system])
        start = _ns(turn.started_at)
        span = tracer.start_span(f"chat {model}", context=context, start_time=start, attributes=attrs)
        _tool_spans(tracer, trace.set_span_in_context(span), turn, common)
        span.end(end_time=start + int(turn.latency_s * 1e9))
    if record.turns and record.turns[-1].role == "user":
        # The user spoke last: no chat span holds that message, so the root carries the whole transcript.
        root.set_attribute("gen_ai.input.messages", json.dumps(_messages(record.turns), ensure_ascii=False))
    for verdict in verdicts:
        event = _evaluation(verdict)
        if event is not None:
            root.add_event("gen_ai.evaluation.result", attributes=event)
    root.end(end_time=max(_ns(record.ended_at), _ns(record.started_at)))


def export_run(run: Path, out: Path | None = None, endpoint: str | None = None) -> tuple[int, int]:
    """Export a run; return (conversations, evaluation events). Exactly one of `out` and `endpoint`."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        raise UserError("export-otel needs OpenTelemetry: pip install 'simulator[otel]'") from None
    folder = RunFolder.open(run)
    manifest = folder.read_manifest()
    # The verdicts `simulator report` counts (record/selection.py); the fidelity checks, written first, first.
    selection = select_verdicts(folder)
    verdicts: dict[str, list[Verdict]] = {}
    for verdict in [*selection.fidelity, *selection.verdicts]:
        verdicts.setdefault(verdict.conversation_id, []).append(verdict)
    memory = InMemorySpanExporter()
    resource = Resource.create({"service.name": "simulator", "simulator.run_id": manifest.run_id})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("simulator.export")
    records = list(latest_by_id(folder.conversations()).values())
    events = 0
    for record in records:
        chosen = verdicts.get(record.id, [])
        events += sum(_evaluation(v) is not None for v in chosen)
        _conversation(tracer, record, chosen)
    provider.shutdown()
    spans = memory.get_finished_spans()
    if endpoint:
        _send(spans, endpoint)
    if out:
        from simulator.traces.otlp_json import spans_to_json

        out.parent.mkdir(parents=True, exist_ok=True)
        from simulator.record.redact import safe_json

        out.write_text(safe_json(spans_to_json(spans), ensure_ascii=False) + "\n", encoding="utf-8")
    return len(records), events


def _send(spans: Any, endpoint: str) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    url = endpoint if endpoint.rstrip("/").endswith("/v1/traces") else endpoint.rstrip("/") + "/v1/traces"
    exporter = OTLPSpanExporter(endpoint=url, timeout=10)
    try:
        result = exporter.export(spans)
    finally:
        exporter.shutdown()
    if result is not SpanExportResult.SUCCESS:
        raise UserError(
            f"--endpoint {url}: the collector did not accept the spans; check the URL and that it is running"
        )
