"""The sections of the safety case a Clinical Safety Officer expects around the evidence (DCB0129 order):
system definition, clinical risk management, test issues and outstanding items, likelihood in the
service, the safety statement with the CSO's justification and deployment conditions, the sign-off, and
the hazard -> control -> evidence traceability. safety/view.py draws the evidence itself and the order."""

from __future__ import annotations

__all__ = [
    "crm_section",
    "outstanding_section",
    "projection_section",
    "safety_statement_section",
    "signoff_section",
    "system_section",
    "trace_matrix_section",
]

from simulator.plural import plural
from simulator.report.section import Row, Section, table_section, text_row
from simulator.safety.case import SafetyCase
from simulator.safety.hazards import words
from simulator.safety.signoffs import SignOffView, not_shown_controlled
from simulator.stats.rates import pct

NOT_STATED = "not stated in the hazard log"


def _stated(name: str, value: str | list[str] | None) -> Row:
    shown = ", ".join(value) if isinstance(value, list) else value
    return text_row(cells=[name, shown or NOT_STATED], state=None if shown else "warn")


def system_section(case: SafetyCase) -> Section:
    """What the system is and is for, and which release of the bot the runs tested."""
    d = case.system_definition
    rows = [
        _stated("system", d.name if d else case.system),
        _stated("declared version", d.version if d else None),
        _stated("intended use", d.intended_use if d else None),
        _stated("clinical setting", d.clinical_setting if d else None),
        _stated("users", d.users if d else None),
        _stated("interfaces", d.interfaces if d else None),
        _stated("exclusions", d.exclusions if d else None),
    ]
    for r in case.traceability.runs:
        identity = "; ".join(f"{k} {v}" for k, v in r.bot_identity.items())
        rows.append(
            text_row(
                cells=[
                    f"bot under test in {r.run_id}",
                    f"{r.bot} · version {r.bot_version or 'not identified'}",
                ],
                state=None if r.bot_version else "warn",
                details=[f"Identified by: {identity}"]
                if identity
                else ["Nothing identifies this release: declare bot.version in the suite"],
            )
        )
    return table_section(id="system", title="System definition", columns=["item", "as stated"], rows=rows)


def crm_section(case: SafetyCase) -> Section:
    """The CRM plan, the roles, and the method: the matrix, the likelihood rule, what a bound means."""
    crm, m = case.risk_management, case.matrix
    rows = [_stated("clinical risk management plan", crm.plan if crm else None)]
    rows.append(_stated("hazard log owner", case.owner))
    rows += [text_row(cells=[f"role: {r.role}", r.name]) for r in (crm.roles if crm else [])]
    if not crm or not crm.roles:
        rows.append(_stated("roles", None))
    levels = ", ".join(f"{words(level)} ≤{100 * m.rates[level]:g}%" for level in m.likelihood)
    notes = [
        f"Matrix: {m.name}, severity {' < '.join(words(s) for s in m.severity)}; acceptability "
        f"{', '.join(words(a) for a in m.acceptability)}"
        + ("; numeric risk ratings as DCB0129 (1-5)." if m.ratings else "."),
        f"Likelihood rule: a level is the rate of the hazard per conversation in the verifying scenarios "
        f"({levels}), not a frequency in the service; with an exposure (conversations a month, case mix) "
        "the document projects incidents per month, labelled as a projection.",
        "A bound is the vignette-clustered 95% confidence bound of that rate (the rule of three over distinct "
        "vignettes where nothing failed); a hazard's residual likelihood is the level of the largest bound of "
        "its test controls. Controls verified by review (design, process, training, labelling) are the CSO's "
        "judgement on documents, never a test result.",
    ]
    if crm and crm.method:
        notes.append(f"The plan adds: {crm.method}")
    return table_section(
        id="crm", title="Clinical risk management", notes=notes, columns=["item", "as stated"], rows=rows
    )


