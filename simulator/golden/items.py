"""Golden items (a user message, one reference answer, and the assertions that define a right answer).

Loaded from YAML (a list, or a mapping with `items:`) or CSV (one row per item; `must_contain` and
`must_not_contain` groups `;`-separated, alternatives `|`-separated). Every problem found is reported at
once, each naming the file, line and field.
"""

from __future__ import annotations

__all__ = ["ContextTurn", "GoldenItem", "GoldenSet", "ItemKind", "load_items"]

import csv
import difflib
import hashlib
import io
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from simulator.errors import Problem, UserError
from simulator.spec.assertions import AssertionFields, AssertionSpec

ItemKind = Literal["exact", "assert"]


class ContextTurn(BaseModel):
    """An earlier turn: user turns are sent to the bot before the item's message; bot turns are notes."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "bot"]
    text: str


class GoldenItem(AssertionFields):
    """One golden item: the verdict is exact match (`exact`) or the assertions (`assert`)."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    item_id: str = Field(min_length=1)
    intent: str = Field(min_length=1)
    kind: ItemKind
    user_message: str = Field(min_length=1)
    reference: str
    context: list[ContextTurn] = Field(default_factory=list)

    @model_validator(mode="after")
    def _assert_items_assert_something(self) -> GoldenItem:
        if self.kind == "assert" and self.assertions.is_empty:
            raise ValueError(
                "an assert item needs at least one of must_contain, must_not_contain, must_not_match"
            )
        if self.kind == "exact" and not self.reference.strip():
            raise ValueError("an exact item needs a non-empty reference")
        return self

    @property
    def assertions(self) -> AssertionSpec:
        """The item's assertions as a spec for `check_assertions`."""
        return AssertionSpec(
            must_contain=self.must_contain,
            must_not_contain=self.must_not_contain,
            must_not_match=self.must_not_match,
        )


class GoldenSet(BaseModel):
    """The items of one file, with the file's path and content hash (recorded in the run manifest)."""

    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str
    name: str = ""
    description: str = ""
    items: list[GoldenItem]


_ITEM_FIELDS = list(GoldenItem.model_fields)
_CONTEXT_FIELDS = list(ContextTurn.model_fields)
_TOP_LEVEL_KEYS = ["name", "description", "items"]
_REQUIRED_COLUMNS = ["item_id", "intent", "kind", "user_message", "reference"]


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(error: Any) -> tuple[str, str | None]:
    """One pydantic error as (message, field)."""
    loc = tuple(error["loc"])
    field = _dotted(loc) or None
    kind = error["type"]
    if kind == "extra_forbidden":
        name = str(loc[-1])
        choices = _CONTEXT_FIELDS if "context" in loc[:-1] else _ITEM_FIELDS
        return f"unknown field '{name}'{_did_you_mean(name, choices)}", field
    if kind == "missing":
        return f"missing required field '{loc[-1]}'", field
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        return f"{message}, got {error['input']!r}", field
    return message, field


def _item_label(raw: object, index: int) -> str:
    if isinstance(raw, dict) and raw.get("item_id") not in (None, ""):
        return f"item '{raw['item_id']}'"
    return f"item #{index + 1}"


def _validate(
    raws: list[tuple[object, int, Any]], file: str, line_of: Any
) -> tuple[list[GoldenItem], list[Problem]]:
    """Validate raw items; `line_of(node, loc)` maps an error location to a line."""
    items: list[GoldenItem] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for index, (raw, line, node) in enumerate(raws):
        label = _item_label(raw, index)
        if not isinstance(raw, dict):
            problems.append(
                Problem(file, f"{label}: expected a mapping of fields, got {type(raw).__name__}", line)
            )
            continue
        item_id = str(raw.get("item_id", ""))
        if item_id in first_line:
            message = f"duplicate item_id '{item_id}' (first on line {first_line[item_id]})"
            problems.append(Problem(file, message, line_of(node, ("item_id",), line), "item_id"))
        elif item_id:
            first_line[item_id] = line
        try:
            items.append(GoldenItem.model_validate(raw))
        except ValidationError as exc:
            for error in exc.errors():
                message, field = _describe(error)
                where = line_of(node, error["loc"], line)
                problems.append(Problem(file, f"{label}: {message}", where, field))
    return items, problems


