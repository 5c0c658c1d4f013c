"""The Python API's door: every public call checks what it was passed before anything runs, and a mistake
is one `UserError` line naming the argument and the fix, never a `TypeError` from deep inside the engine
(`resume(5)`, `run(runz=3)`, `compare(bots=f)`, `options='x'`).

`checked(name, **rules)` wraps a function: the call is bound to its signature (an unknown argument gets a
did-you-mean), then each named argument is checked by its rule, a `(types, what it should be)` pair. Models
built in code (`Suite(...)`, `Scenario(...)`) are checked by their own base (simulator/models.py).
"""

from __future__ import annotations

__all__ = ["BOTS", "FOLDER", "NAMES", "checked"]

import difflib
import functools
import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from simulator.errors import UserError

P = ParamSpec("P")
R = TypeVar("R")
Rule = Callable[[Any], str | None]  # None when the value is fine, else what it should be


def _kind(value: Any) -> str:
    return type(value).__name__ if value is not None else "None"


def of(types: type | tuple[type, ...], should: str) -> Rule:
    """A rule: an instance of `types` (never a bool where a number is asked), or None."""

    def rule(value: Any) -> str | None:
        if value is None:
            return None
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in _as_tuple(types))
        return None if ok else should

    return rule


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _names(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Collection):
        return "a list of names, e.g. ['a', 'b'] (not one string)"
    return None if all(isinstance(item, str) for item in value) else "a list of names (strings)"


def _bots(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Mapping) or (isinstance(value, Sequence) and not isinstance(value, str | bytes)):
        return None
    return "a list of bots, or a mapping of name to bot (one bot: bots=[f])"


FOLDER = of((str, Path), "a folder path (str or Path)")
NAMES: Rule = _names
BOTS: Rule = _bots
COUNT = of(int, "a whole number")
FLAG = of(bool, "True or False")


def _options(value: Any) -> str | None:
    from simulator.engine.runner import RunOptions

    return of(RunOptions, "a simulator.RunOptions(...)")(value)


OPTIONS: Rule = _options
COMMON: dict[str, Rule] = {
    "scenario_ids": NAMES,
    "tags": NAMES,
    "user_model": of(str, "a model name such as 'openai:gpt-4.1-mini'"),
    "judge_model": of(str, "a model name such as 'openai:gpt-4.1-mini'"),
    "runs": COUNT,
    "concurrency": COUNT,
    "seed": COUNT,
    "out": FOLDER,
    "progress": FLAG,
    "options": OPTIONS,
    "scenarios": of((list, tuple), "a list of scenarios (Scenario, mappings or files)"),
}


def checked(name: str, **rules: Rule) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Wrap the public function `name`: bind the call (unknown or missing arguments), then check each
    argument that has a rule; UserError naming the argument otherwise. The function runs unchanged."""

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(function)
        table = {**{k: v for k, v in COMMON.items() if k in signature.parameters}, **rules}

        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise UserError(f"simulator.{name}: {_binding(exc, kwargs, signature)}") from None
            for argument, value in bound.arguments.items():
                rule = table.get(argument)
                should = rule(value) if rule is not None else None
                if should is not None:
                    raise UserError(f"simulator.{name}: {argument} must be {should}, not {_kind(value)}")
            return function(*args, **kwargs)

        return call

    return wrap


def _binding(exc: TypeError, given: dict[str, Any], signature: inspect.Signature) -> str:
    """What was wrong with the call's shape, in the user's words."""
    known = [n for n, p in signature.parameters.items() if p.kind is not p.VAR_KEYWORD]
    for key in given:
        if key not in signature.parameters:
            guess = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean '{guess[0]}'?" if guess else f"; it takes {', '.join(known)}"
            return f"unknown argument '{key}'{hint}"
    text = str(exc)
    if "positional" in text:
        return f"too many positional arguments; name them ({', '.join(known)})"
    return text.split("() ", 1)[-1]