def outstanding_section(case: SafetyCase) -> Section:
    rows = [text_row(cells=[item], state="warn") for item in case.outstanding]
    notes = [] if rows else ["No test issue or outstanding item on this evidence."]
    return table_section(
        id="outstanding", title="Test issues and outstanding items", notes=notes, columns=["item"], rows=rows
    )


def projection_section(case: SafetyCase) -> Section | None:
    if case.exposure is None:
        return None
    rows = [
        text_row(
            cells=[
                p.hazard,
                p.control,
                f"{p.share:g}",
                pct(p.rate),
                f"{p.per_month:.1f}",
                "–" if p.per_month_bound is None else f"≤{p.per_month_bound:.1f}",
            ],
            details=[p.note],
        )
        for p in case.projections
    ]
    return table_section(
        id="projection",
        title="Likelihood in the service (projection)",
        notes=[
            f"Projection, not a measurement: {case.exposure.conversations_per_month:g} conversations a month, "
            "each presentation's share from the declared case mix, times the failure rate per conversation in "
            "the verifying scenarios (and its clustered 95% upper bound). It assumes the service's patients "
            "fail as the scenarios did."
        ],
        columns=["hazard", "control", "share", "rate per conversation", "expected a month", "95% bound"],
        rows=rows,
    )


def safety_statement_section(case: SafetyCase, signoffs: list[SignOffView] | None) -> Section:
    """The statement, then each current sign-off's justification and deployment conditions."""
    notes = list(case.statement)
    open_hazards = not_shown_controlled(case)
    current = [v.signoff for v in signoffs or [] if v.current]
    for s in current:
        if s.justification:
            notes.append(f"Justification ({s.name}, {s.role}): {s.justification}")
        if s.decision == "approve with conditions":
            notes.append(f"Deployment conditions ({s.name}): {s.comment}")
    if not current:
        notes.append(
            "No sign-off on this evidence yet: the CSO's justification and deployment conditions are recorded "
            "with the sign-off"
            + (
                f" (a justification is required to approve with {', '.join(open_hazards)} open)."
                if open_hazards
                else "."
            )
        )
    return table_section(id="safety-statement", title="Safety statement", notes=notes)


def signoff_section(signoffs: list[SignOffView] | None) -> Section:
    rows = [
        text_row(
            cells=[
                v.signoff.name,
                v.signoff.role,
                v.signoff.decision,
                v.signoff.signed_at.isoformat(timespec="minutes"),
                v.note,
            ],
            state="ok" if v.current else "warn",
            details=[d for d in (v.signoff.comment, v.signoff.justification) if d],
        )
        for v in signoffs or []
    ]
    notes = (
        []
        if rows
        else ["Not signed: sign with `simulator safety-case RUN --hazards FILE --sign ...` or the desk."]
    )
    return table_section(
        id="signoff",
        title="Sign-off",
        notes=notes,
        columns=["name", "role", "decision", "signed", "evidence"],
        rows=rows,
    )


def trace_matrix_section(case: SafetyCase) -> Section:
    """Hazard -> control -> what verifies it -> result: one row per control."""
    rows = []
    for h in case.hazards:
        for c in h.controls:
            if c.review is not None:
                what = f"review of {c.review.document} ({c.review.sha256 or 'not pinned'})"
                by = f"{c.review.reviewer}, {c.review.reviewed.isoformat()}"
            else:
                what = f"{', '.join(c.criteria)} on {', '.join(c.tags) or 'every scenario'}"
                by = f"{plural(len(c.scenarios), 'scenario')}, {plural(c.conversations, 'conversation')}"
            rows.append(text_row(cells=[h.id, c.id, c.kind, what, by, c.status]))
    return table_section(
        id="trace-matrix",
        title="Traceability: hazard, control, evidence",
        columns=["hazard", "control", "kind", "verified by", "evidence", "status"],
        rows=rows,
    )
