"""The leaderboard's sections as data (section.py): the table of cells, the paired comparisons with the
baseline, and the simulated-user effect; the terminal, the HTML page and the Markdown table read them."""

from __future__ import annotations

__all__ = ["HEADERS", "leaderboard_sections", "row_cells"]

from simulator.analysis.leaderboard import CellRow, Leaderboard
from simulator.report.section import Cell, Column, Note, Section, Table
from simulator.stats.rates import RateView, pct

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
_PAIRS = (
    "cell",
    "metric",
    "pairs",
    "baseline only",
    "cell only",
    "difference (95% CI)",
    "p (vignettes)",
    "p Holm",
    "change",
    "flipped",
)


def _rate(view: RateView | None) -> str:
    if view is None:
        return "n/a"
    if view.rate is None:
        return _errored(f"{view.k}/{view.n} n/a", view)
    # The rate's one interval, as the report draws it (clustered when it pools a vignette's conversations).
    return _errored(f"{pct(view.rate)} ({view.interval_text}) {view.k}/{view.n}", view)


def _errored(text: str, view: RateView) -> str:
    """The errored conversations a cell's rate left out, and its worst/best range when they could move it."""
    if not view.errored:
        return text
    return f"{text}; {view.errored} errored" + (f" ({view.moved})" if view.moved else "")


def _money(value: float | None, currency: str) -> str:
    return "n/a (unpriced)" if value is None else f"{value:.4f} {currency}"


def row_cells(board: Leaderboard, row: CellRow) -> list[str]:
    """One cell of the matrix as the texts of the leaderboard's columns (HEADERS)."""
    return [
        row.group,
        row.cell + (" (baseline)" if row.baseline else ""),
        _rate(row.quality),
        _rate(row.critical_sensitivity),
        _rate(row.under_triage),
        _money(row.cost_per_conversation, board.currency),
        "n/a" if row.conversation_latency_s is None else f"{row.conversation_latency_s:.3g} s",
        "—" if row.vs_best_p is None else f"{row.vs_best_p:.3g}",
    ]


def _comparisons(board: Leaderboard) -> Section:
    title = f"Paired with the baseline ({board.baseline})"
    if not board.comparisons:
        return Section("comparisons", title)
    table = Table([Column(n, numeric=n in ("pairs", "baseline only", "cell only")) for n in _PAIRS])
    for c in board.comparisons:
        diff = f"{100 * c.diff:+.1f} pts ({100 * c.diff_low:+.1f} to {100 * c.diff_high:+.1f})"
        more = f" (+{c.flips_total - len(c.flips)} more)" if c.flips_total > len(c.flips) else ""
        table.add(
            c.cell, c.metric, str(c.pairs), str(c.only_baseline), str(c.only_cell), diff, f"{c.clustered_p_value:.3g}",
            f"{c.p_holm:.3g}", c.change, ", ".join(c.flips) + more,
        )  # fmt: skip
    return Section("comparisons", title, [Note(board.correction), table])


def _sensitivity(board: Leaderboard) -> Section:
    if not board.user_sensitivity:
        return Section("user-effect", "Simulated-user effect")
    blocks: list[Table | Note] = [
        Note(
            "How much each bot's pass rate moves with the simulated-user model; a stronger simulator can flatter a bot."
        )
    ]
    for item in board.user_sensitivity:
        scores = "; ".join(f"{user}: {view.text}" for user, view in item.scores.items())
        spread = "n/a" if item.spread is None else f"{100 * item.spread:.1f} points"
        blocks.append(Note(f"spread {spread} — {scores}", lead=item.bot_variant))
    return Section("user-effect", "Simulated-user effect", blocks)


def leaderboard_sections(board: Leaderboard) -> list[Section]:
    """The leaderboard (cells tied for best in bold), its paired comparisons and the simulated-user effect."""
    table = Table([Column(h) for h in HEADERS])
    for row in board.cells:
        cells = row_cells(board, row)
        best = row.group == "tied for best"
        table.add(*cells[:1], *(Cell(c, strong=best) for c in cells[1:]) if best else cells[1:])
    notes = [Note(f"{board.quality_metric}; {board.interval}."), Note(f"{board.tie_rule}.")]
    notes += [Note(n, "warn", lead="note:") for n in board.notes]
    return [Section("leaderboard", "Leaderboard", [table, *notes]), _comparisons(board), _sensitivity(board)]
