"""The report's "Numbers that hold up" and "Judges" sections as data (section.py): vignette-clustered
intervals, missing data, worst-at-k, run-to-run spread (docs/stats.md explains each); judge stability, jury
agreement, corrected failure rates and rubric points."""

from __future__ import annotations

__all__: list[str] = []

from simulator.plural import plural
from simulator.report.analyses import Analysis, register_analysis
from simulator.report.model import Report, headline_rates
from simulator.report.section import Column, Note, Section, Table, number, rate_cell, text
from simulator.stats.rates import RateView, pct

SHOWN_DISAGREEMENTS = 5  # jury disagreements listed per criterion

STATS_NOTE = (
    "Repeats and variants of a vignette are not independent trials, so each pooled rate also has a vignette-clustered "
    "interval, its effective sample size (n_eff, between the number of vignettes and of conversations) and "
    "the intraclass correlation. With no failures, the bound rests on the distinct vignettes. Errored "
    "conversations are left out of every rate; the last column shows the rate had they all failed or all passed. "
    "How to read n_eff and ICC: n_eff is how many independent conversations the evidence is worth; when it "
    "equals the number of vignettes (ICC 1.00), every repeat of a vignette went the same way, so the repeats "
    "added nothing and only more vignettes (clinical cases) would narrow the interval. ICC near 0: the "
    "repeats varied as independent trials would."
)
SAME_AT_EVERY_K = (
    "pass^k is the same at every k: each scenario passed all its repeats or none (a deterministic bot or "
    "user), so repeating a scenario tells nothing new; run more scenarios, not more repeats."
)


def _clustered_row(table: Table, name: str, value: RateView) -> None:
    cl = value.clustered
    clustered = "–" if cl is None else f"{pct(cl.low)}–{pct(cl.high)}"
    if cl is not None and cl.bound is not None:  # nothing against the rate: its one-sided bound instead
        side = f"≥{pct(1 - cl.bound)}" if value.counts == "successes" else f"≤{pct(cl.bound)}"
        clustered = f"{side} on {cl.scenarios} {cl.unit}, one-sided"
    missing = (
        "–" if not value.errored else f"{pct(value.worst)} / {pct(value.best)} ({value.errored} errored)"
    )
    table.add(
        name, f"{value.k}/{value.n} = {pct(value.rate)}", clustered, f"{pct(value.low)}–{pct(value.high)}",
        "–" if cl is None else number(cl.scenarios), "–" if cl is None else number(cl.n_eff, f"{cl.n_eff:.1f}"),
        "–" if cl is None or cl.icc is None else number(cl.icc, f"{cl.icc:.2f}"), missing,
    )  # fmt: skip


def _missing(report: Report) -> list[Table | Note]:
    missing = report.missing
    if not missing.errored:
        return []
    blocks: list[Table | Note] = [
        Note(
            f"{missing.errored} of {plural(missing.conversations, 'conversation')} errored and are left out of every "
            "rate; each rate above shows its value had they all failed or all passed.",
            lead="Missing data:",
        )
    ]
    blocks += [Note(w, "warn", lead="WARNING") for w in missing.warnings]
    if missing.scenarios:
        table = Table(
            [Column("scenario"), Column("errored", numeric=True), Column("conversations", numeric=True)]
        )
        for s in missing.scenarios:
            table.add(s.scenario_id, number(s.errored), number(s.conversations))
        blocks.append(table)
    return blocks


def stats_section(report: Report) -> Section:
    """Clustered intervals of the headline rates, missing data, worst-at-k and the run-to-run spread."""
    clustered = Table(
        [Column("rate"), Column("counts"), Column("95% CI (vignette-clustered)"), Column("95% CI (per conversation)"),
         Column("vignettes", numeric=True), Column("n_eff", numeric=True), Column("ICC", numeric=True),
         Column("if errored: fail / pass")],
        title="Repeats are not independent: vignette-clustered 95% intervals (docs/stats.md)",
    )  # fmt: skip
    for name, value in headline_rates(report):
        _clustered_row(clustered, name, value)
    blocks: list[Table | Note] = [Note(STATS_NOTE), clustered, *_missing(report)]
    worst = [row for row in report.pass_hat_k if row.worst_at_k is not None]
    if worst:
        table = Table(
            [
                Column("k"),
                Column("pass^k", numeric=True),
                Column("worst-at-k", numeric=True),
                Column("vignettes", numeric=True),
            ],
            title="worst-at-k: expected lowest score in k repeats, averaged",
        )
        for row in worst:
            table.add(str(row.k), pct(row.value), pct(row.worst_at_k), number(row.worst_vignettes))
        blocks.append(table)
        if len(worst) > 1 and len({round(row.value, 6) for row in worst}) == 1:  # reading item 11
            blocks.append(Note(SAME_AT_EVERY_K))
    spreads = [s for s in report.spread if s.repeats > 1]
    if spreads:
        table = Table(
            [Column("rate"), Column("repeats", numeric=True), Column("mean", numeric=True), Column("SD", numeric=True),
             Column("lowest–highest")],
            title="Run-to-run spread: each repeat index as one run of the suite",
        )  # fmt: skip
        for s in spreads:
            table.add(s.metric, number(s.repeats), pct(s.mean), pct(s.sd), f"{pct(s.low)}–{pct(s.high)}")
        blocks.append(table)
    return Section("stats", "Numbers that hold up", blocks)


