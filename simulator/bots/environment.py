"""One conversation's environment: the state, the tools that act on it, and the record of every call.

The conversation loop makes one per conversation (a fresh deep copy of the suite's state merged with the
scenario's) and hands it to the bot adapter (python: an `env` object; http: a loopback URL; chat: the
model's tools) and to the simulated user (its user-side tools). Every call, by either side, becomes a
`tool_call` part with its arguments, result or error, start time and latency; the loop puts the calls into
the turn they were made in. A tool error, a timeout, bad arguments or an unknown tool is recorded as data
(the part's `error`), never raised into the loop: what counts as a pass is decided by the tool checks.
"""

from __future__ import annotations

__all__ = ["Environment", "ToolError", "make_environment"]

import copy
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from typing import Any, Literal

from simulator.bots.reply_check import shown, user_code_error
from simulator.bots.turn_limits import TurnLimits
from simulator.bots.user_threads import call_blocking, in_daemon_thread
from simulator.config.environment import EnvironmentSpec, ToolDef, UserToolDef, load_function, merge_state
from simulator.config.patterns import PatternTimeout, schema_validator
from simulator.config.tool_checks import read_state_path
from simulator.jsonbounds import JSONRefused, check_depth
from simulator.providers.base import ToolSpec
from simulator.record.parts import ARGUMENTS_DO_NOT_FIT, NO_SUCH_TOOL, ToolCallPart

Side = Literal["bot", "user"]
_OVER = (
    "not run: this turn already made as many tool calls as bot.max_tool_calls_per_turn allows; the turn is "
    "stopped as a bot error"
)


class ToolError(Exception):
    """What `env.call` raises in a Python bot when the call failed; the failure is recorded either way."""


class StateRefused(Exception):
    """A tool left a state that cannot be recorded (restored); the message is the call's error."""


def _plain(value: Any) -> Any:
    """A JSON-safe copy (what the record can keep): unknown objects become their text."""
    return json.loads(json.dumps(value, default=shown))  # shown(): a __str__ that raises is not ours


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().casefold() == b.strip().casefold()
    return bool(a == b)


