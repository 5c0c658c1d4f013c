"""A report section as data: a title, a state, and blocks (tables of cells, and notes), drawn by one
terminal renderer (draw_terminal.py) and one HTML renderer (draw_html.py). A section is written once, as a
builder that returns a `Section`; both outputs stay in step (docs/reports.md, "Writing a new section").

A cell holds its text, an optional state (fail, warn, ok, error) and, for a rate, the `RateView` behind it
(the HTML renderer draws its interval plot); `link` is an in-page anchor for HTML. Columns are numeric or
not, and may belong to a `group`: the terminal joins a group's cells into one narrow column headed by the
group's name (`3/0/1/0/0` under `pass/fail/n.a./error/not judged`), HTML gives each its own column.
"""

from __future__ import annotations

__all__ = [
    "COUNT_COLUMNS",
    "Block",
    "Cell",
    "Column",
    "Figure",
    "Figures",
    "FindingLine",
    "Findings",
    "Note",
    "Row",
    "Section",
    "State",
    "Table",
    "count_cells",
    "number",
    "rate_cell",
    "table_section",
    "text",
    "text_row",
]

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from simulator.stats.rates import RateView

State = Literal["fail", "warn", "ok", "error"]


@dataclass(frozen=True)
class Cell:
    """One table cell: what is shown, and what it means."""

    text: str
    state: State | None = None
    rate: RateView | None = None  # the rate behind the text: HTML draws its interval beside it
    value: float | None = None  # the number behind the text, when it is one
    strong: bool = False
    link: str | None = None  # an anchor in the HTML page (`#t3`); the terminal shows the text alone
    plot: bool = True  # draw the rate's interval plot (HTML)


@dataclass(frozen=True)
class Column:
    """A column: its header, whether it holds numbers, and the group the terminal folds it into."""

    name: str
    numeric: bool = False
    group: str | None = None
    sep: str = "/"


@dataclass
class Row:
    cells: list[Cell]
    state: State | None = None  # the whole row (a false pass, a failing criterion)
    # Paragraphs shown under the row (quoted evidence, advice): HTML as a row across the table, the
    # terminal as dim lines after it.
    details: list[str] = field(default_factory=list)
    # Conversations to read for this row, each (id, link): the HTML draws links under the row (the desk's
    # safety page links each failing conversation to its transcript); the terminal leaves them to details.
    links: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Table:
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    title: str = ""
    # The terminal shows this many rows and says how many more the HTML and JSON reports hold (screen
    # space); HTML shows every row.
    fold_after: int | None = None
    # Rows left out of the table because they all passed alike, and the one line that says how many
    # (`19 scenarios passed every run ...`): the terminal prints the line, HTML the line with the rows
    # behind it (a <details>). `report --all` builds the table with every row instead.
    collapsed: list[Row] = field(default_factory=list)
    collapsed_note: str = ""

    def add(self, *cells: Cell | str, state: State | None = None, details: list[str] | None = None) -> None:
        """Append a row; a plain string is a cell with no state."""
        self.rows.append(Row([c if isinstance(c, Cell) else Cell(c) for c in cells], state, details or []))


@dataclass(frozen=True)
class Note:
    """A paragraph: an explanation, a warning (state warn) or a line of detail."""

    text: str
    state: State | None = None
    lead: str = ""  # a word shown before it in bold (`WARNING`, `Missing data:`)


@dataclass(frozen=True)
class FindingLine:
    """One finding of the summary: `BUG` / `WARNING` / `INFO`, a title and its detail."""

    level: Literal["bug", "warning", "info"]
    title: str
    detail: str = ""
    # Conversations to read, each with its in-page anchor (`#t3`) or None when its transcript is not shown;
    # `left_out` more were not listed.
    links: list[tuple[str, str | None]] = field(default_factory=list)
    left_out: int = 0


@dataclass
class Findings:
    """The findings, most serious first; `empty` is said when there are none."""

    lines: list[FindingLine]
    empty: str = "No findings: no failures, errors or warnings."


@dataclass(frozen=True)
class Figure:
    """A headline figure (a summary card): its label, value, the line under it and its state; `rate` is
    the rate behind it (HTML draws its interval)."""

    label: str
    value: str
    sub: str = ""
    state: State | None = None
    rate: RateView | None = None
    note: str = ""


@dataclass
class Figures:
    """A row of headline figures; `critical` ones are drawn first and large, coloured by their state."""

    figures: list[Figure]
    critical: bool = False


Block = Table | Note | Findings | Figures


@dataclass
class Section:
    """One section of a report: `id` is its HTML anchor, `blocks` are drawn in order."""

    id: str
    title: str
    blocks: Sequence[Block] = field(default_factory=list)  # covariant: a builder's list[Table | Note] fits
    state: State | None = None

    @property
    def empty(self) -> bool:
        return not self.blocks


def table_section(
    id: str,
    title: str,
    notes: list[str] | None = None,
    columns: list[str] | None = None,
    rows: list[Row] | None = None,
) -> Section:
    """A section of notes then one table of text columns: the shape of the derived documents (safety
    case, history)."""
    blocks: list[Block] = [Note(n) for n in notes or []]
    if columns:
        blocks.append(Table([Column(c) for c in columns], list(rows or [])))
    return Section(id, title, blocks)


def text_row(
    cells: list[str], state: State | Literal[""] | None = None, details: list[str] | None = None
) -> Row:
    """A row of plain text cells (`""` is no state, as None)."""
    return Row([Cell(c) for c in cells], state or None, list(details or []))


def text(value: object, state: State | None = None, *, strong: bool = False, link: str | None = None) -> Cell:
    return Cell(str(value), state, strong=strong, link=link)


def number(value: int | float, shown: str | None = None, state: State | None = None) -> Cell:
    """A number (shown as `shown`, else as itself)."""
    return Cell(str(value) if shown is None else shown, state, value=float(value))


def rate_cell(value: RateView, *, long: bool = False, plot: bool = True) -> Cell:
    """A rate with its counts and interval: `2/40 5.0% (1.4–16.5%)`, or the long form
    `2/40 = 5.0% (95% CI 1.4%–16.5%)` with `long`. A rate that pools repeats shows its scenario-clustered
    interval first, the per-conversation one after it, labelled (RateView.short)."""
    return Cell(value.text if long else value.short, rate=value, value=value.rate, plot=plot)


COUNT_NAMES = ("pass", "fail", "n.a.", "error", "not judged")
COUNTS_HEADER = "pass/fail/\nn.a./error/\nnot judged"  # three lines: the terminal column stays narrow
COUNT_COLUMNS = [Column(name, numeric=True, group=COUNTS_HEADER) for name in COUNT_NAMES]


class Counts(Protocol):
    """Verdicts by result (a criterion's, a tag's, a fidelity check's)."""

    passed: int
    failed: int
    not_applicable: int
    error: int
    not_judged: int


def count_cells(counts: Counts) -> list[Cell]:
    """Pass, fail, n/a, error and not judged: failures red, errors magenta, not judged yellow."""
    return [
        number(counts.passed),
        number(counts.failed, state="fail" if counts.failed else None),
        number(counts.not_applicable),
        number(counts.error, state="error" if counts.error else None),
        number(counts.not_judged, state="warn" if counts.not_judged else None),
    ]
