"""The several-simulated-users section as data (section.py): each key rate per simulator, the range across
simulators, robust and simulator-induced failures, and the clustered tests (analysis/simulators.py)."""

from __future__ import annotations

__all__ = ["simulators_view"]

from simulator.analysis.simulators import SimulatorsSection, simulators_section
from simulator.config.simulators import simulator_level, without_simulator
from simulator.report.analyses import CORE_FINDINGS, Analysis, register_analysis
from simulator.report.model import Finding, Report
from simulator.report.section import Cell, Column, Note, Section, State, Table, number, rate_cell, text
from simulator.stats.rates import RateView, pct

SIMULATORS_NOTE = (
    "Every scenario × repeat was played by each simulated user. Rates: unit judged conversations (errors "
    "and not-judged left out), 95% intervals. The error rate is a range, not one number: a simulated "
    "patient is not a real one. A scenario failed under a simulator when any of its repeats failed there: "
    "robust = failed under every simulator (the bot's); likely simulator-induced = failed under that one only, "
    "and the test below finds the bot fails more under that simulator than under each other one (Holm p < "
    "0.05: read those transcripts first); under one only without that: no evidence either way (an "
    "intermittent bot flaw often fails under one simulator by chance)."
)
TEST_NOTE = (
    "Do the simulators differ? Clustered McNemar test over the pairs (scenario, repeat) judged under both, "
    "clustered by base scenario, Holm-adjusted over the pairs of simulators; p < 0.05 after Holm: they "
    "differ."
)
ALPHA = 0.05


def _cell(value: RateView | None) -> Cell:
    return text("–") if value is None else rate_cell(value)


def simulators_view(report: Report, everything: bool = False) -> Section:
    section: SimulatorsSection | None = report.analysis("simulators")
    if section is None:
        return Section("simulators", "Simulated users")
    rates = Table(
        [Column("simulator"), Column("model"), Column("runs", numeric=True), Column("failed conversations"),
         Column("under-triage"), Column("critical sensitivity")]
    )  # fmt: skip
    for r in section.simulators:
        rates.add(text(r.level, strong=True), r.model, number(r.conversations), rate_cell(r.failed),
                  _cell(r.under_triage), _cell(r.critical_sensitivity))  # fmt: skip
    ranges = Table(
        [Column("metric"), Column("range across simulators"), Column("spread (points)", numeric=True)],
        title="Range across simulators",
    )
    for m in section.ranges:
        ranges.add(
            m.metric,
            f"{pct(m.low)} ({m.lowest}) – {pct(m.high)} ({m.highest})",
            number(round(100 * m.spread, 1), f"{100 * m.spread:.1f}"),
        )
    blocks: list[Table | Note] = [Note(SIMULATORS_NOTE), rates, ranges]
    if section.scenarios:
        failures = Table(
            [Column("failed scenario"), Column("failed under"), Column("passed under"), Column("reading")],
            title=f"Bot failures by simulator ({section.robust} robust, {section.one_simulator} likely "
            "simulator-induced)",
        )
        for s in section.scenarios:
            reading = {
                "robust": text("robust: the bot's", "fail"),
                "one simulator": text(
                    f"{s.failed_under[0]} only: likely simulator-induced (p={s.p_value or 0:.2g})", "warn"
                ),
                "one simulator, no evidence": text(f"{s.failed_under[0]} only: no evidence either way"),
                "some simulators": text("some simulators", "warn"),
            }[s.attribution]
            failures.add(s.scenario, ", ".join(s.failed_under), ", ".join(s.passed_under) or "—", reading)
        blocks.append(failures)
    if section.tests:
        tests = Table(
            [Column("simulators"), Column("pairs", numeric=True), Column("only first failed", numeric=True),
             Column("only second failed", numeric=True), Column("vignettes", numeric=True),
             Column("p"), Column("p Holm"), Column("verdict")],
            title="Do the simulators differ?",
        )  # fmt: skip
        for t in section.tests:
            differ = t.p_holm < ALPHA
            tests.add(f"{t.a} vs {t.b}", number(t.pairs), number(t.only_a_failed), number(t.only_b_failed),
                      number(t.scenarios), f"{t.p:.3g}", f"{t.p_holm:.3g}",
                      text("they differ", "warn") if differ else text("no significant difference"))  # fmt: skip
        blocks += [Note(TEST_NOTE), tests]
    state: State | None = (
        "warn" if section.one_simulator or any(t.p_holm < ALPHA for t in section.tests) else None
    )
    return Section("simulators", "Simulated users: the error rate as a range", blocks, state)


def simulator_findings(section: SimulatorsSection | None) -> list[Finding]:
    """Headlines: the failure rate's range across simulators, and failures seen under one simulator only."""
    if section is None:
        return []
    found = []
    for m in section.ranges:
        if m.metric == "failed conversations":
            found.append(
                Finding(
                    level="info",
                    title=f"failed conversations range {pct(m.low)} ({m.lowest}) – {pct(m.high)} "
                    f"({m.highest}) across {len(section.simulators)} simulated users",
                    detail="the error rate depends on who plays the patient; report the range",
                )
            )
    if section.one_simulator:
        names = [s.scenario for s in section.scenarios if s.attribution == "one simulator"]
        found.append(
            Finding(
                level="warning",
                title=f"{section.one_simulator} failed scenarios fail under one simulated user only, and the bot "
                "fails more under that one than under the others (clustered test, Holm p < 0.05)",
                detail="likely simulator-induced: "
                + ", ".join(names[:5])
                + (f" and {len(names) - 5} more" if len(names) > 5 else ""),
            )
        )
    return found


_READING = {
    "robust": "fails under every simulated user: robust",
    "one simulator": "fails under this simulated user only: likely simulator-induced",
    "one simulator, no evidence": "fails under this simulated user only, not beyond chance: no evidence either way",
    "some simulators": "fails under some simulated users, not all",
}


def annotate_findings(findings: list[Finding], section: SimulatorsSection | None) -> list[Finding]:
    """A finding about one scenario variant (`id~simulator=X failed ...`) says how its failure reads
    across the simulators, so a bug list never hides that only one simulated patient produced it."""
    if section is None:
        return findings
    reading = {s.scenario: s.attribution for s in section.scenarios}
    out = []
    for finding in findings:
        first = finding.title.split(" ", 1)[0]
        kind = reading.get(without_simulator(first)) if simulator_level(first) else None
        if kind is not None:
            detail = f"{finding.detail}; {_READING[kind]}" if finding.detail else _READING[kind]
            finding = finding.model_copy(update={"detail": detail})
        out.append(finding)
    return out


register_analysis(
    Analysis(
        name="simulators",
        key="simulators",
        annotation=SimulatorsSection | None,
        order=90,
        build=lambda run, options: simulators_section(run),
        annotate=lambda findings, report: annotate_findings(findings, report.analysis("simulators")),
        findings=lambda report: simulator_findings(report.analysis("simulators")),
        findings_order=CORE_FINDINGS + 10,
        draw=simulators_view,
        draw_order=80,
    )
)
