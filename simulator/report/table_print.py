"""Printing a rich table so nothing is cut at any width (80 columns in a pipe or a CI log): every terminal
view of the report uses this one printer."""

from __future__ import annotations

__all__ = ["print_table"]

from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from simulator.visible import visible


def print_table(console: Console, table: Table) -> None:
    """Print a table so nothing is cut, whatever the width (80 columns in a pipe or a CI log).

    In order: the boxed table when every column fits with no word broken; the same table without borders;
    else one block of `column: value` lines per row. Never an ellipsis, never a column silently left out,
    never a number or an id broken across lines."""
    for column in table.columns:
        column.overflow = "fold"
        column._cells = [_visible_cell(cell) for cell in column._cells]  # no escape code reaches a terminal
    # Each cell's text is rendered once for both fits (the boxed and the borderless), then the table once.
    spans = _spans(console, table)
    if _fit_columns(console, table, spans):
        console.print(table)
        return
    table.box, table.pad_edge, table.collapse_padding = None, False, True
    if _fit_columns(console, table, spans):
        console.print(table)
        return
    _stacked(console, table)


def _visible_cell(cell: Any) -> Any:
    """A cell with every control character shown as an escape (`report.visible`), its style kept."""
    if isinstance(cell, str):
        return visible(cell)
    if isinstance(cell, Text) and visible(cell.plain) != cell.plain:
        return Text(visible(cell.plain), style=cell.style)
    return cell


def _plain(console: Console, cell: object) -> Text:
    return console.render_str(cell) if isinstance(cell, str) else Text(str(cell))


def _spans(console: Console, table: Table) -> tuple[list[int], list[int]]:
    """Per column, its longest word (or its `min_width`) and its longest line, in terminal cells."""
    cells = [
        [_plain(console, cell).plain for cell in [column.header, *column.cells]] for column in table.columns
    ]
    least = [max(max((cell_len(w) for w in text.split()), default=0) for text in column) for column in cells]
    least = [max(n, column.min_width or 0) for n, column in zip(least, table.columns, strict=True)]
    most = [max(max(cell_len(line) for line in text.split("\n")) for text in column) for column in cells]
    return least, [max(a, b) for a, b in zip(least, most, strict=True)]


def _fit_columns(console: Console, table: Table, spans: tuple[list[int], list[int]]) -> bool:
    """Set every column's width so the table fits the console with no word broken; False if it cannot.

    Each column gets at least its longest word (rich alone would squeeze the widest column, however long
    its words, or drop the last ones); the space left goes to columns whose cells would wrap, in proportion."""
    least, most = spans
    gaps = len(table.columns) - 1
    overhead = 3 * gaps + 4 if table.box is not None else gaps  # borders and padding, or one space
    spare = console.width - overhead - sum(least)
    if spare < 0:
        return False
    wanted = [b - a for a, b in zip(least, most, strict=True)]
    if sum(wanted) <= spare:
        widths = most
    else:
        widths = [a + spare * w // sum(wanted) for a, w in zip(least, wanted, strict=True)]
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width
    return True


def _stacked(console: Console, table: Table) -> None:
    """A table too wide for the terminal, row by row: the first cell as a heading, then `header: value`."""
    if table.title:
        console.print(table.title)
    headers = [
        _plain(console, column.header).plain.replace("/\n", "/").replace("\n", " ")
        for column in table.columns
    ]
    for row in zip(*(list(column.cells) for column in table.columns), strict=True):
        console.print(Text.assemble("• ", _plain(console, row[0])))
        for header, cell in zip(headers[1:], row[1:], strict=True):
            console.print(Text.assemble(f"    {header}: ", _plain(console, cell)), overflow="fold")
