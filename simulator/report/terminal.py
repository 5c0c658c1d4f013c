"""The report in the terminal: rich tables, every rate with its counts and interval."""

from __future__ import annotations

__all__ = ["render_terminal"]

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.analysis.rates import RateView, pct
from simulator.analysis.rundata import short_hash
from simulator.analysis.tables import CriterionRow, VerdictCounts
from simulator.report.golden_terminal import render_golden
from simulator.report.headline import headline_rates
from simulator.report.model import Report
from simulator.report.simulator_views import factors_terminal, simulated_user_terminal
from simulator.report.table_print import print_table

_LEVEL_STYLE = {"bug": "bold red", "warning": "yellow", "info": "cyan"}
_SOURCE_FLAG = {"bot": "FLAKY-BOT", "simulation": "FLAKY-SIM", "judge": "FLAKY-JUDGE"}


def _rate(value: RateView) -> str:
    return escape(value.short)


def _counts(counts: VerdictCounts) -> list[str]:
    return [
        str(counts.passed),
        f"[red]{counts.failed}[/]" if counts.failed else "0",
        str(counts.not_applicable),
        f"[magenta]{counts.error}[/]" if counts.error else "0",
        f"[yellow]{counts.not_judged}[/]" if counts.not_judged else "0",
    ]


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}s"


def _money(value: float | None, currency: str) -> str:
    return "unpriced" if value is None else f"{value:.4f} {currency}"


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


def _findings(console: Console, report: Report) -> None:
    if not report.findings:
        console.print("[green]No findings: no failures, errors or warnings.[/]")
        return
    for finding in report.findings:
        style = _LEVEL_STYLE[finding.level]
        detail = f" [dim]— {escape(finding.detail)}[/]" if finding.detail else ""
        console.print(f"[{style}]{finding.level.upper():8}[/] {escape(finding.title)}{detail}")


def _outcome(console: Console, report: Report) -> None:
    outcome = report.outcome
    if outcome is None:
        return
    matrix = Table(title=f"Outcome '{outcome.key}': expected (rows) × actual (columns)", title_justify="left")
    matrix.add_column("expected")
    for column in outcome.columns:
        matrix.add_column(column, justify="right")
    matrix.add_column("total", justify="right")
    rank = {level: i for i, level in enumerate(outcome.levels)}
    for row in outcome.matrix:
        cells = []
        for column, count in zip(outcome.columns, row.counts, strict=True):
            style = ""
            if count and column in rank:
                style = (
                    "green"
                    if column == row.expected
                    else ("red" if rank[column] < rank[row.expected] else "yellow")
                )
            elif count:
                style = "magenta"
            cells.append(f"[{style}]{count}[/]" if style else str(count))
        matrix.add_row(row.expected, *cells, str(row.total))
    print_table(console, matrix)
    rates = Table(title="Outcome rates (errored conversations excluded, shown above)", title_justify="left")
    rates.add_column("metric")
    rates.add_column("counts, rate and 95% interval")
    rates.add_column("more runs")
    rows = [
        (f"{outcome.critical} sensitivity (escalated)", outcome.critical_sensitivity),
        ("under-triage", outcome.under_triage),
        ("over-triage", outcome.over_triage),
        ("no decision", outcome.no_decision),
        ("exact level", outcome.exact),
    ]
    rows += [(f"sensitivity {s.level}", s.rate) for s in outcome.sensitivity]
    rows.insert(2, ("under-triage, decided cases only", outcome.under_triage_decided))
    for name, value in rows:
        rates.add_row(name, escape(value.text), escape(value.needs_more_runs))
    print_table(console, rates)


COUNTS_HEADER = "pass/fail/\nn.a./error/\nnot judged"  # three lines: the column stays narrow


def _criteria_table(title: str, rows: list[CriterionRow], console: Console) -> None:
    if not rows:
        return
    table = Table(title=title, title_justify="left")
    table.add_column("criterion", no_wrap=True)
    table.add_column("severity · category")
    table.add_column(COUNTS_HEADER)
    table.add_column("failure rate (95% CI)")
    table.add_column("unverified", justify="right")
    for row in rows:
        table.add_row(
            escape(row.id),
            escape(f"{row.severity or '–'} · {row.category or '–'}"),
            "/".join(_counts(row.counts)),
            _rate(row.fail_rate),
            str(row.unverified_evidence),
        )
    print_table(console, table)


