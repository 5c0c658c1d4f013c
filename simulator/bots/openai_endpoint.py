"""The `openai_endpoint` adapter: the bot under test *is* a model server speaking the OpenAI chat API.

A team's fine-tuned or proxied model with its own tools: the engine sends the conversation as chat
messages through the real `openai` SDK (system prompt, user and assistant turns, the tools the suite
lists) and records what comes back as parts, in order: each tool call the server returns is a `tool_call`
part, then the text. When the server asks for tool results (tool calls and no text), the engine answers
each call with the suite's canned result for that tool (`tool_results`), recorded as the part's result, or
an error saying none is configured, and asks again, at most `max_tool_rounds` times per turn. A tool named
by `state_tool` sets the final state (its arguments), as the chat adapter's decision tool does; a value of
the suite's outcome key that is not one of `outcome.levels` is a bot error, never judged, and so is any
tool call whose arguments are not JSON text of an object.

In a suite with an `environment:` the server is offered the environment's tools (with the bot's own
`tools`) and its calls run against the conversation's stateful world through the tool loop the chat
adapter uses (bots/tool_loop.py): two model servers compare on the same world and the same final-state
checks (docs/environment.md).
"""

from __future__ import annotations

__all__ = ["OpenAIEndpointFactory", "openai_endpoint_bot_factory"]

import asyncio
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion

from simulator.bots.base import BotError, BotReply
from simulator.bots.capped_transport import AnswerRefused, capped_client
from simulator.bots.environment import Environment
from simulator.bots.service import BotProcess, StartOnce, death_of, fill, placeholder_values
from simulator.bots.tool_loop import run_tool_turn
from simulator.config.bots.openai_endpoint import OpenAIEndpointBotConfig
from simulator.errors import UserError
from simulator.jsonbounds import JSONRefused, json_kind, loads_bounded
from simulator.providers._answer import BadCount, usage_counts
from simulator.providers.base import ChatMessage, ModelRequest, ModelResponse, ToolCall, ToolSpec
from simulator.providers.openai import wire_message
from simulator.record.parts import Part, PickPart, TextPart, ToolCallPart
from simulator.record.redact import redact, register_secrets
from simulator.record.transcript import Usage

if TYPE_CHECKING:
    from simulator.config.suite import OutcomeConfig, Suite
    from simulator.providers.hub import ModelHub

MAX_TOOL_ROUNDS = 4
_NO_RESULT = "the simulator has no result for this tool (set bot.tool_results.{name} in the suite)"


def _arguments(text: str) -> dict[str, Any]:
    """A call's arguments, already checked by `_arguments_rule` (an empty string is no arguments)."""
    value: dict[str, Any] = loads_bounded(text or "{}", "the arguments")
    return value


def _arguments_rule(text: str) -> str | None:
    """The rule a call's `arguments` break, or None: JSON text of an object (`""` is taken as no
    arguments, as some servers send it). Not JSON, or JSON that is not an object (a list, a number, a
    string), is the server's malformed answer: never recorded as a call, never run, never a decision."""
    try:
        value = loads_bounded(text or "{}", "the arguments")
    except JSONRefused as exc:  # not JSON, too deep, NaN, huge numbers
        return f"must be JSON text of an object ({exc}): got {redact(text)[:80]!r}"
    if not isinstance(value, dict):
        return f"must be JSON text of an object, not {json_kind(value)}: got {redact(text)[:80]!r}"
    return None


