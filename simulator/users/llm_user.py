"""An LLM playing the user: roles flipped so the model writes the user's side of the chat."""

from __future__ import annotations

__all__ = ["LLMUser"]

import re
from typing import Literal

from simulator.bots.environment import Environment
from simulator.bots.tool_loop import run_tool_turn
from simulator.providers.base import ChatMessage, ModelRequest, ModelResponse
from simulator.providers.hub import ModelClient
from simulator.record.parts import Option, PickPart, ToolCallPart, last_options, part_text
from simulator.record.transcript import Turn, Usage
from simulator.text.character import character_break_reason
from simulator.users.base import END, CharacterBreak, UserMessage
from simulator.users.prompt import OPENING_CUE

# How the user model taps an option; shown to it only when the bot offers some (text bots: no change).
PICK_HINT = (
    "(To tap one of these options, reply with [pick: ID] using its id; you may type a message after it. "
    "Or just type, as this person would.)"
)
_PICK = re.compile(r"^\s*\[(?:pick|tap)\s*:\s*([^\]]+?)\s*\]\s*(.*)$", re.IGNORECASE | re.DOTALL)


def seen_by_user(turn: Turn) -> str:
    """What the person sees of a turn: the bot's text, options and media (never its tool calls), with the
    hint on how to tap; their own turns as they wrote them ([pick: id] for a tap)."""
    if turn.is_text_only:
        return turn.text
    if turn.role == "user":
        return "\n".join(
            f"[pick: {p.id}]" if isinstance(p, PickPart) else part_text(p)
            for p in turn.parts
            if not isinstance(p, ToolCallPart)
        )
    lines = [part_text(p) for p in turn.parts if not isinstance(p, ToolCallPart)]
    if last_options(turn.parts):
        lines.append(PICK_HINT)
    return "\n".join(lines)


def read_pick(text: str, offered: list[Option]) -> tuple[PickPart | None, str]:
    """The option a `[pick: ID]` answer names (by id, or by title when the model wrote that), and the text
    typed after it. A pick that names no offered option is kept with `offered` False: a fidelity fail."""
    match = _PICK.match(text)
    if match is None:
        return None, text
    wanted, typed = match.group(1).strip(), match.group(2).strip()
    for option in offered:
        if wanted == option.id or wanted.casefold() == option.title.casefold():
            return PickPart(id=option.id, title=option.title), typed or option.title
    return PickPart(id=wanted, title=wanted, offered=False), typed or wanted


class LLMUser:
    """Plays one persona for one conversation; raises CharacterBreak when the model steps out of role."""

    def __init__(
        self,
        client: ModelClient,
        model: str,
        system: str,
        temperature: float | None,
        max_tokens: int,
        record_raw: bool = True,
    ) -> None:
        self._client = client
        self._model = model
        self._system = system
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._record_raw = record_raw
        self._history: list[ChatMessage] = [ChatMessage(role="user", content=OPENING_CUE)]
        self._turns_seen: list[Turn] = []
        self._env: Environment | None = None

    def _messages(self, turns: list[Turn]) -> list[ChatMessage]:
        # From the simulator's point of view the bot is the "user", so roles flip. The history only grows
        # within a conversation, so the messages of turns already seen are kept, not rebuilt every turn.
        known = self._turns_seen
        if len(turns) < len(known) or any(turns[i] is not turn for i, turn in enumerate(known)):
            known.clear()
            del self._history[1:]
        for turn in turns[len(known) :]:
            flipped: Literal["user", "assistant"] = "assistant" if turn.role == "user" else "user"
            self._history.append(ChatMessage(role=flipped, content=seen_by_user(turn)))
            known.append(turn)
        return list(self._history)

    def use_environment(self, environment: Environment) -> None:
        """The person's own tools (docs/environment.md): offered to the model as tools from now on."""
        if environment.spec.user_tools:
            self._env = environment

    async def _generate(self, request: ModelRequest) -> tuple[str, Usage, float, ModelResponse]:
        """One answer; with user tools, the bounded tool loop on a copy of the history (the calls are
        recorded by the environment, and the person's reply says what they found)."""
        if self._env is None:
            response = await self._client.generate(request)
            return response.text.strip(), response.usage, response.latency_s, response
        turn = await run_tool_turn(
            self._client,
            request.model_copy(update={"tools": self._env.tool_specs("user")}),
            list(request.messages),
            self._env,
            max_rounds=self._env.spec.max_tool_rounds,
            side="user",
        )
        assert turn.last is not None
        return turn.last.text.strip(), turn.usage, turn.latency_s, turn.last

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        request = ModelRequest(
            model=self._model,
            system=self._system,
            messages=self._messages(turns),
            max_tokens=self._max_tokens,
            temperature=self._temperature,
        )
        text, usage, latency, response = await self._generate(request)
        reason = character_break_reason(text)
        if reason is not None:
            raise CharacterBreak(f"{reason}: {text[:200]!r}", usage=usage)
        bot_turns = [turn for turn in turns if turn.role == "bot"]
        pick, text = read_pick(text, last_options(bot_turns[-1].parts) if bot_turns else [])
        return UserMessage(
            text=text,
            done=text == END,
            pick=pick,
            usage=usage,
            latency_s=latency,
            model=response.model or self._model,
            raw=response.raw if self._record_raw else None,
        )
