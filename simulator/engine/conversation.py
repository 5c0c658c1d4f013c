"""The conversation loop: simulated user and bot take turns until a stop condition fires."""

from __future__ import annotations

__all__ = ["ConversationPlan", "bot_conversation_id", "run_conversation"]

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from simulator.bots import BotError, BotFactory, BotReply, BotSession
from simulator.bots.environment import Environment, make_environment
from simulator.bots.turn_limits import TurnLimits, guard_turn
from simulator.config.environment import EnvironmentSpec
from simulator.config.outcome_source import undecidable
from simulator.config.scenario import Scenario
from simulator.config.suite import OutcomeConfig
from simulator.providers.base import ProviderError
from simulator.record.models import ConversationRecord, ErrorInfo, StopReason, conversation_key
from simulator.record.parts import Part, ToolCallPart
from simulator.record.transcript import Turn, Usage
from simulator.users.base import CharacterBreak, SimulatedUser, UserMessage


@dataclass(frozen=True)
class ConversationPlan:
    scenario: Scenario
    repeat: int

    @property
    def id(self) -> str:
        return conversation_key(self.scenario.id, self.repeat)


def _now() -> datetime:
    return datetime.now(UTC)


class _Attempt:
    """One try at a conversation: the turns so far, what each side used, and how it ended."""

    def __init__(
        self,
        bot_id: str,
        environment: Environment | None = None,
        limits: TurnLimits | None = None,
        outcome: OutcomeConfig | None = None,
    ) -> None:
        self.bot_id = bot_id
        self.outcome = outcome
        self.environment = environment
        self.limits = limits or TurnLimits()
        self.sent_messages = 0  # what the bot's turns so far held: the conversation's limits
        self.sent_bytes = 0
        self.unkept: list[Part] = []  # the tool calls of a turn stopped at a limit: data all the same
        self.turns: list[Turn] = []
        self.usage: dict[str, Usage] = {}
        self.raw: list[dict[str, Any]] = []

    def with_calls(self, parts: list[Any]) -> list[Any]:
        """A turn's parts with the environment calls made during it first (those the adapter placed
        itself, as the chat adapter does, stay where they are)."""
        if self.environment is None:
            return parts
        placed = {id(part) for part in parts}
        return [call for call in self.environment.take_calls() if id(call) not in placed] + parts

    def keep_failed_turn(self, index: int, started: datetime, sent: list[Part]) -> None:
        """The bot turn of a turn that failed, when it holds anything: the environment calls made during it
        and what the bot had sent the person before it failed (`BotError.sent`)."""
        parts, self.unkept = self.unkept + self.with_calls(list(sent)), []
        if parts:
            self.turns.append(Turn(index=index, role="bot", parts=parts, started_at=started))

    def malformed_decision(self, state: dict[str, Any] | None, parts: list[Part]) -> str | None:
        """Why the decision in a bot's state or outcome tool call is malformed (a value that is not text,
        config/outcome_source.py: undecidable), for the sources the suite reads; None when it is not."""
        outcome = self.outcome
        if outcome is None:
            return None
        if "state" in outcome.sources and state is not None:
            problem = undecidable(state.get(outcome.key), f"the bot's state.{outcome.key}")
            if problem is not None:
                return problem
        tool = outcome.tool if "tool" in outcome.sources else None
        if tool is None:
            return None
        for part in parts:
            if isinstance(part, ToolCallPart) and part.side == "bot" and part.name == tool.name:
                where = f"the bot's {tool.name} call's {'.'.join(tool.argument)} (outcome.tool.call)"
                problem = undecidable(tool.value_in(part.arguments), where)
                if problem is not None:
                    return problem
        return None

    async def final_state(self, session: BotSession, state: dict[str, Any] | None) -> dict[str, Any] | None:
        """The bot's final state (its last reported one when it gives none); a malformed decision in it is
        the bot's `invalid_reply`."""
        final = await session.final_state() or state
        problem = self.malformed_decision(final, [])
        if problem is not None:
            raise BotError("invalid_reply", problem)
        return final

    def add_usage(self, role: str, usage: Usage | None) -> None:
        if usage is not None:
            self.usage[role] = self.usage.get(role, Usage()) + usage


def bot_conversation_id(run_id: str, plan: ConversationPlan) -> str:
    """The id a bot is given: unique per run and per attempt (a resumed or replayed item gets a new one),
    so a bot that keeps sessions never answers from an earlier run's state."""
    return f"{run_id}/{plan.id}/{secrets.token_hex(4)}"