def _broken_rule(response: Any) -> str | None:
    """The chat API rule the answer breaks, for the fields this adapter reads (the SDK builds its objects
    from any JSON without checking them, so a wrong shape would surface later as an AttributeError)."""
    choices = response.choices
    if not isinstance(choices, list) or not choices:
        return "`choices` must be a non-empty list"
    message = getattr(choices[0], "message", None)
    if message is None or not hasattr(message, "content"):
        return "`choices[0].message` must be an object"
    if message.content is not None and not isinstance(message.content, str):
        return "`choices[0].message.content` must be a string or null"
    calls = message.tool_calls
    if calls is not None and not isinstance(calls, list):
        return "`choices[0].message.tool_calls` must be a list"
    for n, call in enumerate(calls or []):
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if not isinstance(name, str) or not name:
            return f"`tool_calls[{n}].function.name` must be a non-empty string"
        arguments = getattr(function, "arguments", None)
        if not isinstance(arguments, str):
            return f"`tool_calls[{n}].function.arguments` must be a string (JSON text)"
        broken = _arguments_rule(arguments)
        if broken is not None:
            return f"`tool_calls[{n}].function.arguments` of {name} {broken}"
    usage = response.usage
    if usage is None:
        return None
    if not isinstance(usage, CompletionUsage):
        return "`usage` must be an object whose `prompt_tokens` and `completion_tokens` are token counts"
    try:  # the providers' rule for a count: never a negative, fractional or absurd figure in a run's cost
        usage_counts({key: getattr(usage, key, None) for key in _COUNTED}, _COUNTED)
    except BadCount as exc:
        return f"`usage` must hold token counts: {exc}"
    return None


_COUNTED = ("prompt_tokens", "completion_tokens")


def _first_message(response: Any) -> Any:
    return response.choices[0].message


def _usage(response: Any) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage()
    return Usage(
        input_tokens=getattr(usage, "prompt_tokens", None) or 0,
        output_tokens=getattr(usage, "completion_tokens", None) or 0,
        calls=1,
    )


