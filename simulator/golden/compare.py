"""Compare two golden runs item by item: pass/fail both ways, McNemar's exact test, and the flipped items.

The runs must cover the same item ids; items that errored in either run are left out of the test and
counted on their own. Both runs' summaries are shown side by side, each scorer next to the verdict.
"""

from __future__ import annotations

__all__ = ["CompareReport", "Flip", "compare_runs", "render_compare"]


from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from simulator.analysis.stats import mcnemar_exact
from simulator.errors import UserError
from simulator.golden.report import GoldenReport, Rate, build_report, format_rate, print_heading
from simulator.golden.runner import GoldenRun
from simulator.golden.scoring import Gate


class Flip(BaseModel):
    """An item whose verdict differs between the runs."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    intent: str
    verdict_a: str
    verdict_b: str
    reply_a: str
    reply_b: str


class CompareReport(BaseModel):
    """Two runs matched on item_id: the 2×2 counts, McNemar's exact p, flips, and both runs' summaries."""

    model_config = ConfigDict(extra="forbid")

    a: GoldenReport
    b: GoldenReport
    same_items_file: bool
    n_paired: int
    both_pass: int
    a_only: int  # passed in A, failed in B
    b_only: int  # failed in A, passed in B
    both_fail: int
    errors: int  # items with an error in either run (left out of the test)
    mcnemar_p: float
    flipped: list[Flip] = Field(default_factory=list)

    def to_json(self) -> str:
        """The comparison as indented JSON."""
        return self.model_dump_json(indent=2)


def _preview(ids: set[str]) -> str:
    shown = sorted(ids)[:5]
    more = f" and {len(ids) - 5} more" if len(ids) > 5 else ""
    return ", ".join(shown) + more


def compare_runs(run_a: GoldenRun, run_b: GoldenRun, gate: Gate | None = None) -> CompareReport:
    """Compare two runs of the same items; different item sets are a UserError naming the differences."""
    by_a = {r.item_id: r for r in run_a.results}
    by_b = {r.item_id: r for r in run_b.results}
    if by_a.keys() != by_b.keys():
        parts = []
        if only_a := by_a.keys() - by_b.keys():
            parts.append(f"only in {run_a.path}: {_preview(set(only_a))}")
        if only_b := by_b.keys() - by_a.keys():
            parts.append(f"only in {run_b.path}: {_preview(set(only_b))}")
        raise UserError("cannot compare runs over different items (" + "; ".join(parts) + ")")
    gate = gate or Gate()
    counts = {"both_pass": 0, "a_only": 0, "b_only": 0, "both_fail": 0, "errors": 0}
    flipped: list[Flip] = []
    for result_a in run_a.results:
        result_b = by_b[result_a.item_id]
        verdicts = (result_a.verdict, result_b.verdict)
        if "error" in verdicts:
            counts["errors"] += 1
            continue
        key = {("pass", "pass"): "both_pass", ("pass", "fail"): "a_only", ("fail", "pass"): "b_only"}
        counts[key.get(verdicts, "both_fail")] += 1
        if verdicts[0] != verdicts[1]:
            flipped.append(
                Flip(
                    item_id=result_a.item_id,
                    intent=result_a.intent,
                    verdict_a=verdicts[0],
                    verdict_b=verdicts[1],
                    reply_a=result_a.reply,
                    reply_b=result_b.reply,
                )
            )
    return CompareReport(
        a=build_report(run_a, gate),
        b=build_report(run_b, gate),
        same_items_file=run_a.manifest.items_sha256 == run_b.manifest.items_sha256,
        n_paired=len(run_a.results) - counts["errors"],
        mcnemar_p=mcnemar_exact(counts["a_only"], counts["b_only"]),
        flipped=flipped,
        **counts,
    )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _intent_rates(report: GoldenReport) -> dict[str, Rate]:
    return {row.intent: row.rate for row in report.intents}


def render_compare(report: CompareReport, console: Console | None = None) -> None:
    """Print the side-by-side summary, per-intent table, 2×2 counts with McNemar's p, and the flips."""
    console = console or Console()
    a, b = report.a, report.b
    console.print(
        f"[bold]A[/] {escape(a.run_id)} ({escape(a.bot)})   [bold]B[/] {escape(b.run_id)} ({escape(b.bot)})"
    )
    if not report.same_items_file:
        console.print(
            "[yellow]warning: the runs used different versions of the items file (sha256 differs)[/]"
        )
    print_heading(console, "Scorers, side by side (the verdict decides; similarity scores gate nothing)")
    summary = Table()
    for column in ("scorer", "A", "B"):
        summary.add_column(column)
    gate = f"gate {a.gate.metric} ≥ {a.gate.threshold:g}"
    rows = [
        ("[bold]verdict[/] (pass)", format_rate(a.pass_rate), format_rate(b.pass_rate)),
        ("exact match", format_rate(a.exact_match), format_rate(b.exact_match)),
        ("assertions", format_rate(a.assertions), format_rate(b.assertions)),
        (gate, format_rate(a.gate_pass), format_rate(b.gate_pass)),
        ("mean token F1", _number(a.mean_token_f1), _number(b.mean_token_f1)),
        ("mean ROUGE-L", _number(a.mean_rouge_l), _number(b.mean_rouge_l)),
        ("mean difflib ratio", _number(a.mean_difflib_ratio), _number(b.mean_difflib_ratio)),
        ("errors", str(a.errors), str(b.errors)),
    ]
    for row in rows:
        summary.add_row(*row)
    console.print(summary)

    print_heading(console, "Verdict by intent")
    intents = Table()
    for column in ("intent", "A", "B"):
        intents.add_column(column)
    rates_a, rates_b = _intent_rates(a), _intent_rates(b)
    for intent in dict.fromkeys([*rates_a, *rates_b]):
        cells = []
        for rates in (rates_a, rates_b):
            rate = rates.get(intent)
            text = f"{rate.k}/{rate.n}" if rate else "-"
            cells.append(Text(text, style="bold red" if rate and rate.n and rate.k == 0 else ""))
        intents.add_row(Text(intent), *cells)
    console.print(intents)

    console.print()
    console.print(
        f"paired items {report.n_paired}: both pass {report.both_pass}, A only {report.a_only}, "
        f"B only {report.b_only}, both fail {report.both_fail}"
        + (f", errors (left out) {report.errors}" if report.errors else "")
    )
    console.print(f"McNemar exact p = {report.mcnemar_p:.4g} (A only vs B only, two-sided)")
    if report.flipped:
        print_heading(console, f"Flipped items: {len(report.flipped)}")
        flips = Table()
        for column in ("item", "intent", "A", "B", "reply A", "reply B"):
            flips.add_column(column)
        for f in report.flipped:
            flips.add_row(
                Text(f.item_id),
                Text(f.intent),
                f.verdict_a,
                f.verdict_b,
                Text(" ".join(f.reply_a.split())[:60]),
                Text(" ".join(f.reply_b.split())[:60]),
            )
        console.print(flips)
