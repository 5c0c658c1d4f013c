"""Golden run report: verdicts with Wilson intervals, per-intent table, gate disagreements, threshold sweep.

The report is data (`GoldenReport`, a pydantic model with `to_json`) built from a run's results;
`render_report` draws it with rich. Similarity metrics are shown next to the verdict, never instead of it.
"""

from __future__ import annotations

__all__ = [
    "SIMILARITY_METRICS",
    "SWEEP_THRESHOLDS",
    "Disagreement",
    "FailedItem",
    "GoldenReport",
    "IntentRow",
    "Rate",
    "SweepRow",
    "build_report",
    "format_rate",
    "print_heading",
    "render_report",
]

from statistics import fmean

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from simulator.analysis.stats import wilson_interval
from simulator.golden.runner import GoldenRun
from simulator.golden.scoring import Gate, ItemResult, parse_gate

SIMILARITY_METRICS = ("token_f1", "rouge_l", "difflib_ratio")
SWEEP_THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 10))


class Rate(BaseModel):
    """k of n with its Wilson 95% interval; `rule_of_three` is 3/n when none of the n failed."""

    model_config = ConfigDict(extra="forbid")

    k: int
    n: int
    rate: float | None
    low: float
    high: float
    rule_of_three: float | None = None

    @classmethod
    def of(cls, k: int, n: int) -> Rate:
        interval = wilson_interval(k, n)
        low, high = interval.low, interval.high
        return cls(
            k=k,
            n=n,
            rate=k / n if n else None,
            low=low,
            high=high,
            rule_of_three=3 / n if n and k == n else None,
        )


class IntentRow(BaseModel):
    """One stratum: how many items of this intent passed; all_failed marks a row of zeros (a bug report)."""

    model_config = ConfigDict(extra="forbid")

    intent: str
    passed: int
    failed: int
    errors: int
    rate: Rate
    all_failed: bool


class Disagreement(BaseModel):
    """An item where the similarity gate and the verdict disagree."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    intent: str
    score: float
    gate_passed: bool
    verdict: str
    reply: str


class SweepRow(BaseModel):
    """Share of scored items whose metric reaches `threshold`, per similarity metric."""

    model_config = ConfigDict(extra="forbid")

    threshold: float
    shares: dict[str, Rate]


class FailedItem(BaseModel):
    """A failing item with what failed and the quoted evidence."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    intent: str
    failures: list[str]
    evidence: list[str]
    sample_pass_rate: float | None


