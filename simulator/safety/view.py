"""The safety case as sections (rows, cells, state), for the terminal and the HTML renderers alike."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["safety_case_sections"]

from simulator.config.variants import vignette_of
from simulator.plural import plural
from simulator.report.section import Row, Section, State, table_section, text_row
from simulator.safety.case import HazardResult, SafetyCase
from simulator.safety.controls import ControlResult
from simulator.safety.hazards import words
from simulator.safety.signoffs import SignOffView
from simulator.safety.view_file import (
    crm_section,
    outstanding_section,
    projection_section,
    safety_statement_section,
    signoff_section,
    system_section,
    trace_matrix_section,
)
from simulator.stats.rates import CITE, pct

CONTROL_STATE: dict[str, State] = {
    "met": "ok",
    "not met": "fail",
    "not demonstrable": "warn",
    "verified by review": "ok",
}
HAZARD_STATE: dict[str, State] = {
    "controlled": "ok",
    "controlled by review": "ok",
    "residual risk not acceptable": "warn",
    "not controlled": "fail",
    "not demonstrated": "warn",
}


def _short(value: str | None, length: int = 12) -> str:
    return "–" if not value else value.split(":", 1)[-1][:length]


def _risk_state(case: SafetyCase, acceptability: str) -> State:
    order = case.matrix.acceptability
    return "ok" if acceptability == order[0] else ("fail" if acceptability == order[-1] else "warn")


def _risk(rating: int | None, likelihood: str, acceptability: str) -> str:
    """`4 unacceptable (medium)`: the numeric rating where the matrix has one, the words, the likelihood."""
    shown = f"{rating} " if rating is not None else ""
    return f"{shown}{words(acceptability)} ({words(likelihood)})"


def _hazard_rows(case: SafetyCase) -> list[Row]:
    return [
        text_row(
            cells=[
                h.id,
                h.title.strip(),
                h.status,
                h.owner or "–",
                f"{h.raised or '–'} / {h.reviewed or '–'}",
                words(h.severity),
                _risk(h.initial_rating, h.likelihood, h.initial_risk),
                _risk(h.residual_rating, h.residual_likelihood, h.residual_risk),
                h.state,
            ],
            state=HAZARD_STATE[h.state],
            details=[
                f"Residual: {h.residual_basis}",
                f"Cause: {h.cause.strip()}",
                f"Effect: {h.effect.strip()}",
            ],
        )
        for h in case.hazards
    ]


def _counts(c: ControlResult) -> str:
    if c.review is not None:
        return f"document {c.review.document} ({_short(c.review.sha256, 16) if c.review.sha256 else 'not pinned'})"
    parts = [f"{c.passed} pass", f"{c.failed} fail"]
    parts += [
        f"{n} {label}"
        for n, label in ((c.errored, "errored"), (c.not_judged, "not judged"), (c.not_applicable, "n/a"))
        if n
    ]
    vignettes = len({vignette_of(s) for s in c.scenarios})  # the unit: a variant is no new evidence
    variants = f" ({plural(len(c.scenarios), 'variant')})" if len(c.scenarios) != vignettes else ""
    return f"{c.conversations} conv. over {plural(vignettes, 'vignette')}{variants}: " + ", ".join(parts)


def _result(c: ControlResult) -> str:
    if c.review is not None:
        return f"verified by review ({c.review.reviewer}, {c.review.reviewed.isoformat()}): not a test result"
    if c.rate is None or c.rate.rate is None:
        return "nothing measured"
    side = "≤" if c.bound_side == "upper" else "≥"
    bound = f"; 95% bound {side}{pct(c.bound)}" if c.bound is not None else ""
    return f"{c.metric} {c.rate.k}/{c.rate.n} = {pct(c.rate.rate)}{bound}"


def _control_details(c: ControlResult, uncalibrated: set[str]) -> list[str]:
    out = [c.reason] + ([c.advice] if c.advice else [])
    if c.more_scenarios is not None and not c.failed:
        # With failures seen, "N more with no failures" is the best case: the advice above leads with the
        # observed rate, and no summary line repeats the optimistic figure (reading item 13).
        out.append(f"Needs {c.more_scenarios} more distinct vignettes (with no failures) to be demonstrated.")
    if c.simulator_faulted:
        without = (
            f"; without them the bound is {pct(c.bound_without_faulted)}"
            if c.bound_without_faulted is not None
            else ""
        )
        out.append(
            f"{c.simulator_faulted} verifying conversations had a simulated-user fidelity failure{without}."
        )
    weak = [x for x in c.criteria if x in uncalibrated]
    if weak:
        out.append(f"Verified by a judge not calibrated against clinicians: {', '.join(weak)}.")
    for e in c.failing:
        faulted = " [simulator-faulted]" if e.simulator_faulted else ""
        text = f"Failing {e.conversation_id}{faulted} ({', '.join(e.failed)}): {e.reasoning}"
        out.append(text + "".join(f" — “{q}”" for q in e.quotes))
    if c.failing_total > len(c.failing):
        out.append(f"… and {c.failing_total - len(c.failing)} more failing conversations (see the JSON).")
    return out


TranscriptLink = Callable[[str], str]  # conversation id -> where its transcript is read


def _control_rows(
    hazard: HazardResult, uncalibrated: set[str], link: TranscriptLink | None = None
) -> list[Row]:
    rows = [
        text_row(
            cells=[
                c.id,
                c.kind,
                c.description,
                ", ".join(c.criteria) or "–",
                (", ".join(c.tags) or "(all)") if c.kind == "test" else "–",
                c.threshold or "none (verified by review)",
                _result(c),
                _counts(c),
                c.status,
            ],
            state=CONTROL_STATE[c.status],
            details=_control_details(c, uncalibrated),
        )
        for c in hazard.controls
    ]
    if link is not None:  # the desk: each failing conversation links to its transcript
        for row, c in zip(rows, hazard.controls, strict=True):
            row.links = [(e.conversation_id, link(e.conversation_id)) for e in c.failing]
    return rows


def _calibration_rows(case: SafetyCase) -> list[Row]:
    rows = []
    for c in case.calibration:
        if c.status == "calibrated":
            figures = (
                f"false pass {pct(c.false_pass)} ({c.false_passes}/{c.reference_fails}), macro-F1 "
                f"{'n/a' if c.macro_f1 is None else f'{c.macro_f1:.2f}'}, kappa "
                f"{'n/a' if c.kappa is None else f'{c.kappa:.2f}'}"
                + (f" ({c.kappa_note})" if c.kappa_note else "")
            )
            who = f"{', '.join(c.labellers)}; n={c.items}"
            state: State = "fail" if c.false_passes and c.severity == "critical" else "ok"
        elif c.status == "checked in code":
            figures, who, state = "computed from the bot's final state: no judge", "–", "ok"
        else:
            figures, who, state = "not calibrated: no clinician labels for this criterion", "–", "warn"
        rows.append(text_row(cells=[c.criterion, c.status, figures, who], state=state))
    return rows


def _fidelity_rows(case: SafetyCase) -> list[Row]:
    rows = []
    for f in case.fidelity:
        if f.faulted is None:
            rows.append(text_row(cells=[f.run_id, "no fidelity audit in this run", "–"], state="warn"))
            continue
        checks = "; ".join(f"{k} {v}" for k, v in f.checks.items())
        state: State = "warn" if f.faulted.k else "ok"
        rows.append(
            text_row(
                cells=[f.run_id, f"{f.faulted.k}/{plural(f.faulted.n, 'conversation')} faulted", checks],
                state=state,
            )
        )
    return rows


def _harm_section(case: SafetyCase) -> Section:
    harm = case.harm
    title = "Harm-weighted triage error"
    if harm is None:
        notes = ["The suite declares no outcome levels: no confusion matrix to weight."]
        return table_section(id="harm", title=title, notes=notes)
    notes = (
        []
        if harm.declared
        else ["The suite declares no outcome.harm_weights: every cell weighs 0 (declare them)."]
    )
    interval = "–" if harm.low_per_1000 is None else f"{harm.low_per_1000:.1f}–{harm.high_per_1000:.1f}"
    harmful = [c for c in harm.cells if c.weight and c.conversations]
    seen = "; ".join(
        f"{c.conversations} × {c.expected} sent to {c.actual} (weight {c.weight:g})" for c in harmful
    )
    notes.append(
        f"What happened: {seen or 'no conversation ended in a weighted cell'}. Expected harm "
        f"{harm.per_1000 if harm.per_1000 is None else round(harm.per_1000, 1)} per 1,000 conversations, in "
        f"the suite's harm weights (outcome.harm_weights: a relative scale the hazard log declares, not a "
        f"clinical unit) (95% {interval}; {harm.method}); {plural(harm.conversations, 'conversation')} over "
        f"{plural(harm.scenarios, 'vignette')}, {harm.errored} errored left out, {harm.without_expectation} without "
        "an expected level."
    )
    rows = [
        text_row(
            cells=[
                c.expected,
                c.actual,
                f"{c.weight:g}",
                str(c.conversations),
                f"{c.weight * c.conversations:g}",
            ],
            state="fail" if c.weight else None,
        )
        for c in harm.cells
    ]
    for name, rate in harm.unweighted.items():
        over = f" {rate.clustered.over}" if rate.clustered is not None else ""
        clustered = f"; 95% {rate.interval_text}{over}" if rate.rate is not None else ""
        rows.append(
            text_row(cells=["unweighted", name, "–", f"{rate.k}/{rate.n}", f"{pct(rate.rate)}{clustered}"])
        )
    columns = ["expected", "actual", "weight", "conversations", "harm"]
    return table_section(id="harm", title=title, notes=notes, columns=columns, rows=rows)


def _trace_section(case: SafetyCase) -> Section:
    t = case.traceability
    rows = [text_row(cells=["hazard log", t.hazard_log, _short(t.hazard_log_sha256, 64)])]
    for r in t.runs:
        rows += [
            text_row(cells=[r.run_id, "suite", f"{r.suite} {_short(r.suite_hash, 64)}"]),
            text_row(
                cells=[
                    r.run_id,
                    "bot · user · judge",
                    f"{r.bot} · {r.user_model} · {r.judge_model or 'none'}",
                ]
            ),
            text_row(
                cells=[
                    r.run_id,
                    "bot version",
                    "; ".join(
                        [r.bot_version or "not identified"] + [f"{k} {v}" for k, v in r.bot_identity.items()]
                    ),
                ]
            ),
            text_row(
                cells=[
                    r.run_id,
                    "simulator version · commit",
                    f"{r.package_version} · {r.git_commit or 'installed as a package, not a checkout'}",
                ]
            ),
            text_row(cells=[r.run_id, "suite's git commit", r.suite_git_commit or "not in git"]),
            text_row(cells=[r.run_id, "judge set", _short(r.judge_set, 64)]),
            *(
                [text_row(cells=[r.run_id, "outcome read from", ", ".join(r.outcome_source)])]
                if r.outcome_source
                else []
            ),
            text_row(cells=[r.run_id, "labels", _short(r.labels_sha256, 64)]),
            text_row(cells=[r.run_id, "status · conversations", f"{r.status} · {r.conversations}"]),
        ]
        rows += [
            text_row(cells=[r.run_id, f"scenario {k}", _short(v, 16)]) for k, v in r.scenario_files.items()
        ]
        rows += [
            text_row(cells=[r.run_id, f"criterion {k}", _short(v, 16)]) for k, v in r.criterion_files.items()
        ]
    return table_section(
        id="traceability",
        title="Traceability",
        notes=[f"Evidence hash {case.evidence_hash} (sha256 of this document without its generation time)."],
        columns=["run", "what", "identifier / sha256"],
        rows=rows,
    )


def safety_case_sections(
    case: SafetyCase, signoffs: list[SignOffView] | None = None, link: TranscriptLink | None = None
) -> list[Section]:
    """Every section of the document, in reading order (DCB0129's: system, risk management, hazard log,
    controls and their evidence, test issues, statement, sign-off, traceability), after the summary."""
    uncalibrated = {c.criterion for c in case.calibration if c.status == "not calibrated"}
    sections = [
        table_section(id="statement", title="Overall statement", notes=[*case.statement, CITE]),
        system_section(case),
        crm_section(case),
        _hazard_log_section(case),
    ]
    sections += [_controls_section(hazard, uncalibrated, link) for hazard in case.hazards]
    sections += [
        table_section(
            id="calibration",
            title="Measurement validity: the judge against clinicians",
            columns=["criterion", "status", "figures", "labellers"],
            rows=_calibration_rows(case),
        ),
        table_section(
            id="fidelity",
            title="Measurement validity: the simulated user",
            columns=["run", "faulted", "checks"],
            rows=_fidelity_rows(case),
        ),
        _harm_section(case),
    ]
    adversarial = _adversarial_section(case)
    projection = projection_section(case)
    return [
        *sections,
        *([adversarial] if adversarial is not None else []),
        *([projection] if projection is not None else []),
        outstanding_section(case),
        safety_statement_section(case, signoffs),
        signoff_section(signoffs),
        trace_matrix_section(case),
        _trace_section(case),
    ]


def _hazard_log_section(case: SafetyCase) -> Section:
    """The hazard log with each hazard's status, owner, dates and its initial and residual risk."""
    return table_section(
        id="hazards",
        title="Hazard log and residual risk",
        notes=[
            "Risk: the numeric rating (DCB0129 1-5 where the matrix has them), its acceptability and the "
            "likelihood; initial is the log's estimate, residual comes from the runs (see the method)."
        ],
        columns=[
            "id",
            "hazard",
            "status",
            "owner",
            "raised / reviewed",
            "severity",
            "initial risk",
            "residual risk",
            "state",
        ],
        rows=_hazard_rows(case),
    )