class OpenAIEndpointSession:
    """One conversation: the chat history sent to the server each turn."""

    def __init__(self, factory: OpenAIEndpointFactory, environment: Environment | None = None) -> None:
        self._factory = factory
        self._config = factory.config
        self._env = environment
        self._history: list[dict[str, Any]] = []
        if self._config.system_prompt:
            self._history.append({"role": "system", "content": self._config.system_prompt})
        self._turns: list[ChatMessage] = []  # the history in the tool loop's form (with an environment)
        self._state: dict[str, Any] | None = None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """One request of the tool loop (bots/tool_loop.py) sent to the server; its answer as the loop reads it."""
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [wire_message(m) for m in request.messages]
        tools = [
            {"name": t.name, "description": t.description, "parameters": t.parameters} for t in request.tools
        ]
        start = time.perf_counter()
        response = await self._ask(messages, tools)
        message = _first_message(response)
        return ModelResponse(
            text=message.content or "",
            tool_calls=[
                ToolCall.from_json(call.function.name, call.function.arguments, call.id)
                for call in message.tool_calls or []
            ],
            usage=_usage(response),
            latency_s=time.perf_counter() - start,
            model=response.model or self._config.model,
        )

    async def _ask(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        config = self._config
        kwargs: dict[str, Any] = {
            "model": config.model,
            "messages": messages,
            "max_tokens": config.max_tokens,
        }
        if config.temperature is not None:
            kwargs["temperature"] = config.temperature
        if tools:
            kwargs["tools"] = [{"type": "function", "function": tool} for tool in tools]
        try:
            # The whole answer's deadline, not only each read's: a server that sends its headers and then
            # a byte at a time (or never ends its stream) is cut at `timeout_s`.
            async with asyncio.timeout(config.timeout_s):
                answer = await self._factory.client.chat.completions.create(**kwargs)
        except TimeoutError as exc:
            raise BotError(
                "timeout",
                f"the model server did not finish its answer within {config.timeout_s:g} s (bot.timeout_s, "
                "the whole answer's deadline)",
            ) from exc
        except AnswerRefused as exc:  # the capped client cut the answer (capped_transport.py)
            raise BotError("invalid_reply", f"the model server's {str(exc).removeprefix('the ')}") from exc
        except openai.APITimeoutError as exc:
            raise BotError(
                "timeout", f"the model server did not answer within {config.timeout_s:g} s"
            ) from exc
        except openai.APIConnectionError as exc:
            note = await death_of(self._factory.process)
            raise BotError(
                "connection",
                note
                or f"the model server at {self._factory.base_url} could not be reached or dropped the "
                f"connection; check that it runs there ({exc})",
            ) from exc
        except openai.APIStatusError as exc:
            raise BotError(
                "http_status", f"the model server answered HTTP {exc.status_code}: {redact(str(exc))[:200]}"
            ) from exc
        except openai.APIError as exc:
            raise BotError(
                "invalid_reply", f"the model server's answer could not be read: {redact(str(exc))[:200]}"
            ) from exc
        if not isinstance(answer, ChatCompletion):
            # The SDK hands back the text of an answer that is not JSON (an HTML page from a proxy, a login).
            shown = redact(str(answer)).strip()[:120]
            raise BotError(
                "invalid_reply",
                f"the model server answered {self._factory.base_url}/chat/completions with something that is "
                f"not a chat completion (the OpenAI chat API answers a JSON object with `choices`): {shown!r}",
            )
        rule = _broken_rule(answer)
        if rule is not None:
            raise BotError("invalid_reply", f"the model server's answer breaks the OpenAI chat API: {rule}")
        return answer

    def _tool_part(self, call: Any) -> tuple[ToolCallPart, dict[str, Any]]:
        """The recorded part of one tool call, and the tool message that answers it."""
        name = call.function.name
        arguments = _arguments(call.function.arguments)
        if name == self._config.state_tool:
            self._state = self._factory.checked_state(arguments)
        results = self._config.tool_results
        part = ToolCallPart(name=name, arguments=arguments, id=call.id, started_at=datetime.now(UTC))
        if name in results:
            part.result = results[name]
            content = json.dumps(results[name])
        elif name == self._config.state_tool:
            part.result = {"recorded": True}
            content = json.dumps(part.result)
        else:
            part.error = _NO_RESULT.format(name=name)
            content = json.dumps({"error": part.error})
        return part, {"role": "tool", "tool_call_id": call.id, "content": content}

    async def send(self, text: str, turn: int, *, pick: PickPart | None = None) -> BotReply:
        if self._env is not None:
            return await self._send_in_world(text)
        self._history.append({"role": "user", "content": text})
        parts: list[Part] = []
        usage = Usage()
        start = time.perf_counter()
        model = None
        for _ in range(self._config.max_tool_rounds + 1):
            response = await self._ask(list(self._history), self._config.tools)
            model = response.model or model
            usage = usage + _usage(response)
            message = _first_message(response)
            calls = list(message.tool_calls or [])
            self._history.append(message.model_dump(exclude_none=True))
            answers = []
            for call in calls:
                part, answer = self._tool_part(call)
                parts.append(part)
                answers.append(answer)
            # Every tool call is answered in the history (the chat API requires it before the next request).
            self._history.extend(answers)
            content = (message.content or "").strip()
            if content:
                parts.append(TextPart(text=content))
            if content or not calls:
                break  # a reply; tool calls with no text ask for their results: ask again with them
        else:
            raise BotError(
                "tool_loop",
                f"the model server still asked for tools after {self._config.max_tool_rounds} rounds (bot.max_tool_rounds)",
            )
        if not parts:
            parts.append(TextPart(text="(no reply)"))
        return BotReply(
            messages=[p.text for p in parts if isinstance(p, TextPart)],
            state=self._state,
            latency_s=time.perf_counter() - start,
            usage=usage,
            model=model or self._config.model,
            parts=parts,
        )

    async def _send_in_world(self, text: str) -> BotReply:
        """A turn in a suite with an environment: the environment's tools and the bot's own, run by the tool
        loop against the conversation's world; the state tool's arguments set the final state."""
        assert self._env is not None
        config = self._config
        self._turns.append(ChatMessage(role="user", content=text))
        own = [
            ToolSpec(
                name=t["name"],
                description=t.get("description") or t["name"],
                parameters=t.get("parameters") or {"type": "object"},
            )
            for t in config.tools
        ]
        named = {t.name for t in self._env.tool_specs()}
        request = ModelRequest(
            model=config.model,
            system=config.system_prompt,
            messages=[],
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            tools=self._env.tool_specs() + [t for t in own if t.name not in named],
        )
        turn = await run_tool_turn(
            self,
            request,
            self._turns,
            self._env,
            max_rounds=config.max_tool_rounds,
            decision_tool=config.state_tool,
        )
        if turn.decision is not None:
            self._state = self._factory.checked_state(turn.decision)
        parts: list[Part] = list(turn.parts)
        if not any(isinstance(p, TextPart) for p in parts):
            parts.append(TextPart(text="(no reply)"))
        return BotReply(
            messages=[p.text for p in parts if isinstance(p, TextPart)],
            state=self._state,
            latency_s=turn.latency_s,
            usage=turn.usage,
            model=(turn.last.model if turn.last else None) or config.model,
            parts=parts,
        )

    async def final_state(self) -> dict[str, Any] | None:
        return self._state

    async def aclose(self) -> None:
        return None


class OpenAIEndpointFactory:
    """One SDK client (and, with bot.start, the model server the suite starts) for every conversation."""

    def __init__(
        self,
        config: OpenAIEndpointBotConfig,
        base_dir: Path,
        outcome: OutcomeConfig | None = None,
        *,
        suite: Suite | None = None,
    ) -> None:
        self.config = config
        self.outcome = outcome
        values = placeholder_values(config.start is not None)
        self.base_url = fill(config.base_url, values, "bot.base_url")
        key = "not-needed"
        if config.api_key_env:
            key = os.environ.get(config.api_key_env, "")
            if not key:
                raise UserError(
                    f"bot.api_key_env names {config.api_key_env}, which is not set; set it or remove api_key_env"
                )
            register_secrets([key])
        # The answer's size is capped below the SDK, which reads the whole body itself (capped_transport.py).
        self.client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=key,
            timeout=config.timeout_s,
            max_retries=0,
            http_client=capped_client(config.max_reply_bytes, config.timeout_s),
        )
        self.process = (
            BotProcess(config.start, base_dir, values, self.base_url, url_field="bot.base_url", suite=suite)
            if config.start
            else None
        )
        self._once = StartOnce()

    async def start(self, log_dir: Path | None = None) -> None:
        """Start the model server (bot.start) and wait until it is ready, once."""
        process = self.process
        if process is not None:
            await self._once.run(lambda: process.start(log_dir))

    async def open(
        self, conversation_id: str, environment: Environment | None = None
    ) -> OpenAIEndpointSession:
        try:
            await self.start()
        except UserError as exc:
            raise BotError("start", str(exc)) from exc
        return OpenAIEndpointSession(self, environment)

    def checked_state(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The state tool's arguments as the final state; its outcome value must be one of the suite's levels
        (a list, a number or an unknown word is the bot's error, never judged)."""
        outcome = self.outcome
        if outcome is not None and outcome.key in arguments and arguments[outcome.key] not in outcome.levels:
            raise BotError(
                "invalid_reply",
                f"the state tool {self.config.state_tool} set {outcome.key} to "
                f"{json.dumps(arguments[outcome.key], default=str)[:80]}: it must be one of the suite's "
                f"outcome.levels {outcome.levels}",
            )
        return dict(arguments)

    async def aclose(self) -> None:
        if self.process is not None:
            await self.process.stop()
        await self.client.close()


def openai_endpoint_bot_factory(
    config: OpenAIEndpointBotConfig, suite: Suite, hub: ModelHub
) -> OpenAIEndpointFactory:
    """The `openai_endpoint` kind's factory (config/bots/openai_endpoint.py registers it)."""
    return OpenAIEndpointFactory(config, suite.base_dir, suite.outcome, suite=suite)
