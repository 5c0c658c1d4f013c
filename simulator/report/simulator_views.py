"""The simulated-user and persona-factor sections, rendered for the terminal and for HTML."""

from __future__ import annotations

__all__ = ["factors_html", "factors_terminal", "simulated_user_html", "simulated_user_terminal"]

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.analysis.effects import OddsRatio
from simulator.analysis.rates import RateView
from simulator.report.html_parts import e, rate_cell
from simulator.report.model import Report
from simulator.report.table_print import print_table

TERMINAL_ROWS = 20  # provenance rows the terminal shows (most missed facts that mattered first)
FIDELITY_NOTE = (
    "Checks of the simulated user, not the bot (unit: audited conversations; not-judged and errors left "
    "out). A bot failure in a conversation whose simulated user also failed fidelity may be the "
    "simulator's fault."
)
FACTORS_NOTE = (
    "Odds ratios vs each factor's reference level (first listed), Mantel–Haenszel stratified by base "
    "scenario, 95% CI. Above 1: the event is more likely at that level. Fail: unit judged conversations; "
    "under-triage: unit conversations with an expected level and no error."
)


def _short(value: RateView | None) -> str:
    return "–" if value is None else value.short


def _or(value: OddsRatio | None) -> str:
    return "reference" if value is None else value.text


def simulated_user_terminal(console: Console, report: Report) -> None:
    section = report.simulated_user
    if section is None:
        return
    console.rule("[bold]Simulated user[/]")
    console.print(
        f"fidelity failed in {escape(section.faulted.short)} audited conversations · regenerated "
        f"{section.regenerated_conversations} conversations ({section.regenerations} regenerations) · "
        f"character breaks {section.character_breaks}"
    )
    table = Table("check", "pass", "fail", "n.a.", "error", "not judged", "fail rate (95% CI)", "unverified")
    for row in section.checks:
        c = row.counts
        table.add_row(
            row.id, str(c.passed), str(c.failed), str(c.not_applicable), str(c.error), str(c.not_judged),
            escape(row.fail_rate.short), str(row.unverified_evidence),
        )  # fmt: skip
    _print_table(console, table)
    if section.provenance_overall is not None:
        facts = Table(
            "scenario", "runs", "facts", "elicited", "volunteered", "missed", "missed that mattered"
        )
        shown = sorted(section.provenance, key=lambda p: -p.missed_mattered)[:TERMINAL_ROWS]
        for p in [*shown, section.provenance_overall]:
            facts.add_row(
                p.scenario_id, str(p.conversations), str(p.facts), str(p.elicited), str(p.volunteered),
                str(p.missed), str(p.missed_mattered),
            )  # fmt: skip
        _print_table(console, facts)
        hidden = len(section.provenance) - len(shown)
        more = f"; {hidden} more scenarios in the HTML and JSON reports" if hidden > 0 else ""
        console.print(f"[dim]{escape(section.mattered_rule)}{more}[/]")
        for p in shown:
            for fact in p.mattered_facts:
                console.print(f"  missed, mattered: {escape(p.scenario_id)}: {escape(fact)}")
    if section.attribution:
        blame = Table("failed conversation", "failing bot criteria", "simulator also failed")
        for a in section.attribution:
            blame.add_row(
                a.conversation_id,
                escape(", ".join(a.failing_criteria)),
                f"[yellow]yes: {escape(', '.join(a.fidelity_failures))}[/]" if a.simulator_faulted else "no",
            )
        _print_table(console, blame)
    both = Table("bot metric", "all conversations", "without simulator-faulted")
    for w in section.with_without:
        both.add_row(w.metric, escape(w.all.short), escape(w.without_faulted.short))
    _print_table(console, both)


def factors_terminal(console: Console, report: Report) -> None:
    section = report.factors
    if section is None:
        return
    console.rule("[bold]Persona factors[/]")
    console.print(
        f"{section.design} design: {section.base_scenarios} base scenarios × "
        + " × ".join(f"{f} ({len(levels)})" for f, levels in section.factors.items())
        + f" → {section.variants} variants\n[dim]{FACTORS_NOTE}[/]"
    )
    table = Table(
        "factor", "level", "runs", "failed", "OR failed", "under-triage", "OR under-triage", "critical sens."
    )
    for r in section.rows:
        table.add_row(
            r.factor, r.level, str(r.conversations), escape(r.failed.short), escape(_or(r.failed_or)),
            escape(_short(r.under_triage)), escape(_or(r.under_triage_or)), escape(_short(r.critical_sensitivity)),
        )  # fmt: skip
    _print_table(console, table)


