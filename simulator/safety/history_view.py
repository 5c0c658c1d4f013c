"""The history drawn: a compact 80-column table in the terminal, an SVG chart per rate in HTML."""

from __future__ import annotations

__all__ = ["history_html", "history_sections", "print_history"]

from html import escape

from simulator.plural import plural
from simulator.report.document_html import document
from simulator.report.draw_html import html_section
from simulator.report.section import Row, Section, State, Table, table_section, text_row
from simulator.safety.history import History, HistoryPoint
from simulator.stats.rates import RateView, pct
from simulator.visible import echo

LABEL = {
    "pass_rate": "conversation pass rate",
    "under_triage": "under-triage",
    "critical_sensitivity": "critical sensitivity",
    "over_triage": "over-triage",
}
SHORT = {
    "pass_rate": "pass",
    "under_triage": "under",
    "critical_sensitivity": "crit sens",
    "over_triage": "over",
}


def _cell(rate: RateView | None) -> str:
    """`4.5% ≤24` (the clustered upper bound of a failure rate) or `95% ≥76` (the lower of a success rate)."""
    if rate is None or rate.rate is None:
        return "–"
    low, high = rate.interval
    if rate.shown_bound is not None:  # nothing against the rate: the one-sided bound the report cites
        low = high = 1 - rate.shown_bound if rate.counts == "successes" else rate.shown_bound
    if rate.counts == "failures":
        return f"{100 * rate.rate:.1f}% ≤{100 * high:.0f}"
    return f"{100 * rate.rate:.1f}% ≥{100 * low:.0f}"


def _short(value: str | None) -> str:
    return "–" if not value else value.split(":", 1)[-1][:8]


def _version(value: str | None) -> str:
    """A bot version in a few characters: a hash's first 8, a declared version's first 20."""
    if not value:
        return "not identified"
    return _short(value) if value.startswith("sha256:") else value[:20]


def _points_section(history: History) -> Section:
    rows: list[Row] = []
    for i, p in enumerate(history.points, start=1):
        harm = "–" if p.harm_per_1000 is None else f"{p.harm_per_1000:.0f} ≤{p.harm_high:.0f}"
        rows.append(
            text_row(
                cells=[
                    str(i),
                    p.run_id,
                    p.created_at[:16].replace("T", " "),
                    f"{p.series}{'*' if p.changed else ''}",
                    *[_cell(p.rates.get(m)) for m in history.metrics],
                    harm,
                    f"{_short(p.suite_hash)} · {_short(p.scenario_set)}",
                ],
                state="warn" if p.changed else None,
                details=([p.changed] if p.changed else [])
                + [f"bot version {p.bot_version or 'not identified'}"]
                + ([f"signed: {'; '.join(p.signed)}"] if p.signed else []),
            )
        )
    return table_section(
        id="points",
        title=f"Runs of {history.suite} in time order",
        notes=[
            "Each rate with its vignette-clustered 95% bound (≤ upper for failure rates, ≥ lower for success "
            "rates); a new series starts where the scenario set changed."
        ],
        columns=[
            "#",
            "run",
            "created",
            "series",
            *[SHORT[m] for m in history.metrics],
            "harm/1000",
            "suite · scenario set",
        ],
        rows=rows,
    )


def _steps_section(history: History) -> Section:
    rows: list[Row] = []
    for s in history.steps:
        if not s.comparable:
            rows.append(text_row(cells=[f"{s.a} → {s.b}", "–", "–", "–", "–", s.reason], state="warn"))
        for t in s.tests:
            state: State | None = "fail" if t.change == "worse" else ("ok" if t.change == "better" else None)
            rows.append(
                text_row(
                    cells=[
                        f"{s.a} → {s.b}",
                        t.name,
                        f"{t.regressions} / {t.improvements} of {t.pairs}",
                        f"{t.scenarios_worse} / {t.scenarios_better}",
                        f"{t.clustered_p_value:.3g}",
                        t.change,
                    ],
                    state=state,
                )
            )
    return table_section(
        id="steps",
        title="Paired clustered test between consecutive runs",
        columns=[
            "from → to",
            "measure",
            "worse / better (conversations)",
            "scenarios worse / better",
            "clustered p",
            "change",
        ],
        rows=rows,
    )


def history_sections(history: History) -> list[Section]:
    """The points, the steps between them and (when a hazard log was given) each hazard's bound per run."""
    sections = [_points_section(history), _steps_section(history)]
    ids = sorted({h for p in history.points for h in p.hazards})
    if ids:
        rows = []
        for h in ids:
            cells = []
            for p in history.points:
                point = p.hazards.get(h)
                cells.append("–" if point is None or point.bound is None else f"≤{pct(point.bound)}")
            rows.append(text_row(cells=[h, *cells]))
        hazards = table_section(
            id="hazards",
            title="Each hazard's largest bounded rate of harm per conversation",
            columns=["hazard", *[str(i) for i in range(1, len(history.points) + 1)]],
            rows=rows,
        )
        sections.append(hazards)
    return sections


