"""The leaderboard as text: a rich terminal view and a Markdown table (for a pull-request comment)."""

from __future__ import annotations

__all__ = ["leaderboard_markdown", "render_leaderboard"]

from rich.console import Console
from rich.table import Table

from simulator.analysis.leaderboard import CellRow, Leaderboard
from simulator.analysis.rates import RateView, pct


def _rate(view: RateView | None) -> str:
    if view is None:
        return "n/a"
    if view.rate is None:
        return f"{view.k}/{view.n} n/a"
    # The scenario-clustered interval when the rate pools repeats of scenarios (it always does here).
    low, high = (view.clustered.low, view.clustered.high) if view.clustered else (view.low, view.high)
    return f"{pct(view.rate)} ({pct(low)}–{pct(high)}) {view.k}/{view.n}"


def _money(value: float | None, currency: str) -> str:
    return "n/a (unpriced)" if value is None else f"{value:.4f} {currency}"


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g} s"


def _name(row: CellRow) -> str:
    return row.cell + (" (baseline)" if row.baseline else "")


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _row_cells(board: Leaderboard, row: CellRow) -> list[str]:
    return [
        row.group,
        _name(row),
        _rate(row.quality),
        _rate(row.critical_sensitivity),
        _rate(row.under_triage),
        _money(row.cost_per_conversation, board.currency),
        _seconds(row.conversation_latency_s),
        _p(row.vs_best_p),
    ]


HEADERS = [
    "group",
    "cell",
    "passes (conversations)",
    "critical escalated",
    "under-triage",
    "cost / conversation",
    "latency / conversation",
    "p vs best (Holm)",
]


def render_leaderboard(board: Leaderboard, console: Console | None = None) -> None:
    """Print the leaderboard, the paired comparisons with the baseline, and what the numbers leave out."""
    console = console or Console()
    console.rule(
        f"[bold]leaderboard {board.matrix_id}[/] · {len(board.cells)} cells · baseline {board.baseline}"
    )
    table = Table(show_lines=False)
    for header in HEADERS:
        table.add_column(header)
    for row in board.cells:
        style = "bold" if row.group == "tied for best" else None
        table.add_row(*_row_cells(board, row), style=style)
    console.print(table)
    console.print(f"quality: {board.quality_metric}; {board.interval}")
    console.print(board.tie_rule)
    if board.comparisons:
        console.print(f"\n[bold]Paired comparisons with the baseline ({board.baseline})[/]")
        console.print(board.correction)
        pairs = Table()
        for header in (
            "cell",
            "metric",
            "pairs",
            "baseline only",
            "cell only",
            "difference (95% CI)",
            "p",
            "p Holm",
            "change",
        ):
            pairs.add_column(header)
        for c in board.comparisons:
            diff = f"{100 * c.diff:+.1f} pts ({100 * c.diff_low:+.1f} to {100 * c.diff_high:+.1f})"
            pairs.add_row(
                c.cell, c.metric, str(c.pairs), str(c.only_baseline), str(c.only_cell), diff,
                f"{c.p_value:.3g}", f"{c.p_holm:.3g}", c.change,
            )  # fmt: skip
        console.print(pairs)
        for c in board.comparisons:
            if c.flips and c.metric == "conversation passes":
                more = f" (+{c.flips_total - len(c.flips)} more)" if c.flips_total > len(c.flips) else ""
                console.print(f"flipped in {c.cell}: {', '.join(c.flips)}{more}")
    for item in board.user_sensitivity:
        scores = ", ".join(f"{user}: {_rate(view)}" for user, view in item.scores.items())
        spread = "n/a" if item.spread is None else f"{100 * item.spread:.1f} pts"
        console.print(f"simulated-user effect on {item.bot_variant}: {scores}; spread {spread}")
    for note in board.notes:
        console.print(f"[yellow]note:[/] {note}")


def leaderboard_markdown(board: Leaderboard) -> str:
    """The leaderboard as a GitHub-flavoured Markdown table with the rules that make it honest."""
    lines = [
        f"### Leaderboard `{board.matrix_id}` (baseline `{board.baseline}`)",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    for row in board.cells:
        cells = _row_cells(board, row)
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