async def _send(session: BotSession, message: UserMessage, index: int, parts: list[Part]) -> BotReply:
    """The user turn to the bot; the turn's parts too (photos, voice notes, a burst of messages) to a session
    that takes them (`takes_parts`: the whatsapp adapter delivers them as the Cloud API does)."""
    if getattr(session, "takes_parts", False):
        sender: Any = session
        reply: BotReply = await sender.send(message.text, index, pick=message.pick, parts=parts)
        return reply
    return await session.send(message.text, index, pick=message.pick)


async def _bot_turn(
    session: BotSession, message: UserMessage, index: int, user_parts: list[Part], attempt: _Attempt
) -> tuple[BotReply, list[Part]]:
    """The bot's answer to one user turn, on any channel, under the run's turn limits (bots/turn_limits.py):
    the whole turn's deadline, then its messages, tool calls (the environment's too) and bytes, and the
    conversation's; past one it is a BotError. (reply, the bot turn's parts with its calls)."""
    reply = await guard_turn(attempt.limits, _send(session, message, index, user_parts))
    parts = attempt.with_calls(reply.turn_parts())
    dropped = attempt.environment.take_dropped() if attempt.environment is not None else 0
    try:
        messages, size = attempt.limits.check_turn(parts, attempt.sent_messages, attempt.sent_bytes, dropped)
    except BotError:
        attempt.unkept = [part for part in parts if isinstance(part, ToolCallPart)]
        raise
    attempt.sent_messages += messages
    attempt.sent_bytes += size
    return reply, parts


async def _open_session(
    plan: ConversationPlan, user: SimulatedUser, bots: BotFactory, attempt: _Attempt
) -> Any:
    """A fresh bot session for one attempt, given the environment and the scenario where it acts on them."""
    env = attempt.environment
    # A bot adapter and a simulated user that act on the environment are given it; others never see it.
    opener: Any = bots  # factories that act on an environment take it as `environment=` (bots/__init__.py)
    given: dict[str, Any] = {"environment": env} if env else {}
    if getattr(bots, "wants_scenario", False):  # a channel that voices the persona (the voice caller)
        given["scenario"] = plan.scenario
    session = await opener.open(attempt.bot_id, **given)
    if env is not None and hasattr(user, "use_environment"):
        user.use_environment(env)  # the simulated person's own tools (thermometer, rash)
    return session


def _turn(index: int, role: Literal["user", "bot"], parts: list[Any], started: datetime, said: Any) -> Turn:
    """One turn as recorded, with what the user's message or the bot's reply (`said`) measured."""
    return Turn(
        index=index,
        role=role,
        parts=parts,
        started_at=started,
        latency_s=said.latency_s,
        time_to_first_token_s=said.time_to_first_token_s if role == "bot" else None,
        usage=said.usage,
        model=said.model,
        raw=said.raw,
    )


async def _attempt(
    plan: ConversationPlan, user: SimulatedUser, bots: BotFactory, attempt: _Attempt
) -> tuple[StopReason, dict[str, Any] | None, ErrorInfo | None]:
    try:
        session = await _open_session(plan, user, bots, attempt)
    except BotError as exc:  # the bot's factory failed: the bot's error (it was recorded as the engine's)
        return "error", None, ErrorInfo(source="bot", kind=exc.kind, message=str(exc))
    state: dict[str, Any] | None = None
    try:
        for index in range(plan.scenario.max_turns):
            started = _now()
            try:
                message = await user.next_message(attempt.turns)
            except ProviderError as exc:
                return "error", state, ErrorInfo(source="user", kind=exc.kind, message=str(exc))
            attempt.add_usage("user", message.usage)  # the closing [END] call costs tokens too
            if message.done:
                return "user_done", await attempt.final_state(session, state), None
            user_parts = message.parts()
            attempt.turns.append(_turn(index, "user", attempt.with_calls(user_parts), started, message))
            started = _now()
            try:
                reply, bot_parts = await _bot_turn(session, message, index, user_parts, attempt)
            except BotError as exc:
                attempt.keep_failed_turn(index, started, exc.sent)  # what it did before it failed is data
                return "error", state, ErrorInfo(source="bot", kind=exc.kind, message=str(exc))
            attempt.add_usage("bot", reply.usage)
            if reply.said is not None:  # the user's message as the channel delivered it (a caller's speech)
                attempt.turns[-1] = attempt.turns[-1].model_copy(update={"parts": list(reply.said)})
            malformed = attempt.malformed_decision(reply.state, bot_parts)
            if reply.state is not None and malformed is None:
                state = reply.state
            attempt.turns.append(_turn(index, "bot", bot_parts, started, reply))
            if malformed is not None:  # the turn is kept (what the bot said is data), the decision is not
                return "error", state, ErrorInfo(source="bot", kind="invalid_reply", message=malformed)
            if reply.handed_over:
                return "handover", await attempt.final_state(session, state), None
            if reply.closed:
                return "bot_closed", await attempt.final_state(session, state), None
        return "max_turns", await attempt.final_state(session, state), None
    except BotError as exc:
        return "error", state, ErrorInfo(source="bot", kind=exc.kind, message=str(exc))
    finally:
        await session.aclose()