def _scenarios(console: Console, report: Report) -> None:
    table = Table(
        title="Scenarios: a conversation passes when no verdict failed (tags in the next table)",
        title_justify="left",
    )
    table.add_column("scenario", no_wrap=True)
    table.add_column("runs", justify="right")
    table.add_column("pass/fail/\nerror/not judged")
    table.add_column("pass rate (95% CI)")
    table.add_column("flags, failing criteria")
    for row in report.scenarios:
        flags = []
        if row.bug:
            flags.append("[bold red]BUG[/]")
        if row.flaky:
            flags.append("[yellow]FLAKY[/]")
            if row.flaky_source is not None:
                flags += [f"[yellow]{_SOURCE_FLAG[s]}[/]" for s in row.flaky_source.sources]
        statuses = row.statuses
        table.add_row(
            escape(row.id),
            str(row.conversations),
            f"{statuses['pass']}/{statuses['fail']}/{statuses['error']}/{statuses['not_judged']}",
            _rate(row.pass_rate),
            " ".join([*flags, escape("; ".join(row.failing_criteria))]).strip(),
        )
    print_table(console, table)
    tags = Table(title="Tag groups: verdict counts and conversation pass rate", title_justify="left")
    tags.add_column("tag", no_wrap=True)
    tags.add_column("scenarios", justify="right")
    tags.add_column("runs", justify="right")
    tags.add_column(COUNTS_HEADER)
    tags.add_column("pass rate (95% CI)")
    for tag in report.tags:
        label = f"[bold]{escape(tag.tag)}[/]" if tag.high_stakes else escape(tag.tag)
        tags.add_row(
            label,
            str(tag.scenarios),
            str(tag.conversations),
            "/".join(_counts(tag.counts)),
            _rate(tag.pass_rate),
        )
    print_table(console, tags)
    if report.pass_hat_k:
        hat = Table(title="pass^k: chance that k fresh runs of a scenario all pass", title_justify="left")
        for name in ("k", "pass^k", "95% CI (bootstrap over scenarios)", "scenarios"):
            hat.add_column(name)
        for hat_row in report.pass_hat_k:
            hat.add_row(
                str(hat_row.k),
                pct(hat_row.value),
                f"{pct(hat_row.low)}–{pct(hat_row.high)}",
                str(hat_row.scenarios),
            )
        print_table(console, hat)


def _health(console: Console, report: Report) -> None:
    health = report.health
    table = Table(title="Run health: how conversations ended", title_justify="left")
    table.add_column("stop reason")
    table.add_column("conversations (95% CI)")
    for stop in health.stop_reasons:
        table.add_row(stop.reason, _rate(stop.rate))
    print_table(console, table)
    console.print(
        f"character breaks re-run: {health.character_breaks} in {health.conversations_with_breaks} conversations "
        f"({health.gave_up_on_breaks} gave up) · conversations re-run after an error: {len(health.retried)} · "
        f"missing: {health.missing} of {health.planned}\n"
        f"conversation errors {_rate(health.conversation_errors)} · judge errors {_rate(health.judge_errors)} · "
        f"not judged {health.not_judged} · unverified evidence {_rate(health.unverified)}\n"
        + _calls_line(report)
    )
    errors = health.errors + health.judge_error_rows
    if errors:
        table = Table(title="Errors (never counted as pass or fail)", title_justify="left")
        for name in ("conversation", "criterion", "source", "kind", "message"):
            table.add_column(name)
        for error in errors[:20]:
            table.add_row(
                escape(error.conversation_id),
                escape(error.criterion_id or "–"),
                error.source,
                escape(error.kind),
                escape(error.message[:100]),
            )
        print_table(console, table)


def _calls_line(report: Report) -> str:
    run = report.run
    limits = "".join(f"\nlimits: {escape(line)}" for line in run.provider_limits)
    return _calls_count(report) + limits


def _calls_count(report: Report) -> str:
    run = report.run
    if not run.killed_sessions:
        return f"provider calls: {run.provider_calls} (retries included)"
    return (
        f"provider calls: [yellow]at least {run.provider_calls_at_least}[/] ({run.provider_calls} counted; "
        f"{run.killed_sessions} killed session{'s' if run.killed_sessions != 1 else ''} counted only up to "
        "the last checkpoint)"
    )


