"""Read YAML with line numbers and turn pydantic errors into Problems that name file, line and field."""

from __future__ import annotations

__all__ = ["LocatedYAML", "load_yaml", "problems_from_validation", "validate_model"]

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from simulator.errors import Problem

Path_ = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass
class LocatedYAML:
    """A parsed YAML file plus the line where each value starts, keyed by its path of keys/indexes."""

    path: Path
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    # Keys written twice in one mapping (YAML keeps the last silently): each is a problem to report.
    duplicates: list[Problem] = field(default_factory=list)

    def line_of(self, loc: Path_) -> int | None:
        """The line of `loc`, or of its nearest ancestor that has one."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(loc[:end])
            if line is not None:
                return line
        return None


def _record_lines(node: yaml.Node, loc: Path_, located: LocatedYAML) -> None:
    lines = located.lines
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.start_mark)
            line = key_node.start_mark.line + 1
            if key in seen:
                message = f"key '{key}' appears twice in one mapping (YAML keeps the last); remove one"
                located.duplicates.append(
                    Problem(str(located.path), message, line=line, field=_field_name((*loc, key)))
                )
            seen.add(key)
            lines[(*loc, key)] = line
            _record_lines(value_node, (*loc, key), located)
            # A key's own line is more useful than its value's for "unknown key" errors.
            lines[(*loc, key)] = line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_lines(item, (*loc, index), located)


def load_yaml(path: Path) -> LocatedYAML:
    """Parse one YAML file; unreadable files raise a Problem-carrying UserError-friendly ValueError."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise YAMLProblem(Problem(str(path), f"cannot read the file: {exc}")) from exc
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        raise YAMLProblem(
            Problem(str(path), f"not valid YAML: {reason}; check indentation and quoting", line=line)
        ) from exc
    located = LocatedYAML(path=path, data=data)
    if node is not None:
        _record_lines(node, (), located)
    return located


class YAMLProblem(Exception):
    """A file that could not be parsed at all."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _field_name(loc: Path_) -> str:
    return ".".join(str(part) for part in loc)


def problems_from_validation(
    error: ValidationError, source: LocatedYAML, model: type[BaseModel], base: Path_ = ()
) -> list[Problem]:
    """One Problem per pydantic error, with the YAML line, the field path and how to fix it."""
    problems: list[Problem] = []
    for item in error.errors():
        loc = tuple(item["loc"])
        full = (*base, *loc)
        kind = item["type"]
        name = _field_name(loc)
        if kind == "extra_forbidden":
            allowed = _allowed_fields(model, loc[:-1])
            guess = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"; did you mean '{guess[0]}'?" if guess else f"; allowed keys: {', '.join(allowed)}"
            message = f"unknown key '{loc[-1]}'{hint}"
        elif kind == "missing":
            message = f"missing required field '{loc[-1]}'; add it"
        elif kind == "value_error":
            # A validator's own message already says what is wrong and how to fix it.
            message = str(item["msg"]).removeprefix("Value error, ")
        else:
            got = item.get("input")
            shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
            message = f"{item['msg']} (got {shown})"
        problems.append(Problem(str(source.path), message, line=source.line_of(full), field=name or None))
    return problems


def _allowed_fields(model: type[BaseModel], loc: Path_) -> list[str]:
    """Field names (and aliases) of the model found at `loc`, for did-you-mean hints."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None or isinstance(part, int):
            continue
        info = current.model_fields.get(str(part))
        annotation = info.annotation if info else None
        current = _first_model(annotation)
    if current is None:
        return []
    names = []
    for name, info in current.model_fields.items():
        names.append(info.alias or name)
    return sorted(names)


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None


def validate_model(
    model: type[M], data: Any, source: LocatedYAML, base: Path_ = ()
) -> tuple[M | None, list[Problem]]:
    """Validate `data` as `model`; return the instance or the problems, never raise for bad input."""
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, problems_from_validation(exc, source, model, base)
