"""The report in the terminal: the run's header, then every section (sections.py) drawn by the one
terminal renderer (draw_terminal.py), the summary (findings, critical rates) first, every rate with its
counts and interval."""

from __future__ import annotations

__all__ = ["render_terminal"]

from rich.console import Console

from simulator.analysis.rundata import short_hash
from simulator.report.draw_terminal import draw_sections
from simulator.report.model import Report
from simulator.report.sections import report_sections
from simulator.visible import terminal_console, visible_markup


def _header(console: Console, report: Report) -> None:
    """Run, suite, models and the count of the evidence: every name from the run folder shown by `visible`
    (a suite name or run id holding an escape code is printed as text, whichever console prints it)."""
    run = report.run
    console.rule("[bold]simulator report[/]")  # the run id on its own line: a rule would cut a long one
    console.print(f"run {visible_markup(run.run_id)}", overflow="fold")
    console.print(
        f"suite [bold]{visible_markup(run.suite)}[/] · bot {visible_markup(run.bot)} · "
        f"user {visible_markup(run.user_model)} · judge {visible_markup(run.judge_model or '–')}\n"
        f"status {run.status} · {run.counted} · judge set {short_hash(run.judge_set)}"
    )
    for line in run.provider_limits:  # the pace each provider settled on (docs/reliability.md)
        console.print(f"limits: {visible_markup(line)}", overflow="fold")


def render_terminal(report: Report, console: Console | None = None, everything: bool = False) -> None:
    """Print the whole report: the summary first (findings, critical rates), then outcome, omissions,
    tables, health, cost and latency; `everything` lists the passing rows the tables otherwise collapse."""
    console = console or terminal_console()
    _header(console, report)
    draw_sections(console, report_sections(report, everything))
