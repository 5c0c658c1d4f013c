"""An LLM playing the user: roles flipped so the model writes the user's side of the chat."""

from __future__ import annotations

__all__ = ["LLMUser"]

from typing import Literal

from simulator.providers.base import ChatMessage, ModelRequest
from simulator.providers.hub import ModelClient
from simulator.record.transcript import Turn
from simulator.users.base import END, CharacterBreak, UserMessage
from simulator.users.character import character_break_reason
from simulator.users.prompt import OPENING_CUE


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

    def _messages(self, turns: list[Turn]) -> list[ChatMessage]:
        # From the simulator's point of view the bot is the "user", so roles flip. The history only grows
        # within a conversation, so the messages of turns already seen are kept, not rebuilt every turn.
        known = self._turns_seen
        if len(turns) < len(known) or any(turns[i] is not turn for i, turn in enumerate(known)):
            known.clear()
            del self._history[1:]
        for turn in turns[len(known) :]:
            flipped: Literal["user", "assistant"] = "assistant" if turn.role == "user" else "user"
            self._history.append(ChatMessage(role=flipped, content=turn.text))
            known.append(turn)
        return list(self._history)

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        request = ModelRequest(
            model=self._model,
            system=self._system,
            messages=self._messages(turns),
            max_tokens=self._max_tokens,
            temperature=self._temperature,
        )
        response = await self._client.generate(request)
        text = response.text.strip()
        reason = character_break_reason(text)
        if reason is not None:
            raise CharacterBreak(f"{reason}: {text[:200]!r}", usage=response.usage)
        return UserMessage(
            text=text,
            done=text == END,
            usage=response.usage,
            latency_s=response.latency_s,
            model=response.model or self._model,
            raw=response.raw if self._record_raw else None,
        )
