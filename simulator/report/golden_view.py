"""The golden section as data (section.py): scorers beside the verdict, verdict by intent (rows of zeros
marked ALL FAIL), failing items, gate disagreements and the threshold sweep; both renderers draw it."""

from __future__ import annotations

__all__ = ["METRIC_NAMES", "golden_section", "score", "short"]

from simulator.analysis.golden import SIMILARITY_METRICS, GoldenSection
from simulator.report.analyses import Analysis, register_analysis
from simulator.report.section import Column, Note, Section, Table, number, rate_cell, text
from simulator.stats.rates import pct

METRIC_NAMES = {"token_f1": "mean token F1", "rouge_l": "mean ROUGE-L", "difflib_ratio": "mean difflib ratio"}


def score(value: float | None) -> str:
    """A mean score with three decimals, or `–` when nothing was scored."""
    return "–" if value is None else f"{value:.3f}"


def short(words: str, width: int = 70) -> str:
    """Text on one line, cut at `width` characters."""
    flat = " ".join(words.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _scorers(golden: GoldenSection) -> Table:
    table = Table(
        [Column("scorer"), Column("result (items)")],
        title=f"Golden items: {golden.items} items × {golden.samples} sample(s); the verdict decides, "
        "similarity scores gate nothing",
    )
    table.add(text("verdict (pass)", strong=True), rate_cell(golden.verdict))
    if golden.errors:
        table.add("errors (not pass, not fail)", number(golden.errors, state="error"))
    if golden.samples > 1:
        table.add("samples passing", rate_cell(golden.sample_pass))
    table.add("exact match", rate_cell(golden.exact_match))
    table.add("assertions", rate_cell(golden.assertions))
    table.add(f"gate {golden.gate.metric} ≥ {golden.gate.threshold:g}", rate_cell(golden.gate_pass))
    for metric in SIMILARITY_METRICS:
        table.add(METRIC_NAMES[metric], score(golden.means.get(metric)))
    return table


def _intents(golden: GoldenSection) -> Table:
    table = Table(
        [
            Column("intent"),
            *(Column(n, numeric=True) for n in ("pass", "fail", "error")),
            Column("pass rate (95% CI)"),
        ],
        title="Verdict by intent (a row of zeros is a bug report)",
    )
    for row in golden.intents:
        intent = f"{row.intent} ALL FAIL" if row.all_failed else row.intent
        table.add(intent, number(row.passed), number(row.failed), number(row.errors), rate_cell(row.rate),
                  state="fail" if row.all_failed else None)  # fmt: skip
    return table


def _failed(golden: GoldenSection) -> list[Table | Note]:
    if not golden.failed_items:
        return []
    table = Table(
        [Column(n) for n in ("item", "intent", "why", "evidence")],
        title=f"Failing items: {len(golden.failed_items)}",
    )
    for item in golden.failed_items:
        table.add(
            item.item_id, item.intent, "; ".join(item.failures), " · ".join(f'"{q}"' for q in item.evidence)
        )
    return [table]


def _disagreements(golden: GoldenSection) -> Table:
    gate = f"{golden.gate.metric} ≥ {golden.gate.threshold:g}"
    table = Table(
        [Column("item"), Column("intent"), Column(golden.gate.metric, numeric=True), Column("gate"), Column("verdict"),
         Column("reply")],
        title=f"Where the gate ({gate}) and the verdict disagree: {len(golden.disagreements)}",
    )  # fmt: skip
    for d in golden.disagreements:
        table.add(d.item_id, d.intent, number(d.score, f"{d.score:.2f}"), "pass" if d.gate_passed else "fail",
                  text(d.verdict, "fail" if d.verdict == "fail" else None), short(d.reply, 120))  # fmt: skip
    return table


def _sweep(golden: GoldenSection) -> Table:
    table = Table(
        [Column("threshold", numeric=True), *(Column(m, numeric=True) for m in SIMILARITY_METRICS)],
        title="Threshold sweep: items at or above each threshold",
    )
    for row in golden.sweep:
        cells = [f"{row.shares[m].k}/{row.shares[m].n} {pct(row.shares[m].rate)}" for m in SIMILARITY_METRICS]
        table.add(f"{row.threshold:.1f}", *cells)
    return table


def golden_section(golden: GoldenSection | None) -> Section:
    """The section; empty when the run holds no golden item."""
    if golden is None:
        return Section("golden", "Golden items")
    note = Note(
        f"{golden.items} items × {golden.samples} sample(s): an item passes only if every sample passes; "
        f"errored items ({golden.errors}) are left out of every rate. The verdict (exact match or the "
        "assertions) decides; similarity scores gate nothing."
    )
    blocks = [
        note,
        _scorers(golden),
        _intents(golden),
        *_failed(golden),
        _disagreements(golden),
        _sweep(golden),
    ]
    return Section("golden", "Golden items", blocks, "fail" if golden.failed_items else None)


register_analysis(
    Analysis(name="golden", draw=lambda report, everything: golden_section(report.golden), draw_order=10)
)
