"""Why an LLM call's span carries no usable messages, and the setting that records them, named as the
instrumentation that made the span takes it.

The instrumentations record no message content by default, each with its own switch: the OpenTelemetry
ones built on `opentelemetry-util-genai` (openai-v2 2.4b0 and later) take
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only|event_only|span_and_event`, and treat the
`true` that openai-v2 2.0b0-2.3b0 took as no content at all; OpenInference records content unless one of
its `OPENINFERENCE_HIDE_*` settings hides it, and then writes `__REDACTED__` or leaves the messages out. The
instrumentation is told by the span's scope (OpenTelemetry's instrumentation scope name and version).
"""

from __future__ import annotations

__all__ = ["REDACTED", "hidden_content", "is_llm_call", "silence_hint"]

from typing import Any

from simulator.traces.messages import Message, part_text

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
REDACTED = "__REDACTED__"  # OpenInference's mask for hidden text
OPENINFERENCE_KIND = "openinference.span.kind"
UTIL_GENAI_SCOPE = "opentelemetry.util.genai"  # openai-v2 2.4b0+, and the other util-genai instrumentations
OPENAI_V2_SCOPE = "opentelemetry.instrumentation.openai_v2"  # openai-v2 before 2.4b0 (its own tracer)
EVENTS_TOO = "export the logs too and import them with the spans (cat traces.jsonl logs.jsonl > both.jsonl)"


LLM_OPERATIONS = {"chat", "text_completion", "generate_content"}  # GenAI operations that call a model


def is_llm_call(attrs: dict[str, Any]) -> bool:
    """A model call's span: OpenInference's LLM span kind, a GenAI inference operation, or (without an
    operation name) a span naming the model it asked. An app's own span that only carries the
    conversation id, an agent's or a tool's, is not one."""
    if attrs.get(OPENINFERENCE_KIND) == "LLM":
        return True
    operation = attrs.get("gen_ai.operation.name")
    if operation is not None:
        return operation in LLM_OPERATIONS
    return "gen_ai.request.model" in attrs or "gen_ai.response.model" in attrs


def hidden_content(
    attrs: dict[str, Any], inputs: list[Message], outputs: list[Message], failed: bool
) -> str | None:
    """The OpenInference setting that hid part of this LLM span's content (then the span cannot be trusted
    for the transcript: hidden replies would leave the conversation unanswered), or None. A failed call
    (`failed`) has no output to hide."""
    if attrs.get(OPENINFERENCE_KIND) != "LLM":
        return None
    for side, messages, prefix in (("INPUT", inputs, "input"), ("OUTPUT", outputs, "output")):
        if any(part_text(p) == REDACTED for m in messages for p in m.parts):
            return f"OPENINFERENCE_HIDE_{side}_TEXT"
        if not messages and not (failed and side == "OUTPUT"):
            hidden_all = attrs.get(f"{prefix}.value") == REDACTED or f"{prefix}.value" not in attrs
            return f"OPENINFERENCE_HIDE_{side}S" if hidden_all else f"OPENINFERENCE_HIDE_{side}_MESSAGES"
    return None


def silence_hint(scope: tuple[str, str], hidden: str | None) -> str:
    """The fix for an LLM call's span recorded without its messages, for the instrumentation that made it."""
    name, version = scope
    seen = f"{name} {version}".strip()
    if hidden is not None:
        return f"unset {hidden} (OpenInference, {seen or 'its instrumentation'}: it hides the messages) and export again"
    if name.startswith(UTIL_GENAI_SCOPE):
        return (
            f"set {CAPTURE}=span_only (the instrumentation seen, {seen}, takes span_only, event_only or "
            f"span_and_event; `true` means no content there) and export again; with event_only, {EVENTS_TOO}"
        )
    if name.startswith(OPENAI_V2_SCOPE):
        return (
            f"set {CAPTURE}=true (the instrumentation seen, {seen}, takes true; it sends the messages as log "
            f"events) and {EVENTS_TOO}"
        )
    if name.startswith("openinference."):
        return f"the OpenInference instrumentation ({seen}) records messages unless an OPENINFERENCE_HIDE_* setting is set: unset it and export again"
    return (
        f"turn on your instrumentation's message capture and export again: {CAPTURE}=span_only for "
        f"instrumentations on opentelemetry-util-genai (openai-v2 2.4b0 and later), {CAPTURE}=true for older "
        f"ones (openai-v2 before 2.4b0, which send them as log events: {EVENTS_TOO})"
    )
