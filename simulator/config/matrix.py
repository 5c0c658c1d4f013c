"""A suite's `matrix:`: bot variants (and, optionally, simulated-user variants) run on the same scenarios.

Each variant names only what changes: `bot: {model: openai:gpt-4.1}` replaces that field of the suite's
`bot`; a variant with another `type` replaces the whole bot. The cells are every bot variant crossed with
every user variant, and each cell is an ordinary suite (`matrix` removed), so a cell's run folder is an
ordinary run folder.
"""

from __future__ import annotations

__all__ = ["BotVariant", "MatrixConfig", "cell_id", "expand_matrix"]

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, Self, TypeVar

from pydantic import BaseModel, Field, ValidationError, model_validator

from simulator.config.bot_kinds import BOT_KINDS
from simulator.config.yamlfile import LocatedYAML, problems_from_validation
from simulator.errors import FieldProblem, Problem, UserError, field_path
from simulator.models import StrictModel as _Strict
from simulator.models import empty_dict, empty_list


class _MatrixSuite(Protocol):
    """What expanding a matrix needs of a suite (config/suite.py's Suite; named here without importing it,
    since the suite model holds a MatrixConfig)."""

    @property
    def matrix(self) -> MatrixConfig | None: ...
    @property
    def bot(self) -> Any: ...
    @property
    def user(self) -> BaseModel: ...
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self: ...


S = TypeVar("S", bound=_MatrixSuite)

VARIANT_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,59}$"
# Replacing one of these drops the other from the suite's bot, so a variant's prompt is the one it names.
_PROMPT_KEYS = ("system_prompt", "system_prompt_file")


class BotVariant(_Strict):
    """One bot under test: an id (the cell's folder name) and the bot fields it changes."""

    id: str = Field(pattern=VARIANT_ID)
    bot: dict[str, Any] = Field(default_factory=empty_dict)


class UserVariant(_Strict):
    """One simulated user: an id and the `user:` fields it changes (usually `model`)."""

    id: str = Field(pattern=VARIANT_ID)
    user: dict[str, Any] = Field(default_factory=empty_dict)


class MatrixConfig(_Strict):
    """The variants to compare. Every cell runs the same scenarios, repeats and seed: paired by design."""

    bots: list[BotVariant] = Field(min_length=1)
    users: list[UserVariant] = Field(default_factory=empty_list)
    # The cell the leaderboard compares every other cell with (default: the first cell).
    baseline: str | None = None

    @model_validator(mode="after")
    def _unique_ids(self) -> MatrixConfig:
        for axis, ids in (("bots", [b.id for b in self.bots]), ("users", [u.id for u in self.users])):
            again = next((n for n, i in enumerate(ids) if i in ids[:n]), None)
            if again is not None:
                twice = sorted({i for i in ids if ids.count(i) > 1})
                raise FieldProblem(
                    f"matrix.{axis}: ids must be unique; repeated: {', '.join(twice)}", axis, again, "id"
                )
        if self.baseline is not None and self.baseline not in self.cell_ids():
            raise FieldProblem(
                f"matrix.baseline '{self.baseline}' is not a cell; cells are: {', '.join(self.cell_ids())}",
                "baseline",
            )
        return self

    def cell_ids(self) -> list[str]:
        """Cell ids in run order: bot variants, each crossed with every user variant."""
        users: list[str | None] = [u.id for u in self.users] or [None]
        return [cell_id(b.id, u) for b in self.bots for u in users]


def cell_id(bot: str, user: str | None) -> str:
    """`v2` for a bot variant alone, `v2@sonnet` when simulated users vary too."""
    return bot if user is None else f"{bot}@{user}"


def merge_bot(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """The suite's bot (as written) with a variant's fields; another `type` replaces the bot whole."""
    if override.get("type", base.get("type")) != base.get("type"):
        return dict(override)
    merged = dict(base)
    if any(key in override for key in _PROMPT_KEYS):
        for key in _PROMPT_KEYS:
            merged.pop(key, None)
    merged.update(override)
    return merged


def merge_user(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """The suite's `user:` with a variant's fields."""
    return {**base, **override}


@dataclass
class MatrixCell(Generic[S]):
    """One cell: its id, the variants it crosses, and the ordinary suite it runs."""

    id: str
    bot_variant: str
    user_variant: str | None
    suite: S


def expand_matrix(suite: S, source: LocatedYAML | None = None) -> list[MatrixCell[S]]:
    """Every cell of the suite's matrix as an ordinary suite; a mistake is a UserError naming the
    variant's line and field. A suite without a matrix has no cells."""
    user_config = type(suite.user)  # the suite's UserConfig: each user variant validates as one
    matrix = suite.matrix
    if matrix is None:
        return []
    base_bot = {"type": suite.bot.type, **suite.bot.model_dump(exclude_unset=True)}
    base_user = suite.user.model_dump(exclude_unset=True)
    problems: list[Problem] = []
    bots: list[tuple[str, Any]] = []
    for index, variant in enumerate(matrix.bots):
        data = merge_bot(base_bot, variant.bot)
        where = ("matrix", "bots", index, "bot")
        kind = BOT_KINDS.find(str(data.get("type")))
        if kind is None:
            problems.append(_problem(source, where, BOT_KINDS.unknown(data.get("type"))))
            continue
        bot, found = _validate(kind.config, data, source, where)
        problems += found
        bots.append((variant.id, bot))
    users: list[tuple[str | None, BaseModel]] = [(None, suite.user)]
    if matrix.users:
        users = []
        for index, user_variant in enumerate(matrix.users):
            where = ("matrix", "users", index, "user")
            user, found = _validate(user_config, merge_user(base_user, user_variant.user), source, where)
            problems += found
            users.append((user_variant.id, user))
    if problems:
        raise UserError("invalid matrix in the suite file", problems)
    cells: list[MatrixCell[S]] = []
    for bot_id, bot in bots:
        for user_id, user in users:
            cell_suite = suite.model_copy(update={"matrix": None, "bot": bot, "user": user}, deep=True)
            cells.append(MatrixCell(cell_id(bot_id, user_id), bot_id, user_id, cell_suite))
    return cells


def _problem(source: LocatedYAML | None, where: tuple[str | int, ...], message: str) -> Problem:
    file = str(source.path) if source is not None else "suite"
    line = source.line_of(where) if source is not None else None
    return Problem(file, message, line=line, field=field_path(where))


def _validate(
    model: type[BaseModel], data: dict[str, Any], source: LocatedYAML | None, where: tuple[str | int, ...]
) -> tuple[Any, list[Problem]]:
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        if source is None:
            return None, [_problem(None, where, str(exc))]
        prefix = field_path(where)
        found = problems_from_validation(exc, source, model, where)
        return None, [replace(p, field=f"{prefix}.{p.field}" if p.field else prefix) for p in found]
