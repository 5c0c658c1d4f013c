"""The report in the terminal: the header and findings, then every section (sections.py) drawn by the one
terminal renderer (draw_terminal.py), every rate with its counts and interval."""

from __future__ import annotations

__all__ = ["render_terminal"]

from rich.console import Console
from rich.markup import escape

from simulator.analysis.rates import RateView
from simulator.analysis.rundata import short_hash
from simulator.report.draw_terminal import draw_sections
from simulator.report.model import Report
from simulator.report.sections import report_sections

_LEVEL_STYLE = {"bug": "bold red", "warning": "yellow", "info": "cyan"}


def _rate(value: RateView) -> str:
    return escape(value.short)


def _header(console: Console, report: Report) -> None:
    run = report.run
    console.rule("[bold]simulator report[/]")  # the run id on its own line: a rule would cut a long one
    console.print(f"run {escape(run.run_id)}", overflow="fold")
    console.print(
        f"suite [bold]{escape(run.suite)}[/] · bot {escape(run.bot)} · user {escape(run.user_model)} · "
        f"judge {escape(run.judge_model or '–')}\n"
        f"status {run.status} · {run.scenarios} scenarios × {run.runs} runs = {run.conversations} conversations "
        f"(planned {run.planned}) · judge set {short_hash(run.judge_set)}\n"
        f"overall pass {_rate(report.overall)}\n  [dim]covers: {escape(report.overall_covers)}[/]"
    )
    for line in run.provider_limits:  # the pace each provider settled on (docs/reliability.md)
        console.print(f"limits: {escape(line)}", overflow="fold")


def _findings(console: Console, report: Report) -> None:
    if not report.findings:
        console.print("[green]No findings: no failures, errors or warnings.[/]")
        return
    for finding in report.findings:
        style = _LEVEL_STYLE[finding.level]
        detail = f" [dim]— {escape(finding.detail)}[/]" if finding.detail else ""
        console.print(f"[{style}]{finding.level.upper():8}[/] {escape(finding.title)}{detail}")


def render_terminal(report: Report, console: Console | None = None) -> None:
    """Print the whole report: findings first, then outcome, omissions, tables, health, cost and latency."""
    console = console or Console()
    _header(console, report)
    _findings(console, report)
    draw_sections(console, report_sections(report))
