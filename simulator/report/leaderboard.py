"""The leaderboard as text: the terminal draws its sections (leaderboard_view.py); a Markdown table for a
pull-request comment."""

from __future__ import annotations

__all__ = ["leaderboard_markdown", "render_leaderboard"]

from rich.console import Console
from rich.markup import escape

from simulator.analysis.leaderboard import Leaderboard
from simulator.report.draw_terminal import draw_sections
from simulator.report.leaderboard_view import HEADERS, leaderboard_sections, row_cells
from simulator.visible import terminal_console


def render_leaderboard(board: Leaderboard, console: Console | None = None) -> None:
    """Print the leaderboard, the paired comparisons with the baseline, and what the numbers leave out."""
    console = console or terminal_console()
    console.rule("[bold]leaderboard[/]")  # the matrix on a line of its own: a rule would cut a long id
    console.print(
        f"matrix {escape(board.matrix_id)} · {len(board.cells)} cells · baseline {escape(board.baseline)}",
        overflow="fold",
    )
    draw_sections(console, leaderboard_sections(board))


def leaderboard_markdown(board: Leaderboard) -> str:
    """The leaderboard as a GitHub-flavoured Markdown table with the rules that make it honest."""
    lines = [
        f"### Leaderboard `{board.matrix_id}` (baseline `{board.baseline}`)",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    for row in board.cells:
        cells = row_cells(board, row)
        if row.group == "tied for best":
            cells[1] = f"**{cells[1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Quality: {board.quality_metric}; {board.interval}.", f"{board.tie_rule}.", ""]
    if board.comparisons:
        lines += [f"Paired with the baseline: {board.correction}.", ""]
        lines += [
            "| cell | metric | baseline only | cell only | p Holm | change |",
            "|---|---|---|---|---|---|",
        ]
        for c in board.comparisons:
            lines.append(
                f"| {c.cell} | {c.metric} | {c.only_baseline} | {c.only_cell} | {c.p_holm:.3g} | {c.change} |"
            )
    for item in board.user_sensitivity:
        spread = "n/a" if item.spread is None else f"{100 * item.spread:.1f} pts"
        lines.append(f"\nSimulated-user effect on `{item.bot_variant}`: spread {spread}.")
    return "\n".join(lines) + "\n"
