"""A trend chart as inline SVG: a metric's rate per period, its clustered 95% interval as a band, the
alert threshold as a dashed line. Plain SVG (no script), every label escaped."""

from __future__ import annotations

__all__ = ["trend_svg"]

from markupsafe import Markup, escape

from simulator.collect.trends import TrendRow

WIDTH, HEIGHT, PAD = 640, 180, 36


def trend_svg(rows: list[TrendRow], threshold: float | None = None) -> Markup:
    """One metric's rows (in period order) as an SVG line with its interval band."""
    points = [r for r in rows if r.rate.n]
    if not points:
        return Markup('<p class="note">no conversation counted yet</p>')
    top = max([r.rate.high for r in points] + [threshold or 0.0, 0.05])
    step = (WIDTH - 2 * PAD) / max(len(points) - 1, 1)

    def x(i: int) -> float:
        return PAD + i * step

    def y(v: float) -> float:
        return HEIGHT - PAD - v / top * (HEIGHT - 2 * PAD)

    band = [f"{x(i):.1f},{y(r.rate.high):.1f}" for i, r in enumerate(points)]
    band += [f"{x(i):.1f},{y(r.rate.low):.1f}" for i, r in reversed(list(enumerate(points)))]
    line = " ".join(f"{x(i):.1f},{y(r.rate.rate or 0.0):.1f}" for i, r in enumerate(points))
    parts = [
        f'<svg class="trend" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(points[0].rate.metric)} by period">',
        f'<polygon points="{" ".join(band)}" fill="#9ab" fill-opacity="0.35"/>',
        f'<polyline points="{line}" fill="none" stroke="#235" stroke-width="2"/>',
        f'<line x1="{PAD}" y1="{y(0):.1f}" x2="{WIDTH - PAD}" y2="{y(0):.1f}" stroke="#888"/>',
        f'<text x="2" y="{y(top) + 4:.1f}" font-size="10">{top:.0%}</text>',
        f'<text x="2" y="{y(0) + 4:.1f}" font-size="10">0%</text>',
    ]
    if threshold is not None:
        parts.append(
            f'<line x1="{PAD}" y1="{y(threshold):.1f}" x2="{WIDTH - PAD}" y2="{y(threshold):.1f}" '
            'stroke="#c33" stroke-dasharray="4 3"/>'
        )
    for i, r in enumerate(points):
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(r.rate.rate or 0.0):.1f}" r="3" fill="#235">'
            f"<title>{escape(r.period)}: {r.rate.k}/{r.rate.n} ({(r.rate.rate or 0):.1%}; "
            f"95% {r.rate.low:.1%}-{r.rate.high:.1%})</title></circle>"
        )
    parts.append(f'<text x="{PAD}" y="{HEIGHT - 8}" font-size="10">{escape(points[0].period)}</text>')
    parts.append(
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" font-size="10" text-anchor="end">{escape(points[-1].period)}</text>'
    )
    parts.append("</svg>")
    return Markup("".join(parts))