def _yaml_line(node: yaml.Node | None, loc: tuple[int | str, ...], default: int) -> int:
    """The line of the deepest node on `loc` that exists (a key's line for a mapping entry)."""
    line = default
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            entry = next((kv for kv in node.value if getattr(kv[0], "value", None) == part), None)
            if entry is None:
                break
            line, node = entry[0].start_mark.line + 1, entry[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _duplicate_keys(node: yaml.Node, file: str, label: str) -> list[Problem]:
    problems: list[Problem] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, _ in node.value:
            name = str(getattr(key, "value", ""))
            if name in seen:
                problems.append(
                    Problem(file, f"{label}: key '{name}' appears twice", key.start_mark.line + 1, name)
                )
            seen.add(name)
    return problems


def _load_yaml(text: str, file: str) -> tuple[str, str, list[GoldenItem], list[Problem]]:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = getattr(exc, "problem", None) or str(exc)
        raise UserError(
            f"invalid YAML in {file}",
            [Problem(file, f"invalid YAML: {reason}", mark.line + 1 if mark else None)],
        ) from None
    problems: list[Problem] = []
    name = description = ""
    item_nodes: yaml.Node | None = root
    if isinstance(data, dict) and isinstance(root, yaml.MappingNode):
        problems += _duplicate_keys(root, file, "top level")
        for key in data:
            if key not in _TOP_LEVEL_KEYS:
                line = _yaml_line(root, (str(key),), 1)
                hint = _did_you_mean(str(key), _TOP_LEVEL_KEYS)
                problems.append(Problem(file, f"unknown top-level key '{key}'{hint}", line, str(key)))
        name, description = str(data.get("name") or ""), str(data.get("description") or "")
        item_nodes = next((v for k, v in root.value if getattr(k, "value", None) == "items"), None)
        data = data.get("items")
        if data is None:
            problems.append(Problem(file, "missing 'items:' (a list of golden items)", 1, "items"))
            return name, description, [], problems
    if not isinstance(data, list) or not isinstance(item_nodes, yaml.SequenceNode):
        raise UserError(
            f"invalid golden items in {file}",
            [Problem(file, "expected a list of items, or a mapping with 'items:'", 1)],
        )
    raws: list[tuple[object, int, Any]] = []
    for index, (raw, node) in enumerate(zip(data, item_nodes.value, strict=True)):
        raws.append((raw, node.start_mark.line + 1, node))
        problems += _duplicate_keys(node, file, _item_label(raw, index))
    items, item_problems = _validate(raws, file, _yaml_line)
    return name, description, items, problems + item_problems


def _split(cell: str) -> list[str]:
    return [group.strip() for group in cell.split(";") if group.strip()]


def _csv_row(row: dict[str, str], file: str, line: int) -> tuple[dict[str, object], list[Problem]]:
    raw: dict[str, object] = {}
    for column, cell in row.items():
        cell = cell.strip()
        if column in ("must_contain", "must_not_contain"):
            raw[column] = _split(cell)
        elif column == "must_not_match":
            raw[column] = cell or None
        elif column == "context":
            if not cell:
                continue
            try:
                raw[column] = json.loads(cell)
            except json.JSONDecodeError as exc:
                message = f"context must be a JSON list of {{role, text}} turns: {exc.msg}"
                return raw, [Problem(file, message, line, "context")]
        else:
            raw[column] = cell
    return raw, []


def _load_csv(text: str, file: str) -> tuple[list[GoldenItem], list[Problem]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [name.strip() for name in next(reader, [])]
    problems: list[Problem] = []
    for column in header:
        if column not in _ITEM_FIELDS:
            hint = _did_you_mean(column, _ITEM_FIELDS)
            problems.append(Problem(file, f"unknown column '{column}'{hint}", 1, column))
    for column in _REQUIRED_COLUMNS:
        if column not in header:
            problems.append(Problem(file, f"missing required column '{column}'", 1, column))
    if problems:
        raise UserError(f"invalid golden items in {file}", problems)
    raws: list[tuple[object, int, Any]] = []
    while True:
        line = reader.line_num + 1
        cells = next(reader, None)
        if cells is None:
            break
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            message = f"row has {len(cells)} cells but the header has {len(header)}"
            problems.append(Problem(file, message, line))
            continue
        raw, row_problems = _csv_row(dict(zip(header, cells, strict=True)), file, line)
        problems += row_problems
        if not row_problems:
            raws.append((raw, line, None))
    items, item_problems = _validate(raws, file, lambda _node, _loc, line: line)
    return items, problems + item_problems


def load_items(path: str | Path) -> GoldenSet:
    """Load and validate a golden set from `.yaml`/`.yml` or `.csv`; raise UserError listing every problem."""
    path = Path(path)
    file = str(path)
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read golden items {file}: {exc.strerror or exc}") from None
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problem = Problem(file, f"not UTF-8 text (byte {exc.start}); save the items as UTF-8")
        raise UserError("unreadable golden items", [problem]) from None
    if "\x00" in text:
        problem = Problem(file, "a binary file (it holds NUL bytes), not a text file of golden items")
        raise UserError("unreadable golden items", [problem])
    name = description = ""
    if path.suffix.lower() == ".csv":
        items, problems = _load_csv(text, file)
    elif path.suffix.lower() in (".yaml", ".yml"):
        name, description, items, problems = _load_yaml(text, file)
    else:
        raise UserError(f"{file}: golden items must be a .yaml, .yml or .csv file")
    if not problems and not items:
        problems.append(Problem(file, "the file holds no items", 1))
    if problems:
        problems.sort(key=lambda p: p.line or 0)
        raise UserError(f"invalid golden items in {file}", problems)
    digest = "sha256:" + hashlib.sha256(content).hexdigest()
    return GoldenSet(path=file, sha256=digest, name=name, description=description, items=items)