def _table(head: list[str], rows: list[str]) -> str:
    return "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>"


def simulated_user_html(report: Report) -> str:
    section = report.simulated_user
    if section is None:
        return ""
    checks = _table(
        ["check", "pass", "fail", "n.a.", "error", "not judged", "fail rate (95% CI)", "unverified"],
        [
            f"<tr><td>{e(r.id)}</td><td class='num'>{r.counts.passed}</td><td class='num'>{r.counts.failed}</td>"
            f"<td class='num'>{r.counts.not_applicable}</td><td class='num'>{r.counts.error}</td>"
            f"<td class='num'>{r.counts.not_judged}</td>{rate_cell(r.fail_rate)}"
            f"<td class='num'>{r.unverified_evidence}</td></tr>"
            for r in section.checks
        ],
    )
    rows = [*section.provenance, *([section.provenance_overall] if section.provenance_overall else [])]
    facts = _table(
        ["scenario", "runs", "facts", "elicited", "volunteered", "missed", "missed that mattered"],
        [
            f"<tr><td>{e(p.scenario_id)}</td><td class='num'>{p.conversations}</td><td class='num'>{p.facts}</td>"
            f"<td class='num'>{p.elicited}</td><td class='num'>{p.volunteered}</td><td class='num'>{p.missed}</td>"
            f"<td>{e('; '.join(p.mattered_facts) or '0')}</td></tr>"
            for p in rows
        ],
    )
    blame = _table(
        ["failed conversation", "failing bot criteria", "simulator also failed"],
        [
            f"<tr><td>{e(a.conversation_id)}</td><td>{e(', '.join(a.failing_criteria))}</td>"
            f"<td>{e('yes: ' + ', '.join(a.fidelity_failures) if a.simulator_faulted else 'no')}</td></tr>"
            for a in section.attribution
        ],
    )
    both = _table(
        ["bot metric", "all conversations", "without simulator-faulted"],
        [
            f"<tr><td>{e(w.metric)}</td>{rate_cell(w.all)}{rate_cell(w.without_faulted)}</tr>"
            for w in section.with_without
        ],
    )
    return (
        f'<section id="simulated-user"><h2>Simulated user</h2><p class="note">{e(FIDELITY_NOTE)}</p>'
        f"<p>fidelity failed in {e(section.faulted.short)} audited conversations · regenerated "
        f"{section.regenerated_conversations} conversations ({section.regenerations} regenerations) · "
        f"character breaks {section.character_breaks}</p>{checks}<h3>Fact provenance</h3>"
        f"<p class='note'>{e(section.mattered_rule)}</p>{facts}<h3>Bot failures and the simulator</h3>"
        f"{blame}{both}</section>"
    )


def factors_html(report: Report) -> str:
    section = report.factors
    if section is None:
        return ""
    rows = [
        f"<tr><td>{e(r.factor)}</td><td>{e(r.level)}</td><td class='num'>{r.conversations}</td>"
        f"{rate_cell(r.failed)}<td>{e(_or(r.failed_or))}</td><td>{e(_short(r.under_triage))}</td>"
        f"<td>{e(_or(r.under_triage_or))}</td><td>{e(_short(r.critical_sensitivity))}</td></tr>"
        for r in section.rows
    ]
    head = [
        "factor",
        "level",
        "runs",
        "failed",
        "OR failed",
        "under-triage",
        "OR under-triage",
        "critical sens.",
    ]
    return (
        f'<section id="factors"><h2>Persona factors</h2><p class="note">{e(FACTORS_NOTE)}</p>'
        f"<p>{e(section.design)} design: {section.base_scenarios} base scenarios, {section.variants} variants"
        f"</p>{_table(head, rows)}</section>"
    )


def _print_table(console: Console, table: Table) -> None:
    """The report's table printer: nothing cut at 80 columns."""
    print_table(console, table)
