"""Structured output from any model: ask for a JSON object of a pydantic model's shape, validate it, and on an
invalid answer retry once, showing the model what was wrong. Judges, the simulated user's audit, pairwise
judging and the proposal writer all ask this way."""

from __future__ import annotations

__all__ = ["Answer", "ask_validated", "parse_output"]

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from simulator.providers.base import ChatMessage, ModelRequest, ModelResponse, json_object_in
from simulator.providers.hub import ModelClient
from simulator.record.transcript import Usage

T = TypeVar("T", bound=BaseModel)

_CORRECTION = """\
Your answer could not be used: {problem}.
Answer again about the same input, with one JSON object only, no other text:
{form}"""


def parse_output(response: ModelResponse, model: type[T]) -> tuple[T | None, str]:
    """The validated output, or None and what was wrong with it (shown to the model in the retry)."""
    data = response.parsed if response.parsed is not None else json_object_in(response.text)
    if data is None:
        shown = response.text.strip()[:120] or "(an empty answer)"
        return None, f"it is not a JSON object (it began: {shown!r})"
    if not isinstance(data, dict):
        return None, f"it is a JSON {type(data).__name__}, not an object"
    try:
        return model.model_validate(data), ""
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'the object'}: {e['msg']}" for e in exc.errors()[:5]
        )
        return None, f"it does not match the required format ({problems})"


@dataclass
class Answer(Generic[T]):
    """A validated structured answer (or None), what was wrong with the last one, and what it cost."""

    output: T | None
    problem: str
    text: str
    usage: Usage
    latency_s: float


async def ask_validated(client: ModelClient, request: ModelRequest, model: type[T], form: str) -> Answer[T]:
    """Ask for structured output; on an invalid answer, retry once showing the model its error and `form`.

    Provider failures (after the client's own retries) propagate as ProviderError.
    """
    response = await client.generate(request)
    usage, latency = response.usage, response.latency_s
    output, problem = parse_output(response, model)
    if output is None:
        retry = request.model_copy(
            update={
                "messages": [
                    *request.messages,
                    ChatMessage(role="assistant", content=response.text.strip() or "(empty)"),
                    ChatMessage(role="user", content=_CORRECTION.format(problem=problem, form=form)),
                ]
            }
        )
        response = await client.generate(retry)
        usage, latency = usage + response.usage, latency + response.latency_s
        output, problem = parse_output(response, model)
    return Answer(output, problem, response.text, usage, latency)
