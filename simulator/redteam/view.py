"""The red-team section, registered (report/analyses.py): attack success per strategy and per clinical
group as data in the JSON report, drawn by the one terminal and the one HTML renderer; its rates are metrics
gates and hazard controls can name (`redteam success`, `redteam.<strategy> success`)."""

from __future__ import annotations

__all__ = ["redteam_view"]

from typing import Any

from simulator.redteam.analysis import RedTeamSection, redteam_section
from simulator.report.analyses import Analysis, register_analysis
from simulator.report.model import Report
from simulator.report.relations_view import clustered_rate_cell
from simulator.report.section import Column, Note, Section, Table, number, text

REDTEAM_NOTE = (
    "Attack success = attacked conversations where the bot did what it must not, among those judged pass "
    "or fail; interval clustered over vignettes (95%); with no success, the bound rests on the number "
    "of vignettes (rule of three). 'not judged' (left out): the conversation errored, or the simulated "
    "attacker never attacked. 'failed unattacked': successes on scenarios whose straight run (no attack) "
    "failed the same outcome check. 'turns': the median user turn of first success."
)


def redteam_view(report: Report, everything: bool = False) -> Section:
    section: RedTeamSection | None = report.analysis("redteam")
    if section is None:
        return Section("redteam", "Red team")
    table = Table(
        [Column("strategy"), Column("OWASP"), Column("success (95% CI)"), Column("not judged", numeric=True),
         Column("failed unattacked", numeric=True), Column("turns", numeric=True)]
    )  # fmt: skip
    for r in section.strategies:
        turns = f"{r.turns_to_success_median:g}" if r.turns_to_success_median is not None else "—"
        table.add(
            text(r.strategy), r.owasp, clustered_rate_cell(r.success, bool(r.success.k)), number(r.not_judged),
            number(r.straight_also_failed), turns,
        )  # fmt: skip
    table.add(
        text("all strategies", strong=True), "", clustered_rate_cell(section.overall, False), "", "", ""
    )
    blocks: list[Note | Table] = [Note(REDTEAM_NOTE), table]
    if section.groups:
        groups = Table([Column("clinical group"), Column("success (95% CI)")], title="By clinical group")
        for g in section.groups:
            groups.add(g.group, clustered_rate_cell(g.success, bool(g.success.k)))
        blocks.append(groups)
    pairs = Table(
        [Column("strategy"), Column("succeeded in"), Column("refused in")],
        title="Succeeded and refused, side by side",
    )
    for r in section.strategies:
        won, held = r.success.k, r.success.n - r.success.k
        pairs.add(r.strategy, listed(r.succeeded, won), listed(r.refused, held))
    blocks.append(pairs)
    return Section("redteam", "Red team: attack success", blocks)


def listed(ids: list[str], total: int) -> str:
    """The ids shown, and how many of `total` were left out: a list never stops silently (reading item 4)."""
    if not ids:
        return "—"
    more = total - len(ids)
    return ", ".join(ids) + (f" and {more} more (simulator show RUN)" if more > 0 else "")


def redteam_metrics(section: RedTeamSection) -> dict[str, Any]:
    """`redteam success` (all strategies) and `redteam.<strategy> success`, for gates and hazard controls."""
    names: dict[str, Any] = {"redteam success": section.overall}
    for strategy in section.strategies:
        names[f"redteam.{strategy.strategy} success"] = strategy.success
    return names


register_analysis(
    Analysis(
        name="redteam",
        key="redteam",
        annotation=RedTeamSection | None,
        order=60,
        build=lambda run, options: redteam_section(run),
        draw=redteam_view,
        draw_order=100,
        metrics=redteam_metrics,
    )
)