def print_history(history: History) -> None:
    """The compact terminal form: one line per run, within 80 columns; then the steps and the hazards."""
    widths = [2, 14, 11, 3] + [10] * len(history.metrics)
    header = ["#", "run", "created", "set", *[SHORT[m] for m in history.metrics]]
    echo(
        f"history of {history.suite}: {plural(len(history.points), 'run')} (rates with clustered 95% bounds)"
    )
    echo(" ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for i, p in enumerate(history.points, start=1):
        run = p.run_id if len(p.run_id) <= 14 else "…" + p.run_id[-13:]
        cells = [
            str(i),
            run,
            p.created_at[5:16].replace("T", " "),
            f"{p.series}{'*' if p.changed else ''}",
            *[_cell(p.rates.get(m)) for m in history.metrics],
        ]
        echo(" ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()[:80])
        if p.changed:
            echo(f"   * {p.changed}"[:80])
        previous = history.points[i - 2] if i > 1 else None
        if previous is not None and previous.bot_version != p.bot_version:
            echo(f"   bot version changed: {_version(previous.bot_version)} → {_version(p.bot_version)}"[:80])
        if previous is None or previous.suite_hash != p.suite_hash:
            what = "suite" if previous is None else "suite changed (bot, models or settings)"
            echo(f"   {what}: {_short(p.suite_hash)} · scenario set {_short(p.scenario_set)}"[:80])
    for n, s in enumerate(history.steps, start=1):
        if not s.comparable:
            echo(f"{n}→{n + 1}: {s.reason}"[:80])
        for t in s.tests:
            change = "n.s." if t.change == "no significant change" else t.change
            echo(
                f"{n}→{n + 1} {t.name.removeprefix('outcome: ')}: scenarios worse {t.scenarios_worse}, "
                f"better {t.scenarios_better}; clustered p={t.clustered_p_value:.2g} {change}"[:80]
            )
    for section in history_sections(history)[2:]:
        echo(section.title[:80])
        for table in (b for b in section.blocks if isinstance(b, Table)):
            for row in table.rows:
                echo(" ".join(c.text.ljust(8) for c in row.cells)[:80])


def _x(i: int, count: int, left: int, width: int) -> float:
    return left + (width * (i + 0.5) / count)


def _point_parts(
    points: list[HistoryPoint], metric: str, geometry: tuple[int, int, int, int, float]
) -> list[str]:
    left, top, width, height, top_value = geometry
    parts, previous = [], None

    def y(v: float) -> float:
        return top + height * (1 - v / top_value)

    for i, p in enumerate(points):
        rate = p.rates.get(metric)
        if p.changed:
            xb = left + width * i / len(points)
            parts.append(
                f'<line x1="{xb:.1f}" y1="{top}" x2="{xb:.1f}" y2="{top + height}" stroke="#b26a00" '
                'stroke-dasharray="4 3"/>'
            )
            parts.append(
                f'<text x="{xb + 3:.1f}" y="{top + 10}" font-size="9" fill="#b26a00">scenario set changed</text>'
            )
            previous = None
        if i and not p.changed and p.bot_version != points[i - 1].bot_version:
            xb = left + width * i / len(points)
            parts.append(
                f'<text x="{xb + 3:.1f}" y="{top + 10}" font-size="9" fill="#5b6b7c">bot version changed</text>'
            )
        if rate is None or rate.rate is None:
            previous = None
            continue
        low, high = rate.interval
        x = _x(i, len(points), left, width)
        parts.append(
            f'<line x1="{x:.1f}" y1="{y(low):.1f}" x2="{x:.1f}" y2="{y(high):.1f}" stroke="#5b6b7c" stroke-width="1.5"/>'
        )
        if previous is not None:
            parts.append(
                f'<line x1="{previous[0]:.1f}" y1="{previous[1]:.1f}" x2="{x:.1f}" y2="{y(rate.rate):.1f}" '
                'stroke="#1f6feb" stroke-width="1.5"/>'
            )
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y(rate.rate):.1f}" r="3.5" fill="#1f6feb"><title>'
            f"{escape(p.run_id)}: {escape(rate.text)}</title></circle>"
        )
        run = p.run_id if len(p.run_id) <= 16 else "…" + p.run_id[-15:]
        signed = " ✓ signed" if p.signed else ""
        parts.append(
            f'<text x="{x:.1f}" y="{top + height + 12}" font-size="8" text-anchor="middle">{i + 1} '
            f"{escape(run)}</text>"
            f'<text x="{x:.1f}" y="{top + height + 22}" font-size="8" text-anchor="middle" fill="#555">'
            f"{escape(p.created_at[:10])}{signed}</text>"
        )
        previous = (x, y(rate.rate))
    return parts


def svg_chart(history: History, metric: str, width: int = 640, height: int = 170) -> str:
    """One rate across the runs: points, clustered 95% whiskers, a line within each series."""
    left, top, plot_w, plot_h = 48, 22, width - 60, height - 50
    highs = [
        r.interval[1] for p in history.points if (r := p.rates.get(metric)) is not None and r.rate is not None
    ]
    top_value = min(1.0, max(0.05, max(highs, default=0.05) * 1.1))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(LABEL[metric])} across runs">',
        f'<text x="{left}" y="14" font-size="12" font-weight="600">{escape(LABEL[metric])}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#999"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        value, yy = top_value * fraction, top + plot_h * (1 - fraction)
        parts.append(
            f'<text x="{left - 4}" y="{yy + 3:.1f}" font-size="9" text-anchor="end">{100 * value:.0f}%</text>'
        )
    parts += _point_parts(history.points, metric, (left, top, plot_w, plot_h, top_value))
    parts.append("</svg>")
    return "".join(parts)


def history_html(history: History) -> str:
    """The page: one chart per key rate, then the tables."""
    charts = "".join(f'<figure class="chart">{svg_chart(history, m)}</figure>' for m in history.metrics)
    body = f'<section id="charts"><h2>Key rates</h2>{charts}</section>'
    body += "".join(html_section(s) for s in history_sections(history))
    meta = f"{plural(len(history.points), 'run')} · points numbered in time order · whiskers: the 95% interval each report shows (clustered over vignettes)"
    return document(f"History: {history.suite}", meta, body, extra_css="figure.chart { margin: 0 0 3mm; }")
