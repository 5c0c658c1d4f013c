"""The `openai_endpoint` adapter: the bot under test *is* a model server speaking the OpenAI chat API.

A team's fine-tuned or proxied model with its own tools: the engine sends the conversation as chat
messages through the real `openai` SDK (system prompt, user and assistant turns, the tools the suite
lists) and records what comes back as parts, in order: each tool call the server returns is a `tool_call`
part, then the text. When the server asks for tool results (tool calls and no text), the engine answers
each call with the suite's canned result for that tool (`tool_results`), recorded as the part's result, or
an error saying none is configured, and asks again, at most `max_tool_rounds` times per turn. A tool named
by `state_tool` sets the final state (its arguments), as the chat adapter's decision tool does.
"""

from __future__ import annotations

__all__ = ["OpenAIEndpointFactory", "OpenAIEndpointSession", "openai_endpoint_bot_factory"]

import asyncio
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai

from simulator.bots.base import BotError, BotReply
from simulator.bots.capped_transport import AnswerRefused, capped_client
from simulator.bots.reply_check import MAX_REPLY_BYTES
from simulator.bots.service import BotProcess, StartOnce, fill, placeholder_values
from simulator.config.bots.openai_endpoint import OpenAIEndpointBotConfig
from simulator.errors import UserError
from simulator.record.parts import Part, PickPart, TextPart, ToolCallPart
from simulator.record.redact import redact, register_secrets
from simulator.record.transcript import Usage

if TYPE_CHECKING:
    from simulator.config.suite import Suite
    from simulator.providers.hub import ModelHub

MAX_TOOL_ROUNDS = 4
_NO_RESULT = "the simulator has no result for this tool (set bot.tool_results.{name} in the suite)"


def _arguments(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"_unparsed": text}
    return value if isinstance(value, dict) else {"_value": value}


class OpenAIEndpointSession:
    """One conversation: the chat history sent to the server each turn."""

    def __init__(self, factory: OpenAIEndpointFactory) -> None:
        self._factory = factory
        self._config = factory.config
        self._history: list[dict[str, Any]] = []
        if self._config.system_prompt:
            self._history.append({"role": "system", "content": self._config.system_prompt})
        self._state: dict[str, Any] | None = None

    async def _ask(self) -> Any:
        config = self._config
        kwargs: dict[str, Any] = {
            "model": config.model,
            "messages": list(self._history),
            "max_tokens": config.max_tokens,
        }
        if config.temperature is not None:
            kwargs["temperature"] = config.temperature
        if config.tools:
            kwargs["tools"] = [{"type": "function", "function": tool} for tool in config.tools]
        try:
            # The whole answer's deadline, not only each read's: a server that sends its headers and then
            # a byte at a time (or never ends its stream) is cut at `timeout_s`.
            async with asyncio.timeout(config.timeout_s):
                return await self._factory.client.chat.completions.create(**kwargs)
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
            note = self._factory.process.death_note() if self._factory.process else None
            raise BotError("connection", note or f"cannot reach {self._factory.base_url}: {exc}") from exc
        except openai.APIStatusError as exc:
            raise BotError(
                "http_status", f"the model server answered HTTP {exc.status_code}: {redact(str(exc))[:200]}"
            ) from exc
        except openai.APIError as exc:
            raise BotError(
                "invalid_reply", f"the model server's answer could not be read: {redact(str(exc))[:200]}"
            ) from exc

    def _tool_part(self, call: Any) -> tuple[ToolCallPart, dict[str, Any]]:
        """The recorded part of one tool call, and the tool message that answers it."""
        name = call.function.name
        arguments = _arguments(call.function.arguments)
        if name == self._config.state_tool:
            self._state = dict(arguments)
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
        self._history.append({"role": "user", "content": text})
        parts: list[Part] = []
        usage = Usage()
        start = time.perf_counter()
        model = None
        for _ in range(self._config.max_tool_rounds + 1):
            response = await self._ask()
            model = response.model or model
            if response.usage is not None:
                usage = usage + Usage(
                    input_tokens=response.usage.prompt_tokens,
                    output_tokens=response.usage.completion_tokens,
                    calls=1,
                )
            if not response.choices:
                raise BotError("invalid_reply", "the model server answered with no choices")
            message = response.choices[0].message
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

    async def final_state(self) -> dict[str, Any] | None:
        return self._state

    async def aclose(self) -> None:
        return None


class OpenAIEndpointFactory:
    """One SDK client (and, with bot.start, the model server the suite starts) for every conversation."""

    def __init__(self, config: OpenAIEndpointBotConfig, base_dir: Path) -> None:
        self.config = config
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
            http_client=capped_client(MAX_REPLY_BYTES, config.timeout_s),
        )
        self.process = BotProcess(config.start, base_dir, values, self.base_url) if config.start else None
        self._once = StartOnce()

    async def start(self, log_dir: Path | None = None) -> None:
        """Start the model server (bot.start) and wait until it is ready, once."""
        process = self.process
        if process is not None:
            await self._once.run(lambda: process.start(log_dir))

    async def open(self, conversation_id: str) -> OpenAIEndpointSession:
        try:
            await self.start()
        except UserError as exc:
            raise BotError("start", str(exc)) from exc
        return OpenAIEndpointSession(self)

    async def aclose(self) -> None:
        if self.process is not None:
            await self.process.stop()
        await self.client.close()


def openai_endpoint_bot_factory(
    config: OpenAIEndpointBotConfig, suite: Suite, hub: ModelHub
) -> OpenAIEndpointFactory:
    """The `openai_endpoint` kind's factory (config/bots/openai_endpoint.py registers it)."""
    return OpenAIEndpointFactory(config, suite.base_dir)
