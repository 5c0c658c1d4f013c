"""The golden section in the terminal: scorers beside the verdict, verdict by intent (rows of zeros in red),
failing items, gate disagreements and the threshold sweep."""

from __future__ import annotations

__all__ = ["render_golden"]

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from simulator.analysis.golden import SIMILARITY_METRICS, GoldenSection
from simulator.analysis.rates import pct
from simulator.report.table_print import print_table

METRIC_NAMES = {"token_f1": "mean token F1", "rouge_l": "mean ROUGE-L", "difflib_ratio": "mean difflib ratio"}


def number(value: float | None) -> str:
    """A mean score with three decimals, or `–` when nothing was scored."""
    return "–" if value is None else f"{value:.3f}"


def short(text: str, width: int = 70) -> str:
    """Text on one line, cut at `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _scorers(console: Console, golden: GoldenSection) -> None:
    table = Table(
        title=f"Golden items: {golden.items} items × {golden.samples} sample(s); the verdict decides, "
        "similarity scores gate nothing",
        title_justify="left",
    )
    table.add_column("scorer")
    table.add_column("result (items)")
    table.add_row("[bold]verdict[/] (pass)", escape(golden.verdict.short))
    if golden.errors:
        table.add_row("errors (not pass, not fail)", f"[magenta]{golden.errors}[/]")
    if golden.samples > 1:
        table.add_row("samples passing", escape(golden.sample_pass.short))
    table.add_row("exact match", escape(golden.exact_match.short))
    table.add_row("assertions", escape(golden.assertions.short))
    table.add_row(f"gate {golden.gate.metric} ≥ {golden.gate.threshold:g}", escape(golden.gate_pass.short))
    for metric in SIMILARITY_METRICS:
        table.add_row(METRIC_NAMES[metric], number(golden.means.get(metric)))
    _print_table(console, table)


def _intents(console: Console, golden: GoldenSection) -> None:
    table = Table(title="Verdict by intent (a row of zeros is a bug report)", title_justify="left")
    for column in ("intent", "pass", "fail", "error", "pass rate (95% CI)"):
        table.add_column(column, justify="left" if column == "intent" else "right")
    for row in golden.intents:
        table.add_row(
            Text(row.intent),
            str(row.passed),
            str(row.failed),
            str(row.errors),
            escape(row.rate.short),
            style="bold red" if row.all_failed else None,
        )
    _print_table(console, table)


def _failed(console: Console, golden: GoldenSection) -> None:
    if not golden.failed_items:
        return
    table = Table(title=f"Failing items: {len(golden.failed_items)}", title_justify="left")
    for column in ("item", "intent", "why", "evidence"):
        table.add_column(column, overflow="fold")
    for item in golden.failed_items:
        table.add_row(
            Text(item.item_id),
            Text(item.intent),
            Text("; ".join(item.failures)),
            Text(" · ".join(f'"{quote}"' for quote in item.evidence)),
        )
    _print_table(console, table)


def _disagreements(console: Console, golden: GoldenSection) -> None:
    gate = f"{golden.gate.metric} ≥ {golden.gate.threshold:g}"
    title = f"Where the gate ({gate}) and the verdict disagree: {len(golden.disagreements)}"
    if not golden.disagreements:
        console.print(title)
        return
    table = Table(title=title, title_justify="left")
    for column in ("item", "intent", golden.gate.metric, "gate", "verdict", "reply"):
        table.add_column(column)
    for d in golden.disagreements:
        gate_text = "pass" if d.gate_passed else "fail"
        table.add_row(
            Text(d.item_id), Text(d.intent), f"{d.score:.2f}", gate_text, d.verdict, Text(short(d.reply))
        )
    _print_table(console, table)


def _sweep(console: Console, golden: GoldenSection) -> None:
    table = Table(title="Threshold sweep: items at or above each threshold", title_justify="left")
    table.add_column("threshold", justify="right")
    for metric in SIMILARITY_METRICS:
        table.add_column(metric, justify="right")
    for row in golden.sweep:
        cells = [f"{row.shares[m].k}/{row.shares[m].n} {pct(row.shares[m].rate)}" for m in SIMILARITY_METRICS]
        table.add_row(f"{row.threshold:.1f}", *cells)
    _print_table(console, table)


def render_golden(console: Console, golden: GoldenSection | None) -> None:
    """Print the golden section; nothing when the run holds no golden item."""
    if golden is None:
        return
    _scorers(console, golden)
    _intents(console, golden)
    _failed(console, golden)
    _disagreements(console, golden)
    _sweep(console, golden)


def _print_table(console: Console, table: Table) -> None:
    """The report's table printer: nothing cut at 80 columns."""
    print_table(console, table)