class Environment:
    """The state and tools of one conversation, safe to call from the loop and from a bot's threads."""

    def __init__(
        self,
        spec: EnvironmentSpec,
        state: dict[str, Any],
        conversation_id: str = "",
        limits: TurnLimits | None = None,
    ) -> None:
        self.spec = spec
        self.state = state
        self.conversation_id = conversation_id
        # A result's and the state's size cap, and the calls one turn may make (bots/turn_limits.py).
        self.limits = limits or TurnLimits()
        self.calls: list[ToolCallPart] = []
        self._pending: list[ToolCallPart] = []
        self._dropped = 0  # calls past the turn's limit: neither run nor kept, only counted
        self._lock = threading.Lock()  # the call records
        # One call at a time changes the state; a timed-out function keeps it until it returns.
        self._state_lock = threading.Lock()
        self._counter = 0
        self._functions: dict[str, Callable[..., Any]] = {}

    # ---------------------------------------------------------------------------------------- describing

    def tool_specs(self, side: Side = "bot") -> list[ToolSpec]:
        """The tools of one side, as a model sees them."""
        tools: dict[str, ToolDef] | dict[str, UserToolDef] = (
            self.spec.tools if side == "bot" else self.spec.user_tools
        )
        return [
            ToolSpec(name=name, description=tool.description or name, parameters=tool.parameters)
            for name, tool in tools.items()
        ]

    def take_calls(self) -> list[ToolCallPart]:
        """The calls made since the last take, in order (the loop puts them into the turn)."""
        with self._lock:
            taken, self._pending = self._pending, []
        return taken

    def take_dropped(self) -> int:
        """How many calls since the last take came past the turn's limit (bot.max_tool_calls_per_turn)."""
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        return dropped

    def _over_limit(self, name: str, arguments: dict[str, Any], side: Side) -> ToolCallPart | None:
        """A call past the turn's limit: refused without running. The first is recorded (so the turn
        says which call it was); the rest are only counted, so a bot calling in a loop costs no memory."""
        limit = self.limits.max_tool_calls_per_turn
        with self._lock:
            if len(self._pending) < limit:
                return None
            if len(self._pending) > limit:
                self._dropped += 1
                return ToolCallPart(name=name, arguments={}, id="env-over-limit", error=_OVER, side=side)
        return self.refuse(name, arguments, _OVER, side=side)

    def final_state(self) -> dict[str, Any]:
        """A JSON-safe copy of the state as it is now (waiting for a running function, within reason)."""
        locked = self._state_lock.acquire(timeout=self.spec.tool_timeout_s)
        try:
            return dict(_plain(self.state))
        finally:
            if locked:
                self._state_lock.release()

    # ---------------------------------------------------------------------------------------- calling

    def call(self, name: str, arguments: dict[str, Any] | None = None, *, side: Side = "bot") -> ToolCallPart:
        """Run one tool call and record it; never raises for the call's own failure."""
        started, clock = datetime.now(UTC), time.perf_counter()
        arguments = dict(arguments or {})
        refused = self._over_limit(name, arguments, side)
        if refused is not None:
            return refused
        result, error = self._run(name, arguments, side)
        return self._record(name, arguments, result, error, started, time.perf_counter() - clock, side)

    async def acall(
        self, name: str, arguments: dict[str, Any] | None = None, *, side: Side = "bot"
    ) -> ToolCallPart:
        """`call` without blocking the event loop."""
        return await in_daemon_thread(lambda: self.call(name, arguments, side=side))

    def result(self, tool: str, /, **arguments: Any) -> Any:
        """The Python bots' API: `env.result("book", patient_id="P1")` is the call's result, or raises
        ToolError with the recorded error (the tool name is positional, so an argument may be `name`)."""
        part = self.call(tool, arguments)
        if part.error is not None:
            raise ToolError(part.error)
        return part.result

    def refuse(
        self, name: str, arguments: dict[str, Any], reason: str, *, side: Side = "bot"
    ) -> ToolCallPart:
        """Record a call that was not run (e.g. past the chat adapter's round limit), with why."""
        return self._record(name, arguments, None, reason, datetime.now(UTC), 0.0, side)

    def _record(
        self,
        name: str,
        arguments: dict[str, Any],
        result: Any,
        error: str | None,
        started: datetime,
        latency: float,
        side: Side,
    ) -> ToolCallPart:
        with self._lock:
            self._counter += 1
            part = ToolCallPart(
                name=name,
                arguments=_plain(arguments),
                id=f"env-{self._counter}",
                result=None if error is not None else result,
                error=error,
                started_at=started,
                latency_s=round(latency, 6),
                side=side,
            )
            self.calls.append(part)
            self._pending.append(part)
        return part

    def _run(self, name: str, arguments: dict[str, Any], side: Side) -> tuple[Any, str | None]:
        tools: dict[str, Any] = dict(self.spec.tools if side == "bot" else self.spec.user_tools)
        tool = tools.get(name)
        if tool is None:
            known = ", ".join(tools) or "none"
            if side == "user":
                return None, f"no user tool named '{name}' (tools: {known})"
            return None, f"{NO_SUCH_TOOL} '{name}' (tools: {known})"
        problem = _argument_problem(tool.parameters, arguments)
        if problem is not None:
            return None, f"{ARGUMENTS_DO_NOT_FIT} {name}'s parameters: {problem}"
        if isinstance(tool, UserToolDef) and tool.reads is not None:
            if not self._state_lock.acquire(timeout=self.spec.tool_timeout_s):  # a stuck tool holds it
                return (
                    None,
                    f"{name}: the state was still held by a tool call after {self.spec.tool_timeout_s:g} s",
                )
            try:
                found, value = read_state_path(self.state, tool.reads)
            finally:
                self._state_lock.release()
            return (_plain(value), None) if found else (None, f"the state has no `{tool.reads}`")
        if tool.function is None:
            return self._canned(tool, arguments)
        return self._invoke(name, tool.function, arguments)

    @staticmethod
    def _canned(tool: ToolDef, arguments: dict[str, Any]) -> tuple[Any, str | None]:
        for response in [*tool.responses, *([tool.default] if tool.default else [])]:
            if all(k in arguments and _same(arguments[k], v) for k, v in response.when.items()):
                return (None, response.error) if response.error else (_plain(response.result), None)
        return None, f"no canned response matches the arguments {json.dumps(arguments, default=str)}"

    def _invoke(self, name: str, spec: str, arguments: dict[str, Any]) -> tuple[Any, str | None]:
        function = self._functions.get(spec)
        if function is None:
            try:
                function = self._functions[spec] = load_function(spec)
            except ValueError as exc:
                return None, str(exc)

        def run() -> Any:
            with self._state_lock:
                before = copy.deepcopy(self.state)
                try:
                    value = function(self.state, **arguments)
                finally:
                    self._keep_state_recordable(name, before)
                return value

        try:  # in a daemon thread: a function that never returns cannot keep the run from ending
            value = call_blocking(run, self.spec.tool_timeout_s)
        except FutureTimeout:
            return None, f"{name} did not return within {self.spec.tool_timeout_s:g} s (tool_timeout_s)"
        except StateRefused as exc:
            return None, str(exc)
        except BaseException as exc:  # the team's function raised (SystemExit too): that is the call's error
            return None, user_code_error(exc)
        try:  # a bot's answer's caps (bot.max_reply_bytes)
            check_depth(value, f"{name}'s result", max_bytes=self.limits.max_reply_bytes)
            return json.loads(json.dumps(value)), None  # strictly JSON: what a model would be sent
        except JSONRefused as exc:
            return None, str(exc)
        except BaseException as exc:
            return None, f"{name} returned something that is not JSON data ({user_code_error(exc)})"

    def _keep_state_recordable(self, name: str, before: dict[str, Any]) -> None:
        """After a tool ran: a state it made cyclic, too deep or larger than a bot's answer may be could
        never be recorded (or read back), so it is put back as it was and the call fails saying why."""
        try:
            check_depth(self.state, f"the state after {name}", max_bytes=self.limits.max_reply_bytes)
        except BaseException as exc:
            exc = (
                exc if isinstance(exc, JSONRefused) else JSONRefused(f"the state after {name} cannot be read")
            )
            self.state.clear()
            self.state.update(before)
            raise StateRefused(f"{exc}; the state is kept as it was before the call") from None


def _argument_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    import jsonschema

    try:
        error = jsonschema.exceptions.best_match(schema_validator(schema).iter_errors(arguments))
    except PatternTimeout as exc:
        return str(exc)
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def make_environment(
    spec: EnvironmentSpec | None,
    scenario_state: dict[str, Any],
    conversation_id: str = "",
    limits: TurnLimits | None = None,
) -> Environment | None:
    """A fresh environment for one conversation (None when the suite declares none)."""
    if spec is None:
        return None
    state = merge_state(copy.deepcopy(spec.state), scenario_state)
    return Environment(spec, state, conversation_id, limits)
