"""The leaderboard as one self-contained HTML page: the table, the paired comparisons, and a cost-versus-
quality plot drawn as inline SVG (no script, no network; every string escaped)."""

from __future__ import annotations

__all__ = ["render_leaderboard_html", "write_leaderboard_html"]

from importlib import resources
from pathlib import Path

from simulator.analysis.leaderboard import Leaderboard
from simulator.report.draw_html import html_section
from simulator.report.html_parts import e
from simulator.report.leaderboard_view import leaderboard_sections
from simulator.stats.rates import RateView, pct

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
W, H, PAD = 640, 360, 56


def _bounds(view: RateView) -> tuple[float, float]:
    """The interval drawn: the rate's one interval (RateView.interval), as the report draws it."""
    return view.interval


def cost_quality_svg(board: Leaderboard) -> str:
    """Each cell at (cost per conversation, pass rate) with its interval as a vertical bar; the cells tied
    for best drawn filled. Unpriced cells sit on the left edge and say so."""
    points = [(row, row.cost_per_conversation) for row in board.cells if row.quality.rate is not None]
    costs = [c for _, c in points if c is not None]
    top = max(costs, default=0.0) or 1.0
    low = min((_bounds(row.quality)[0] for row, _ in points), default=0.0)
    floor = max(0.0, min(low, 0.9) - 0.05)

    spread = not any(costs)  # nothing priced cost anything: spread the cells out so they stay legible
    slots = {row.cell: (i + 1) / (len(points) + 1) for i, (row, _) in enumerate(points)}

    def x(cost: float | None, cell: str = "") -> float:
        share = slots.get(cell, 0.0) if spread else (0.0 if cost is None else cost / top)
        return PAD + share * (W - 2 * PAD)

    def y(rate: float) -> float:
        return H - PAD - (rate - floor) / (1.0 - floor) * (H - 2 * PAD)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
        'role="img" aria-label="cost per conversation versus pass rate">',
        f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#555"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="#555"/>',
        f'<text x="{W / 2}" y="{H - 14}" text-anchor="middle" font-size="12">'
        + (
            f"cost per conversation: 0 {e(board.currency)} for every cell (cells spread out)"
            if spread
            else f"cost per conversation ({e(board.currency)}), 0 to {top:.4g}"
        )
        + "</text>",
        f'<text x="14" y="{H / 2}" font-size="12" transform="rotate(-90 14 {H / 2})" text-anchor="middle">'
        "pass rate (conversations), 95% CI</text>",
    ]
    for tick in (floor, (floor + 1) / 2, 1.0):
        parts.append(
            f'<text x="{PAD - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" font-size="10">{e(pct(tick, 0))}</text>'
        )
    for index, (row, cost) in enumerate(points):
        cx, rate = x(cost, row.cell), row.quality.rate or 0.0
        filled = row.group == "tied for best"
        parts.append(
            f'<line x1="{cx:.1f}" y1="{y(_bounds(row.quality)[0]):.1f}" x2="{cx:.1f}" y2="{y(_bounds(row.quality)[1]):.1f}" '
            'stroke="#1f5fa8" stroke-width="2"/>'
        )
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{y(rate):.1f}" r="5" stroke="#1f5fa8" '
            f'fill="{"#1f5fa8" if filled else "#fff"}"><title>{e(row.cell)}: {e(row.quality.text)}</title></circle>'
        )
        label = row.cell + (" (unpriced)" if cost is None else "")
        parts.append(
            f'<text x="{cx + 8:.1f}" y="{y(rate) - 6 - 12 * (index % 2):.1f}" font-size="11">{e(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def render_leaderboard_html(board: Leaderboard) -> str:
    """The whole leaderboard page."""
    css = resources.files("simulator.report").joinpath("assets", "report.css").read_text(encoding="utf-8")
    title = f"simulator leaderboard · {board.matrix_id}"
    board_section, comparisons, sensitivity = leaderboard_sections(board)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(_CSP)}">'
        f"<title>{e(title)}</title><style>{css}</style></head><body>"
        f"<header><h1>{e(title)}</h1><div class='meta'>{len(board.cells)} cells · baseline "
        f"{e(board.baseline)} · generated {board.generated_at:%Y-%m-%d %H:%M} UTC</div></header><main>"
        f"{html_section(board_section)}"
        f"<section><h2>Cost versus quality</h2>{cost_quality_svg(board)}</section>"
        f"{html_section(comparisons)}{html_section(sensitivity)}</main></body></html>"
    )


def write_leaderboard_html(board: Leaderboard, path: Path) -> None:
    """Write the leaderboard page to `path`."""
    path.write_text(render_leaderboard_html(board), encoding="utf-8")
