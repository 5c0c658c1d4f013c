"""The `chat` adapter: a model plus a system prompt is the bot; an optional decision tool sets the final state."""

from __future__ import annotations

__all__ = ["chat_bot_factory"]

from typing import Any

from simulator.bots.base import BotError, BotReply
from simulator.bots.environment import Environment
from simulator.bots.tool_loop import refuse_unparsed, run_tool_turn
from simulator.config.bots import ChatBotConfig
from simulator.config.suite import Suite
from simulator.config.yamlfile import YAMLProblem, read_text_file
from simulator.errors import UserError
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError, ToolSpec
from simulator.providers.hub import ModelClient, ModelHub
from simulator.record.parts import PickPart, TextPart


def _decision_tool(config: ChatBotConfig) -> ToolSpec | None:
    tool = config.decision_tool
    if tool is None:
        return None
    prop: dict[str, Any] = {"type": "string", "description": f"the {tool.field} you decided"}
    if tool.values:
        prop["enum"] = tool.values
    return ToolSpec(
        name=tool.name,
        description=tool.description,
        parameters={"type": "object", "properties": {tool.field: prop}, "required": [tool.field]},
    )


class ChatSession:
    def __init__(
        self,
        client: ModelClient,
        model: str,
        config: ChatBotConfig,
        system: str,
        tool: ToolSpec | None,
        record_raw: bool,
        environment: Environment | None = None,
    ) -> None:
        self._env = environment
        self._client = client
        self._model = model
        self._config = config
        self._system = system
        self._tool = tool
        self._record_raw = record_raw
        self._history: list[ChatMessage] = []
        self._state: dict[str, Any] | None = None

    async def send(self, text: str, turn: int, *, pick: PickPart | None = None) -> BotReply:
        if self._env is not None:
            return await self._send_with_tools(text)
        self._history.append(ChatMessage(role="user", content=text))
        request = ModelRequest(
            model=self._model,
            system=self._system,
            messages=list(self._history),
            max_tokens=self._config.max_tokens,
            temperature=self._config.temperature,
            tools=[self._tool] if self._tool else [],
            stream=self._config.stream,
        )
        try:
            response = await self._client.generate(request)
        except ProviderError as exc:
            raise BotError(f"provider_{exc.kind}", str(exc)) from exc
        refuse_unparsed(list(response.tool_calls), "bot")
        messages = [response.text.strip()] if response.text.strip() else []
        closed = False
        for call in response.tool_calls:
            if self._tool is not None and call.name == self._tool.name:
                self._state = dict(call.arguments)
                closed = not messages  # a decision with no words ends the chat
        if not messages and not closed:
            messages = ["(no reply)"]
        self._history.append(
            ChatMessage(role="assistant", content="\n".join(messages) or "(decision recorded)")
        )
        return BotReply(
            messages=messages,
            closed=closed,
            state=self._state,
            latency_s=response.latency_s,
            time_to_first_token_s=response.time_to_first_token_s,
            usage=response.usage,
            model=response.model or self._model,
            raw=response.raw if self._record_raw else None,
        )

    async def _send_with_tools(self, text: str) -> BotReply:
        """A turn in a suite with an environment: the model gets the environment's tools (and the decision
        tool) and the bounded tool loop runs them (bots/tool_loop.py)."""
        assert self._env is not None
        self._history.append(ChatMessage(role="user", content=text))
        tools = self._env.tool_specs() + ([self._tool] if self._tool else [])
        request = ModelRequest(
            model=self._model,
            system=self._system,
            messages=[],
            max_tokens=self._config.max_tokens,
            temperature=self._config.temperature,
            tools=tools,
            stream=self._config.stream,
        )
        try:
            turn = await run_tool_turn(
                self._client,
                request,
                self._history,
                self._env,
                max_rounds=self._env.spec.max_tool_rounds,
                decision_tool=self._tool.name if self._tool else None,
            )
        except ProviderError as exc:
            raise BotError(f"provider_{exc.kind}", str(exc)) from exc
        parts = turn.parts
        texts = [p for p in parts if isinstance(p, TextPart)]
        closed = turn.decision is not None and not texts
        if turn.decision is not None:
            self._state = turn.decision
        if not texts and not closed:
            parts = [*parts, TextPart(text="(no reply)")]
        last = turn.last
        return BotReply(
            messages=[p.text for p in parts if isinstance(p, TextPart)],
            closed=closed,
            state=self._state,
            latency_s=turn.latency_s,
            time_to_first_token_s=turn.time_to_first_token_s,
            usage=turn.usage,
            model=(last.model if last is not None else "") or self._model,
            raw={"rounds": turn.raw} if self._record_raw else None,
            parts=parts,
        )

    async def final_state(self) -> dict[str, Any] | None:
        return self._state

    async def aclose(self) -> None:
        return None


class ChatBotFactory:
    def __init__(self, config: ChatBotConfig, suite: Suite, hub: ModelHub) -> None:
        self.config = config
        if config.system_prompt_file:
            path = suite.resolve(config.system_prompt_file)
            try:
                self.system = read_text_file(path)
            except YAMLProblem as exc:
                raise UserError(f"the chat bot's system_prompt_file: {exc.problem}") from None
        else:
            self.system = config.system_prompt or ""
        self._client, self._model = hub.client(config.model)
        self._tool = _decision_tool(config)
        self._record_raw = suite.record_raw

    async def open(self, conversation_id: str, environment: Environment | None = None) -> ChatSession:
        return ChatSession(
            self._client, self._model, self.config, self.system, self._tool, self._record_raw, environment
        )


def chat_bot_factory(config: ChatBotConfig, suite: Suite, hub: ModelHub) -> ChatBotFactory:
    """The `chat` kind's factory (config/bots/__init__.py registers it)."""
    return ChatBotFactory(config, suite, hub)