def _cost(console: Console, report: Report) -> None:
    cost = report.cost
    table = Table(
        title=f"Tokens and cost (prices as of {escape(cost.prices_as_of)}, {escape(cost.currency)} per 1M tokens)",
        title_justify="left",
    )
    for name in ("role", "models", "calls", "input", "cached input", "output", "cost", "cache hits"):
        table.add_column(name, justify="left" if name in ("role", "models") else "right")
    for role in cost.roles:
        table.add_row(
            role.role,
            escape(", ".join(role.models) or "–"),
            str(role.calls),
            f"{role.input_tokens:,}",
            f"{role.cached_input_tokens:,}",
            f"{role.output_tokens:,}",
            _money(role.cost, cost.currency),
            str(role.cache_hits),
        )
    print_table(console, table)
    console.print(
        f"total {_money(cost.total_cost, cost.currency)} · per conversation median "
        f"{_money(cost.cost_per_conversation_median, cost.currency)}, p95 "
        f"{_money(cost.cost_per_conversation_p95, cost.currency)}"
    )
    latency = Table(title="Latency", title_justify="left")
    for name in ("what", "n", "median", "p95", "max"):
        latency.add_column(name, justify="left" if name == "what" else "right")
    for row in cost.latency:
        latency.add_row(
            row.name, str(row.n), _seconds(row.median_s), _seconds(row.p95_s), _seconds(row.max_s)
        )
    print_table(console, latency)
    failures = Table(title="Failure rates by role (of that role's calls, 95% CI)", title_justify="left")
    classes = ("timeout", "invalid output", "provider error", "other")
    for name in ("role", *classes):
        failures.add_column(name)
    by_role: dict[str, dict[str, str]] = {}
    for failure in cost.failures:
        cell = _rate(failure.rate) + (f" [dim]{escape(', '.join(failure.kinds))}[/]" if failure.kinds else "")
        by_role.setdefault(failure.role, {})[failure.failure] = cell
    for role_name, cells in by_role.items():
        failures.add_row(role_name, *[cells.get(c, "–") for c in classes])
    print_table(console, failures)


def _clustered(console: Console, report: Report) -> None:
    """Scenarios as the unit: clustered intervals, effective sample sizes and the errored-case bounds."""
    table = Table(
        title="Repeats are not independent: scenario-clustered 95% intervals (docs/stats.md)",
        title_justify="left",
    )
    for name in ("rate", "k/n", "clustered 95% CI", "scenarios", "n_eff", "if errored: fail / pass"):
        table.add_column(name)
    for name, value in headline_rates(report):
        cl = value.clustered
        bounds = (
            "–" if not value.errored else f"{pct(value.worst)} / {pct(value.best)} ({value.errored} errored)"
        )
        cell = "–" if cl is None else f"{pct(cl.low)}–{pct(cl.high)}"
        if cl is not None and cl.bound is not None:
            cell += f"; fail ≤{pct(cl.bound)} on {cl.scenarios} scenarios"
        table.add_row(
            escape(name),
            f"{value.k}/{value.n}",
            cell,
            "–" if cl is None else str(cl.scenarios),
            "–" if cl is None else f"{cl.n_eff:.1f} of {value.n}",
            bounds,
        )
    print_table(console, table)


def _repeats(console: Console, report: Report) -> None:
    """worst-at-k and the run-to-run spread of the headline rates (averages over scenarios or repeats)."""
    worst = [row for row in report.pass_hat_k if row.worst_at_k is not None]
    if worst:
        table = Table(
            title="worst-at-k: expected lowest score in k repeats, averaged",
            title_justify="left",
            min_width=60,
        )
        for name in ("k", "worst-at-k", "scenarios"):
            table.add_column(name)
        for row in worst:
            table.add_row(str(row.k), pct(row.worst_at_k), str(row.worst_scenarios))
        print_table(console, table)
    spreads = [s for s in report.spread if s.repeats > 1]
    if spreads:
        table = Table(
            title="Run-to-run spread: each repeat index as one run of the suite", title_justify="left"
        )
        for name in ("rate", "repeats", "mean", "SD", "lowest–highest"):
            table.add_column(name)
        for spread in spreads:
            table.add_row(
                escape(spread.metric),
                str(spread.repeats),
                pct(spread.mean),
                pct(spread.sd),
                f"{pct(spread.low)}–{pct(spread.high)}",
            )
        print_table(console, table)


def _missing(console: Console, report: Report) -> None:
    missing = report.missing
    if not missing.errored:
        return
    console.print(
        f"[bold]Missing data[/]: {missing.errored} of {missing.conversations} conversations errored and are left "
        "out of every rate; each rate above shows its value had they all failed or all passed."
    )
    for warning in missing.warnings:
        console.print(f"[yellow]WARNING[/]  {escape(warning)}")


def render_terminal(report: Report, console: Console | None = None) -> None:
    """Print the whole report: findings first, then outcome, omissions, tables, health, cost and latency."""
    console = console or Console()
    _header(console, report)
    _findings(console, report)
    render_golden(console, report.golden)
    _outcome(console, report)
    _criteria_table("Errors of omission (criteria of category 'omission')", report.omissions, console)
    _criteria_table("Criteria", report.criteria, console)
    _scenarios(console, report)
    _clustered(console, report)
    _repeats(console, report)
    _missing(console, report)
    simulated_user_terminal(console, report)
    factors_terminal(console, report)
    _health(console, report)
    _cost(console, report)
    from simulator.report.judge_terminal import render_judge_sections

    render_judge_sections(console, report)