async def run_conversation(
    plan: ConversationPlan,
    make_user: Callable[[ConversationPlan, int], SimulatedUser],
    bots: BotFactory,
    *,
    max_character_breaks: int = 3,
    user_model: str = "",
    bot_name: str = "",
    run_id: str = "run",
    first_attempt: int = 0,
    environment: EnvironmentSpec | None = None,
    limits: TurnLimits | None = None,
    outcome: OutcomeConfig | None = None,
) -> ConversationRecord:
    """Run one (scenario, repeat) to its end; never raises for a bot, user or provider failure. With the
    suite's `outcome`, a decision that is not text is the bot's `invalid_reply` (never judged).

    `first_attempt` numbers the user's attempts after earlier, discarded ones (a fidelity regeneration),
    so a cached LLM user gives a fresh sample."""
    breaks: list[str] = []
    discarded = Usage()  # what the discarded attempts cost: their transcripts go, their tokens count
    started = _now()
    for attempt_number in range(first_attempt, first_attempt + max_character_breaks + 1):
        bot_id = bot_conversation_id(run_id, plan)
        limits = limits or TurnLimits()
        made = make_environment(environment, plan.scenario.environment, bot_id, limits)
        attempt = _Attempt(bot_id, made, limits, outcome)
        user = make_user(plan, attempt_number)
        try:
            stop, state, error = await _attempt(plan, user, bots, attempt)
        except CharacterBreak as exc:
            breaks.append(str(exc))
            discarded = sum(attempt.usage.values(), discarded) + (exc.usage or Usage())
            continue  # discard this conversation and play it again
        except Exception as exc:  # an engine bug must not lose the run: record it
            stop, state = "error", None
            error = ErrorInfo(source="engine", kind=type(exc).__name__, message=str(exc))
        if discarded.calls:
            attempt.usage["discarded"] = discarded
        return ConversationRecord(
            id=plan.id,
            scenario_id=plan.scenario.id,
            repeat=plan.repeat,
            stop_reason=stop,
            turns=attempt.turns,
            final_state=state,
            error=error,
            character_breaks=breaks,
            started_at=started,
            ended_at=_now(),
            usage_by_role=attempt.usage,
            tags=list(plan.scenario.tags),
            user_model=user_model,
            bot_conversation_id=attempt.bot_id,
            bot=bot_name,
            environment_state=attempt.environment.final_state() if attempt.environment else None,
        )
    return _too_many_breaks(plan, breaks, discarded, started, user_model=user_model, bot_name=bot_name)


def _too_many_breaks(
    plan: ConversationPlan,
    breaks: list[str],
    discarded: Usage,
    started: datetime,
    *,
    user_model: str,
    bot_name: str,
) -> ConversationRecord:
    """The error record of a conversation whose simulated user broke character on every attempt: no turns,
    the breaks, and what the discarded attempts cost."""
    return ConversationRecord(
        id=plan.id,
        scenario_id=plan.scenario.id,
        repeat=plan.repeat,
        stop_reason="error",
        turns=[],
        error=ErrorInfo(
            source="user",
            kind="character_break",
            message=f"the simulated user broke character {len(breaks)} times; see character_breaks",
        ),
        character_breaks=breaks,
        started_at=started,
        ended_at=_now(),
        tags=list(plan.scenario.tags),
        user_model=user_model,
        bot=bot_name,
        usage_by_role={"discarded": discarded},
    )