def _jury(report: Report) -> list[Table | Note]:
    quality = report.judge_quality
    if quality is None or not quality.jury:
        return []
    table = Table(
        [Column(n) for n in ("criterion", "rule", "models", "all agree", "Fleiss' kappa")],
        title="Jury agreement",
    )
    notes: list[Table | Note] = []
    for row in quality.jury:
        kappa = "n/a" if row.fleiss_kappa is None else f"{row.fleiss_kappa:.2f}"
        table.add(row.criterion_id, row.rule or "", ", ".join(row.models), rate_cell(row.agreement), kappa)
        for d in row.disagreements[:SHOWN_DISAGREEMENTS]:
            said = ", ".join(f"{m}: {a}" for m, a in d.answers.items())
            notes.append(Note(f"{row.criterion_id} {d.conversation_id}: {said} → {d.verdict}"))
        more = row.more_disagreements + max(0, len(row.disagreements) - SHOWN_DISAGREEMENTS)
        if more:
            notes.append(Note(f"and {more} more disagreements on {row.criterion_id}"))
    return [table, *notes]


def judges_section(report: Report) -> Section:
    """Judge stability, jury agreement, corrected failure rates and rubric points, each when present."""
    quality = report.judge_quality
    blocks: list[Table | Note] = []
    if quality is not None and quality.stability:
        table = Table(
            [Column("criterion"), Column("judge model"), Column("samples", numeric=True),
             Column("flip rate (conversations)"), Column("ties → error", numeric=True), Column("")],
            title="Judge stability (A/A: the same conversation judged several times)",
        )  # fmt: skip
        for r in quality.stability:
            table.add(r.criterion_id, r.judge_model, number(r.samples), rate_cell(r.flips), number(r.undecided),
                      text("UNSTABLE" if r.unstable else "", "warn" if r.unstable else None))  # fmt: skip
        blocks.append(table)
    blocks += _jury(report)
    if quality is not None and quality.corrected_rates:
        table = Table(
            [Column(n) for n in ("criterion", "raw failure rate", "Se", "Sp", "labelled",
                                 "corrected (Rogan–Gladen, 95% CI)", "note")],
            title="Failure rates corrected for the judge's measured sensitivity and specificity",
        )  # fmt: skip
        for c in quality.corrected_rates:
            interval = f" ({pct(c.low)}–{pct(c.high)})" if c.low is not None else ""
            corrected = (pct(c.corrected) + interval) if c.corrected is not None else "n/a"
            table.add(c.criterion_id, f"{c.raw_k}/{c.raw_n} {pct(c.raw)}", pct(c.sensitivity), pct(c.specificity),
                      number(c.labelled), corrected, c.note)  # fmt: skip
        blocks.append(table)
    if report.points is not None:
        table = Table(
            [Column("group"), Column("mean score (95% CI)")],
            title="Rubric points: earned / maximum positive, per conversation",
        )
        points = report.points
        table.add("overall", points.overall.short)
        for tag, view in points.by_tag.items():
            table.add(f"tag {tag}", view.short)
        for category, view in points.by_category.items():
            table.add(f"category {category}", view.short)
        blocks.append(table)
    return Section("judges", "Judges", blocks)


register_analysis(
    Analysis(name="stats", draw=lambda report, everything: stats_section(report), draw_order=60)
)
register_analysis(
    Analysis(name="judges", draw=lambda report, everything: judges_section(report), draw_order=150)
)
