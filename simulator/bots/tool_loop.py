"""One bot turn of a model that uses tools: ask, run the tools it calls, send the results back, ask again.

The loop is bounded: after `max_rounds` rounds of tool calls, a further call is not run; it is recorded as
a `tool_call` part whose `error` says the limit was reached, and the turn ends. Every call the model makes
is a part of the turn, in the order it happened, with the text the model wrote between calls. A tool that
fails, times out or gets bad arguments answers the model with the error (as the APIs' `is_error` results)
and is recorded the same way: data, never a pass.
"""

from __future__ import annotations

__all__ = ["refuse_unparsed", "run_tool_turn"]

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from simulator.bots.base import BotError
from simulator.bots.environment import Environment
from simulator.providers.base import ChatMessage, ModelRequest, ModelResponse, ToolCall
from simulator.record.parts import Part, TextPart
from simulator.record.transcript import Usage


class Generates(Protocol):
    """What the loop asks: a provider's client (providers/hub.py), or a bot that is a model server
    (bots/openai_endpoint.py)."""

    async def generate(self, request: ModelRequest) -> ModelResponse: ...


@dataclass
class ToolTurn:
    """What one turn of the loop produced: its parts, the last response, the decision (if the model called
    the decision tool), and the cost and time of every model call."""

    parts: list[Part] = field(default_factory=list)
    decision: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    time_to_first_token_s: float | None = None
    last: ModelResponse | None = None
    raw: list[dict[str, Any]] = field(default_factory=list)


def _with_ids(calls: list[ToolCall], round_number: int) -> list[ToolCall]:
    """Every call with an id (a server that sends none gets one made up), so each result can name it."""
    return [
        call if call.id else call.model_copy(update={"id": f"call_{round_number}_{n}"})
        for n, call in enumerate(calls)
    ]


def _result_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def refuse_unparsed(calls: list[ToolCall], side: Literal["bot", "user"]) -> None:
    """A bot's call whose arguments are not JSON text of an object is a malformed reply (`invalid_reply`),
    whichever tool it calls: read as no arguments, a decision tool's call was recorded as no decision and
    counted as under-triage (as the openai_endpoint adapter refuses it too). The simulated user's is left
    to the environment, which answers it with an error the user's model can read."""
    if side != "bot":
        return
    for call in calls:
        text = call.unparsed
        if text is not None:
            shown = text if len(text) <= 80 else text[:80] + "..."
            raise BotError(
                "invalid_reply",
                f"the model called {call.name} with arguments that are not JSON text of an object "
                f"({shown!r}); the call was not run and decides nothing",
            )


async def run_tool_turn(
    client: Generates,
    request: ModelRequest,
    history: list[ChatMessage],
    environment: Environment,
    *,
    max_rounds: int,
    decision_tool: str | None = None,
    side: Literal["bot", "user"] = "bot",
) -> ToolTurn:
    """Run one bot turn; `history` (ending with the user's message) grows with the assistant's messages and
    the tool results, as each provider's API expects them next turn."""
    turn = ToolTurn()
    start = time.perf_counter()
    for round_number in range(max_rounds + 1):
        response = await client.generate(request.model_copy(update={"messages": list(history)}))
        turn.last = response
        turn.usage = turn.usage + response.usage
        if turn.time_to_first_token_s is None and response.time_to_first_token_s is not None:
            turn.time_to_first_token_s = time.perf_counter() - start - response.latency_s
            turn.time_to_first_token_s += response.time_to_first_token_s
        turn.raw.append(response.raw)
        text = response.text.strip()
        if text:
            turn.parts.append(TextPart(text=text))
        calls = _with_ids(response.tool_calls, round_number)
        refuse_unparsed(calls, side)
        for call in calls:
            if decision_tool is not None and call.name == decision_tool:
                turn.decision = dict(call.arguments)
        acting = [c for c in calls if c.name != decision_tool]
        if not acting:
            history.append(ChatMessage(role="assistant", content=text or "(decision recorded)"))
            break
        history.append(ChatMessage(role="assistant", content=text, tool_calls=tuple(calls)))
        for call in calls:
            if call.name == decision_tool:
                history.append(ChatMessage(role="tool", content="recorded", tool_call_id=call.id))
                continue
            if round_number == max_rounds:
                part = environment.refuse(
                    call.name,
                    call.arguments,
                    f"not run: the {side} reached max_tool_rounds ({max_rounds}) in this turn",
                    side=side,
                )
            else:
                part = await environment.acall(call.name, call.arguments, side=side)
            turn.parts.append(part)
            failed = part.error is not None
            content = f"ERROR: {part.error}" if failed else _result_text(part.result)
            history.append(ChatMessage(role="tool", content=content, tool_call_id=call.id, is_error=failed))
    turn.latency_s = time.perf_counter() - start
    return turn
