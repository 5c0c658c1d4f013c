"""The Python API's door: every public call checks what it was passed before anything runs, and a mistake
is one `UserError` line naming the argument and the fix, never a `TypeError` from deep inside the engine
(`resume(5)`, `run(runz=3)`, `compare(bots=f)`, `options='x'`).

`checked(name, **rules)` wraps a function: the call is bound to its signature (an unknown argument gets a
did-you-mean), then each named argument is checked by its rule, which says what the value should be, or
(`Wrong`) what a part of it should be (`options.max_errors`, `bots['a b']`). Models built in code
(`Suite(...)`, `Scenario(...)`) are checked by their own base (simulator/models.py).
"""

from __future__ import annotations

__all__ = ["BOTS", "FOLDER", "NAMES", "checked", "fresh_options"]

import functools
import inspect
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from simulator.errors import PATTERN_WORDS, UserError, did_you_mean, shown_input

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Wrong:
    """What a part of an argument should be: `where` follows the argument's name (`.max_errors`)."""

    where: str
    should: str
    value: Any


Rule = Callable[[Any], "str | Wrong | None"]  # None when the value is fine, else what it should be


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


def _ids(value: Any) -> str | None:
    # An empty list chose no scenario: the run did nothing and reported itself complete.
    if value is not None and not isinstance(value, str) and isinstance(value, Collection) and not value:
        return "a non-empty list of scenario ids (leave it out to run every scenario)"
    return _names(value)


def _bots(value: Any) -> str | Wrong | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return _bot_names(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return None
    return "a list of bots, or a mapping of name to bot (one bot: bots=[f])"


def _bot_names(bots: Mapping[Any, Any]) -> Wrong | None:
    """A mapping's keys name the cells (their folders): each a matrix variant id, as a suite's matrix
    writes them."""
    from simulator.config.matrix import VARIANT_ID

    for key in bots:
        if not isinstance(key, str) or not re.fullmatch(VARIANT_ID, key):
            return Wrong(f"[{key!r}]", f"named by {PATTERN_WORDS[VARIANT_ID]}", key)
    return None


FOLDER = of((str, Path), "a folder path (str or Path)")
NAMES: Rule = _names
IDS: Rule = _ids
BOTS: Rule = _bots
COUNT = of(int, "a whole number")
FLAG = of(bool, "True or False")


def _max_errors(value: Any) -> str | None:
    """As `--max-errors` reads it (engine/budget.py): a count, a share below 1, or math.inf."""
    if value is None:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and value >= 0 and (value < 1 or value == math.inf or float(value).is_integer()):
        return None
    return (
        "None (stop after 10 failures in a row), a count (10), a share of finished items (0.05) or math.inf"
    )


def _shard(value: Any) -> str | None:
    from simulator.record.manifest import ShardInfo

    if value is None or (isinstance(value, ShardInfo) and value.index <= value.count):
        return None
    return "None or a shard from simulator.api.options.parse_shard('2/4') (the 2nd of 4)"


def _option_rules() -> dict[str, Rule]:
    """Each RunOptions field's rule: a dataclass checks nothing, so `out=5` failed deep in the engine."""
    from simulator.engine.ray_backend import RayBackendOptions

    return {
        "out": FOLDER,
        "resume": FLAG,
        "retry_errors": FLAG,
        "progress": FLAG,
        "max_errors": _max_errors,
        "freeze_gc": FLAG,
        "shard": _shard,
        "backend": of(RayBackendOptions, "None or simulator.api.options.RayBackendOptions(address, workers)"),
        "make_user": lambda v: (
            None if v is None or callable(v) else "None or a function (plan, attempt) -> user"
        ),
        "settings_changed": of(dict, "a dict of setting path to [old, new]"),
    }


def _options(value: Any) -> str | Wrong | None:
    from simulator.engine.runner import RunOptions

    if value is None:
        return None
    if not isinstance(value, RunOptions):
        return "a simulator.RunOptions(...)"
    for field, rule in _option_rules().items():
        should = rule(getattr(value, field))
        if isinstance(should, str):
            return Wrong(f".{field}", should, getattr(value, field))
    return None


def fresh_options(resumes: bool) -> Rule:
    """`options` of a call that starts a run (`resumes`: whether it may finish one, as `run` may with
    options.resume and options.out): retry_errors without resume would be ignored."""

    def rule(value: Any) -> str | Wrong | None:
        found = _options(value)
        if found is not None or value is None:
            return found
        if value.resume and not resumes:
            return Wrong(
                ".resume",
                "False: compare starts a new matrix; finish one with simulator.resume(folder)",
                True,
            )
        if value.retry_errors and not value.resume:
            return Wrong(
                ".retry_errors",
                "False when starting a run; retry a run's errors with simulator.resume(folder, retry_errors=True)",
                True,
            )
        return None

    return rule


OPTIONS: Rule = _options
COMMON: dict[str, Rule] = {
    "scenario_ids": IDS,
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
                if isinstance(should, Wrong):
                    raise UserError(
                        f"simulator.{name}: {argument}{should.where} must be {should.should}, "
                        f"not {shown_input(should.value, yaml=False)}"
                    )
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
            guess = did_you_mean(key, known)
            hint = f"; {guess}" if guess else f"; it takes {', '.join(known)}"
            return f"unknown argument '{key}'{hint}"
    text = str(exc)
    if "positional" in text:
        return f"too many positional arguments; name them ({', '.join(known)})"
    return text.split("() ", 1)[-1]