class GoldenReport(BaseModel):
    """Everything `golden report` shows, as data."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    bot: str
    items_file: str
    items_sha256: str
    status: str
    samples: int
    n_items: int
    passed: int
    failed: int
    errors: int
    pass_rate: Rate
    sample_pass_rate: Rate
    exact_match: Rate
    assertions: Rate
    mean_token_f1: float | None
    mean_rouge_l: float | None
    mean_difflib_ratio: float | None
    gate: Gate
    gate_pass: Rate
    intents: list[IntentRow]
    disagreements: list[Disagreement] = Field(default_factory=list)
    sweep: list[SweepRow] = Field(default_factory=list)
    failed_items: list[FailedItem] = Field(default_factory=list)

    def to_json(self) -> str:
        """The report as indented JSON."""
        return self.model_dump_json(indent=2)


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def _intent_rows(results: list[ItemResult]) -> list[IntentRow]:
    rows: list[IntentRow] = []
    for intent in dict.fromkeys(r.intent for r in results):
        group = [r for r in results if r.intent == intent]
        passed = sum(r.verdict == "pass" for r in group)
        failed = sum(r.verdict == "fail" for r in group)
        errors = len(group) - passed - failed
        rate = Rate.of(passed, passed + failed)
        rows.append(
            IntentRow(
                intent=intent,
                passed=passed,
                failed=failed,
                errors=errors,
                rate=rate,
                all_failed=failed > 0 and passed == 0,
            )
        )
    return rows


def build_report(run: GoldenRun, gate: Gate | None = None) -> GoldenReport:
    """Build the report data of one run; `gate` defaults to the gate recorded in the manifest."""
    manifest = run.manifest
    gate = gate or parse_gate(manifest.gate)
    results = run.results
    scored = [r for r in results if r.verdict != "error"]
    passed = sum(r.verdict == "pass" for r in results)
    samples = [s for r in results for s in r.samples if s.error is None]
    with_assertions = [r for r in scored if r.assertions_passed is not None]
    disagreements: list[Disagreement] = []
    gate_passes = 0
    for r in scored:
        gate_passed = bool(gate.passes(r))
        gate_passes += gate_passed
        if gate_passed != (r.verdict == "pass"):
            score = getattr(r, gate.metric)
            disagreements.append(
                Disagreement(
                    item_id=r.item_id,
                    intent=r.intent,
                    score=score,
                    gate_passed=gate_passed,
                    verdict=r.verdict,
                    reply=r.reply,
                )
            )
    sweep = [
        SweepRow(
            threshold=t,
            shares={
                m: Rate.of(sum((getattr(r, m) or 0.0) >= t for r in scored), len(scored))
                for m in SIMILARITY_METRICS
            },
        )
        for t in SWEEP_THRESHOLDS
    ]
    failed_items = [
        FailedItem(
            item_id=r.item_id,
            intent=r.intent,
            failures=r.failures,
            evidence=r.evidence,
            sample_pass_rate=r.sample_pass_rate,
        )
        for r in results
        if r.verdict == "fail"
    ]
    return GoldenReport(
        run_id=manifest.run_id,
        bot=manifest.bot,
        items_file=manifest.items_file,
        items_sha256=manifest.items_sha256,
        status=manifest.status,
        samples=manifest.samples,
        n_items=len(results),
        passed=passed,
        failed=len(scored) - passed,
        errors=len(results) - len(scored),
        pass_rate=Rate.of(passed, len(scored)),
        sample_pass_rate=Rate.of(sum(bool(s.passed) for s in samples), len(samples)),
        exact_match=Rate.of(sum(r.exact_match == 1.0 for r in scored), len(scored)),
        assertions=Rate.of(sum(bool(r.assertions_passed) for r in with_assertions), len(with_assertions)),
        mean_token_f1=_mean([r.token_f1 for r in scored]),
        mean_rouge_l=_mean([r.rouge_l for r in scored]),
        mean_difflib_ratio=_mean([r.difflib_ratio for r in scored]),
        gate=gate,
        gate_pass=Rate.of(gate_passes, len(scored)),
        intents=_intent_rows(results),
        disagreements=disagreements,
        sweep=sweep,
        failed_items=failed_items,
    )


def format_rate(rate: Rate, rule_of_three: bool = True) -> str:
    """`36/48  75.0% [61.2%, 85.1%]`, with the rule-of-three bound when nothing failed."""
    if rate.n == 0 or rate.rate is None:
        return "0/0"
    text = f"{rate.k}/{rate.n}  {rate.rate:.1%} [{rate.low:.1%}, {rate.high:.1%}]"
    if rule_of_three and rate.rule_of_three is not None:
        text += f"  (failures ≤ {rate.rule_of_three:.1%}, rule of three)"
    return text


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_heading(console: Console, text: str) -> None:
    """A blank line and a bold heading above a table."""
    console.print()
    console.print(Text(text, style="bold"))


def render_report(report: GoldenReport, console: Console | None = None) -> None:
    """Print the report's tables to the terminal."""
    console = console or Console()
    console.print(
        f"[bold]Golden run {escape(report.run_id)}[/]  bot [cyan]{escape(report.bot)}[/]  "
        f"items {escape(report.items_file)} "
        f"({report.n_items} items × {report.samples} sample(s), {report.status})"
    )
    print_heading(console, "Scorers (the verdict decides; similarity scores gate nothing)")
    summary = Table()
    summary.add_column("scorer")
    summary.add_column("result")
    summary.add_row("[bold]verdict[/] (pass)", format_rate(report.pass_rate))
    if report.errors:
        summary.add_row("errors (not pass, not fail)", f"[red]{report.errors}[/]")
    if report.samples > 1:
        summary.add_row("samples passing", format_rate(report.sample_pass_rate))
    summary.add_row("exact match", format_rate(report.exact_match))
    summary.add_row("assertions", format_rate(report.assertions))
    summary.add_row(f"gate {report.gate.metric} ≥ {report.gate.threshold:g}", format_rate(report.gate_pass))
    summary.add_row("mean token F1", _number(report.mean_token_f1))
    summary.add_row("mean ROUGE-L", _number(report.mean_rouge_l))
    summary.add_row("mean difflib ratio", _number(report.mean_difflib_ratio))
    console.print(summary)

    print_heading(console, "Verdict by intent (a row of zeros is a bug report)")
    intents = Table()
    for column in ("intent", "pass", "fail", "error", "pass rate [95% CI]"):
        intents.add_column(column, justify="left" if column == "intent" else "right")
    for row in report.intents:
        style = "bold red" if row.all_failed else None
        intents.add_row(
            Text(row.intent),
            str(row.passed),
            str(row.failed),
            str(row.errors),
            format_rate(row.rate, rule_of_three=False),
            style=style,
        )
    console.print(intents)

    if report.failed_items:
        print_heading(console, f"Failing items: {len(report.failed_items)}")
        failures = Table()
        for column in ("item", "intent", "why", "evidence"):
            failures.add_column(column)
        for item in report.failed_items:
            failures.add_row(
                Text(item.item_id),
                Text(item.intent),
                Text("; ".join(item.failures)),
                Text(" · ".join(f'"{e}"' for e in item.evidence)),
            )
        console.print(failures)

    gate = f"{report.gate.metric} ≥ {report.gate.threshold:g}"
    print_heading(console, f"Where the gate ({gate}) and the verdict disagree: {len(report.disagreements)}")
    disagree = Table()
    for column in ("item", "intent", report.gate.metric, "gate", "verdict", "reply"):
        disagree.add_column(column)
    for d in report.disagreements:
        disagree.add_row(
            Text(d.item_id),
            Text(d.intent),
            f"{d.score:.2f}",
            "pass" if d.gate_passed else "fail",
            d.verdict,
            Text(_short(d.reply)),
        )
    if report.disagreements:
        console.print(disagree)

    print_heading(console, "Threshold sweep: share of items at or above each threshold")
    sweep = Table()
    sweep.add_column("threshold", justify="right")
    for metric in SIMILARITY_METRICS:
        sweep.add_column(metric, justify="right")
    for sweep_row in report.sweep:
        sweep.add_row(
            f"{sweep_row.threshold:.1f}",
            *(
                f"{sweep_row.shares[m].k}/{sweep_row.shares[m].n} {sweep_row.shares[m].rate or 0:.1%}"
                for m in SIMILARITY_METRICS
            ),
        )
    console.print(sweep)
