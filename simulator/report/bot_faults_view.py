"""What the bot did wrong in deed, found by default: the bot-faults section as data (section.py), the errors
that are the bot's doing (a Cloud API rule broken, a malformed reply, a tool called with invalid arguments)
counted per scenario, with a headline (a bug when a critical scenario is affected) and the BOT FAULT flag on
the scenario rows; and the unbacked claims (a headline per claim rule and scenario, the claim quoted; the
criteria table already counts their verdicts)."""

from __future__ import annotations

__all__ = ["faulted_scenarios"]

from simulator.analysis.bot_faults import BotFaultsSection, bot_faults_section
from simulator.analysis.claims import UnbackedClaim, unbacked_claims
from simulator.analysis.rundata import RunData
from simulator.plural import plural
from simulator.record.faults import BOT_FAULTS
from simulator.report.analyses import CORE_FINDINGS, Analysis, register_analysis
from simulator.report.model import Finding, Report, ReportOptions
from simulator.report.section import Column, Note, Section, State, Table, rate_cell, text

KEY = "bot_faults"


def faulted_scenarios(report: Report) -> set[str]:
    """The scenarios with a bot fault, for the flag on their rows in the scenarios table."""
    section: BotFaultsSection | None = report.analysis(KEY)
    return {row.scenario_id for row in section.scenarios} if section is not None else set()


def _high_stakes(run: RunData, options: ReportOptions) -> str | None:
    """The high-stakes tag as the report takes it: the user's choice, else the suite's."""
    suite = run.manifest.suite
    return options.high_stakes_tag or (suite.high_stakes_tag if suite is not None else None)


def _kinds(kinds: dict[str, int]) -> str:
    return "; ".join(f"{BOT_FAULTS.get(kind, kind)} ({n})" for kind, n in kinds.items())


def bot_faults_findings(report: Report) -> list[Finding]:
    """One headline: how many conversations the bot faulted in; a bug naming the critical scenarios hit."""
    section: BotFaultsSection | None = report.analysis(KEY)
    if section is None:
        return []
    critical = [row for row in section.scenarios if row.critical]
    example = (critical or section.scenarios)[0].examples[0]
    detail = f"{_kinds(section.kinds)}; e.g. {example.conversation_id}: {example.detail}"
    if critical:
        named = ", ".join(f"{row.scenario_id} ({row.rate.k}/{row.rate.n})" for row in critical)
        return [
            Finding(
                level="bug",
                title=f"bot faults in critical scenarios: {named}",
                detail=f"in {section.rate.k} of {plural(section.rate.n, 'conversation')} overall; {detail}",
            )
        ]
    return [
        Finding(
            level="warning",
            title=f"bot faults in {section.rate.k} of {plural(section.rate.n, 'conversation')} "
            f"({plural(len(section.scenarios), 'scenario')})",
            detail=detail,
        )
    ]


def bot_faults_view(report: Report, everything: bool = False) -> Section:
    section: BotFaultsSection | None = report.analysis(KEY)
    if section is None:
        return Section("bot_faults", "Bot faults")
    anchors = {t.id: i for i, t in enumerate(report.transcripts)}
    table = Table(
        [Column("scenario"), Column("conversations with a fault (95% CI)"), Column("what the bot did"),
         Column("e.g.")],
        title="Bot faults per scenario (unit: conversations)",
    )  # fmt: skip
    for row in section.scenarios:
        example = row.examples[0]
        link = f"#t{anchors[example.conversation_id]}" if example.conversation_id in anchors else None
        table.add(
            text(row.scenario_id + (" (critical)" if row.critical else ""), "fail" if row.critical else None),
            rate_cell(row.rate),
            _kinds(row.kinds),
            text(f"{example.conversation_id}: {example.detail}", link=link),
        )
    note = Note(
        f"Errors that are the bot's own doing (a channel rule broken, a malformed reply, a tool called with "
        f"invalid arguments): {section.rate.text}; {section.covers}."
    )
    state: State = "fail" if any(row.critical for row in section.scenarios) else "warn"
    return Section("bot_faults", "Bot faults", [note, table], state)


def claim_findings(rows: list[UnbackedClaim]) -> list[Finding]:
    """One headline per unbacked claim rule and scenario, the claim quoted: a bug in a critical scenario."""
    return [
        Finding(
            level="bug" if row.critical and row.severity == "critical" else "warning",
            title=f'unbacked claim in {row.scenario_id} ({row.failed.k}/{row.failed.n}): "{row.quote}"',
            detail=f"{row.criterion_id}: {row.reasoning}; e.g. {row.conversation_id}",
        )
        for row in rows
    ]


register_analysis(
    Analysis(
        name="unbacked_claims",
        key="unbacked_claims",
        annotation=list[UnbackedClaim],
        default=[],
        order=111,
        build=lambda run, options: unbacked_claims(run, _high_stakes(run, options)),
        findings=lambda report: claim_findings(report.analysis("unbacked_claims")),
        findings_order=CORE_FINDINGS + 1,
    )
)
register_analysis(
    Analysis(
        name=KEY,
        key=KEY,
        annotation=BotFaultsSection | None,
        order=110,
        build=lambda run, options: bot_faults_section(run, _high_stakes(run, options)),
        findings=bot_faults_findings,
        findings_order=CORE_FINDINGS + 2,
        draw=bot_faults_view,
        draw_order=55,
    )
)
