"""Severity drives findings: a failed `critical` criterion or check is a BUG, a failed `major` one a WARNING,
on any scenario (not only those tagged high-stakes), with its counts, the vignettes it failed on and the
conversations to read.

The claims check of the clinic example ("I've booked you" with no booking) is critical: before this
analysis its failures sat in the criteria table while the summary said "No findings". Outcome checks
(`outcome.*`) are left to the outcome findings, which already name every case not escalated.
"""

from __future__ import annotations

__all__: list[str] = []

from simulator.analysis.rundata import RunData
from simulator.config.variants import vignette_of
from simulator.models import ResultModel
from simulator.plural import plural
from simulator.report.analyses import CORE_FINDINGS, Analysis, register_analysis
from simulator.report.model import Finding, Report

_LEVEL = {"critical": "bug", "major": "warning"}


class SeverityFailure(ResultModel):
    """One criterion of severity critical or major that failed: how often, where, and what to read."""

    criterion_id: str
    kind: str  # llm (a criterion a judge reads) or code (a check)
    severity: str
    failed: int
    judged: int  # conversations with a pass or fail verdict on it
    vignettes_failed: int
    vignettes: int
    conversations: list[str]  # the failing conversations, in run order


def severity_failures(run: RunData) -> list[SeverityFailure]:
    """Every critical or major criterion that failed at least once, critical first."""
    order = {record.id: index for index, record in enumerate(run.conversations)}
    decided: dict[str, dict[str, str]] = {}
    severity: dict[str, str] = {}
    kind: dict[str, str] = {}
    for verdict in run.verdicts:
        if verdict.severity not in _LEVEL or verdict.criterion_id.startswith("outcome."):
            continue
        if verdict.result in ("pass", "fail") and verdict.conversation_id in order:
            severity[verdict.criterion_id] = verdict.severity
            kind[verdict.criterion_id] = verdict.kind
            results = decided.setdefault(verdict.criterion_id, {})
            if results.get(verdict.conversation_id) != "fail":  # a conversation fails on any failed verdict
                results[verdict.conversation_id] = verdict.result
    scenario = {record.id: record.scenario_id for record in run.conversations}
    out = []
    for criterion, results in decided.items():
        failing = sorted((c for c, r in results.items() if r == "fail"), key=order.__getitem__)
        if not failing:
            continue
        out.append(
            SeverityFailure(
                criterion_id=criterion,
                kind=kind[criterion],
                severity=severity[criterion],
                failed=len(failing),
                judged=len(results),
                vignettes_failed=len({vignette_of(scenario[c]) for c in failing}),
                vignettes=len({vignette_of(scenario[c]) for c in results}),
                conversations=failing,
            )
        )
    return sorted(out, key=lambda f: (f.severity != "critical", f.criterion_id))


def severity_findings(report: Report) -> list[Finding]:
    """One finding per failed critical (BUG) or major (WARNING) criterion, with its conversations."""
    failures: list[SeverityFailure] = report.analysis("severity") or []
    return [
        Finding(
            level=_LEVEL[f.severity],  # type: ignore[arg-type]
            title=(
                f"{f.severity} {'criterion' if f.kind == 'llm' else 'check'} {f.criterion_id} failed in {f.failed} of {plural(f.judged, 'conversation')} "
                f"({f.vignettes_failed} of {plural(f.vignettes, 'vignette')})"
            ),
            detail="any failed critical check is a bug, whatever the scenario's tags"
            if f.severity == "critical"
            else "",
            conversations=f.conversations,
        )
        for f in failures
    ]


register_analysis(
    Analysis(
        name="severity",
        key="severity",
        annotation=list[SeverityFailure],
        default=[],
        order=50,
        build=lambda run, options: severity_failures(run),
        findings=severity_findings,
        findings_order=CORE_FINDINGS + 1,  # after the core bugs; the summary lists every bug before warnings
    )
)
