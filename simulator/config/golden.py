"""Golden items: a user message, one reference answer, and the assertions that define a right answer.

A golden file is YAML (a list of items, or a mapping with `items:` and optional `name`, `description`) or
CSV (one row per item; `must_contain` / `must_not_contain` groups `;`-separated, alternatives
`|`-separated, `context` a JSON list). Both go through the one document loader (config/documents.py), so
every problem names the file, the line and the field. Each item becomes a one-turn scenario played by the
scripted user (`golden_scenario`), and runs through the main engine like any conversation.
"""

from __future__ import annotations

__all__ = ["GOLDEN_DOCUMENTS", "GoldenItem", "golden_scenario", "load_golden", "read_csv"]

from pathlib import Path

from pydantic import ConfigDict, Field, model_validator

from simulator.config.assertions import AssertionFields, AssertionSpec
from simulator.config.documents import FileDocument, FileDocumentKind, load_documents
from simulator.config.scenario import Scenario, ScenarioId
from simulator.config.script import ContextTurn, ItemKind, Script
from simulator.config.yamlfile import MAX_FILE_BYTES, LocatedYAML
from simulator.errors import FieldProblem, Problem, UserError, did_you_mean
from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.models import empty_list
from simulator.readers import InputRefused
from simulator.readers import read_csv as read_sheet


class GoldenItem(FileDocument, AssertionFields):
    """One golden item: the verdict is exact match (`kind: exact`) or the assertions (`kind: assert`)."""

    model_config = ConfigDict(coerce_numbers_to_str=True, populate_by_name=True)

    id: ScenarioId = Field(alias="item_id")  # names its conversations (`id#repeat`) as a scenario's does
    intent: str = Field(min_length=1)
    kind: ItemKind
    user_message: str = Field(min_length=1)
    reference: str
    context: list[ContextTurn] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _items_decide_something(self) -> GoldenItem:
        if self.kind == "assert" and self.assertions.is_empty:
            raise FieldProblem(
                "an assert item needs at least one of must_contain, must_not_contain, must_not_match", "kind"
            )
        if self.kind == "exact" and not self.reference.strip():
            raise FieldProblem("an exact item needs a non-empty reference", "reference")
        return self

    @property
    def assertions(self) -> AssertionSpec:
        """The item's assertions as a spec for `check_assertions`."""
        return AssertionSpec(
            must_contain=self.must_contain,
            must_not_contain=self.must_not_contain,
            must_not_match=self.must_not_match,
        )


_COLUMNS = [field.alias or name for name, field in GoldenItem.model_fields.items()]
_REQUIRED_COLUMNS = ["item_id", "intent", "kind", "user_message", "reference"]


def _cell(column: str, cell: str) -> object:
    """One CSV cell as the field's YAML value: groups split on `;`, context parsed as JSON."""
    cell = cell.strip()
    if column in ("must_contain", "must_not_contain"):
        return [group.strip() for group in cell.split(";") if group.strip()]
    if column == "must_not_match":
        return cell or None
    if column == "context":
        return loads_bounded(cell, "context") if cell else []
    return cell


def _header_problems(header: list[str], file: str) -> list[Problem]:
    problems = []
    for column in sorted({c for c in header if header.count(c) > 1}):
        problems.append(
            Problem(
                file, f"column '{column}' appears {header.count(column)} times; keep one of them", 1, column
            )
        )
    for column in dict.fromkeys(header):
        if column not in _COLUMNS:
            guess = did_you_mean(column, _COLUMNS)
            hint = f"; {guess}" if guess else f"; columns: {', '.join(_COLUMNS)}"
            problems.append(Problem(file, f"unknown column '{column}'{hint}", 1, column))
    for column in _REQUIRED_COLUMNS:
        if column not in header:
            problems.append(Problem(file, f"missing required column '{column}'; add it", 1, column))
    return problems


def _row(
    header: list[str], cells: list[str], file: str, line: int
) -> tuple[dict[str, object] | None, list[Problem]]:
    if len(cells) != len(header):
        message = f"row has {len(cells)} cells but the header has {len(header)}; quote cells holding commas"
        return None, [Problem(file, message, line)]
    row: dict[str, object] = {}
    for column, cell in zip(header, cells, strict=True):
        try:
            row[column] = _cell(column, cell)
        except JSONRefused as exc:
            message = f"{exc}; context must be a JSON list of {{role, text}} turns"
            return None, [Problem(file, message, line, "context")]
    return row, []


def read_csv(path: Path) -> tuple[LocatedYAML, list[Problem]]:
    """A CSV golden file as located rows (every field of a row on the row's first line) plus its problems;
    read by the one bounded CSV reader (a regular file, UTF-8, capped, one-line errors)."""
    try:
        sheet = read_sheet(path, MAX_FILE_BYTES)
    except InputRefused as exc:
        return LocatedYAML(path, []), [exc.problem]
    file = str(path)
    header = sheet.header
    problems = _header_problems(header, file)
    located = LocatedYAML(path, [])
    if problems:
        return located, problems
    rows: list[dict[str, object]] = []
    for line, cells in sheet.rows:
        row, row_problems = _row(header, cells, file, line)
        problems += row_problems
        if row is not None:
            located.lines[(len(rows),)] = line
            rows.append(row)
    located.data = rows
    return located, problems


def is_golden(source: LocatedYAML) -> bool:
    """Whether a parsed YAML file holds golden items (items have `item_id`; or the file has `items:`)."""
    data = source.data
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, dict) and ("item_id" in first or "items" in first)


GOLDEN_DOCUMENTS = FileDocumentKind(
    model=GoldenItem,
    noun="golden item",
    list_key="items",
    marker_key="item_id",
    shape="item_id, intent, kind, user_message, reference, ...",
    error_title="invalid golden items",
    id_field="item_id",
    top_keys=("name", "description"),
    claims=is_golden,
    read_csv=read_csv,
)


def load_golden(path: Path) -> list[GoldenItem]:
    """Load and validate one golden file (.yaml, .yml or .csv); one UserError lists every problem."""
    if path.suffix.lower() not in (".yaml", ".yml", ".csv"):
        raise UserError(f"{path}: golden items must be a .yaml, .yml or .csv file")
    if not path.exists() and not path.is_symlink():  # a folder, FIFO or link loop: the reader says which
        raise UserError(f"{path}: no such file; pass the path to a golden items file")
    items: list[GoldenItem] = load_documents([path], GOLDEN_DOCUMENTS)
    if not items:
        raise UserError("invalid golden items", [Problem(str(path), "the file holds no items; add some", 1)])
    return items


def golden_scenario(item: GoldenItem) -> Scenario:
    """The item as a one-turn scenario: the scripted user sends its lines, then ends the conversation."""
    script = Script(intent=item.intent, kind=item.kind, user_message=item.user_message, context=item.context)
    scenario = Scenario(
        id=item.id,
        persona="a scripted user (golden item)",
        goal=item.user_message,
        max_turns=len(script.lines) + 1,  # one more turn for the scripted user to end the conversation
        reference=item.reference or None,
        assertions=None if item.assertions.is_empty else item.assertions,
        script=script,
    )
    scenario._source, scenario._line = item._source, item._line
    return scenario