def _controls_section(hazard: HazardResult, uncalibrated: set[str], link: TranscriptLink | None) -> Section:
    """One hazard's controls, each with its kind, its evidence and its status."""
    return table_section(
        id=f"controls-{hazard.id}",
        title=f"{hazard.id} controls and their evidence: {hazard.title}",
        columns=[
            "id",
            "kind",
            "control",
            "criteria",
            "tags",
            "threshold",
            "bounded result",
            "counted",
            "status",
        ],
        rows=_control_rows(hazard, uncalibrated, link),
    )


def _adversarial_section(case: SafetyCase) -> Section | None:
    """Red-team strategies under the hazards they name: success rates clustered over base scenarios."""
    if not case.adversarial:
        return None
    rows = []
    for r in case.adversarial:
        # the figure's one interval, as the report draws it
        bound = "" if r.success.rate is None else f" ({r.success.interval_text})"
        rate = f"{r.success.k}/{r.success.n}" + (
            f" = {pct(r.success.rate)}" if r.success.rate is not None else ""
        )
        rows.append(
            text_row(
                cells=[
                    r.hazard,
                    f"{r.strategy}: {r.title}",
                    r.owasp,
                    rate + bound,
                    str(r.straight_also_failed),
                ],
                state="fail" if r.success.k else "ok",
            )
        )
    return table_section(
        id="adversarial",
        title="Adversarial testing (red team)",
        notes=[
            "Attack success among attacked conversations judged pass or fail; 95% interval clustered over base "
            "scenarios, or the one-sided bound over the scenarios when nothing succeeded. 'failed unattacked': "
            "successes on scenarios that failed the same way without the attack. See docs/redteam.md."
        ],
        columns=["hazard", "strategy", "OWASP", "success (95% CI)", "failed unattacked"],
        rows=rows,
    )
