"""A hazard log checked against runs: every criterion, tag and threshold metric a control names must exist,
and a threshold must rest on a criterion the control names."""

from __future__ import annotations

__all__ = ["check_hazard_log"]


from simulator.config.suite import OutcomeConfig
from simulator.errors import Problem, UserError, did_you_mean, field_path, hint_then
from simulator.report.gate import outcome_metric_names, parse_requirement
from simulator.safety.hazards import Control, HazardLog


def _unknown(kind: str, name: str, known: set[str]) -> str:
    hint = hint_then(did_you_mean(name, sorted(known)))
    shown = ", ".join(sorted(known)[:12]) + (" ..." if len(known) > 12 else "")
    return f"unknown {kind} '{name}'; {hint}known: {shown or 'none'}"


def _rests_on(metric: str, outcome: OutcomeConfig | None) -> str | None:
    """The criterion a threshold's metric is computed from, when it is one criterion: the outcome criterion
    for the outcome rates (read from the decided outcome, whatever else was judged), X for `fail_rate:X`."""
    if outcome is not None and metric in outcome_metric_names(outcome):
        return f"outcome.{outcome.key}"
    return metric.removeprefix("fail_rate:") if metric.startswith("fail_rate:") else None


def check_hazard_log(
    log: HazardLog,
    criteria: set[str],
    tags: set[str] | None,
    metrics: set[str],
    outcome: OutcomeConfig | None = None,
) -> None:
    """Every criterion, tag and threshold metric a control names must exist; one UserError lists them all.

    `metrics` is the gate's vocabulary for the run (`gate.metric_names`) plus `fail_rate`, the control's
    own rate over its criteria. `tags` None skips the tag check (a run of a subset of the suite's scenarios).
    A threshold computed from one criterion (an outcome rate, `fail_rate:X`) must have it among the control's
    criteria: otherwise the control would be shown met on evidence its criteria never gave."""
    problems = []
    for i, hazard in enumerate(log.hazards):
        for j, control in enumerate(hazard.controls):
            problems += _control_problems(log, (i, j), control, (criteria, tags, metrics), outcome)
    if problems:
        raise UserError("the hazard log names things the runs do not have", problems)


def _control_problems(
    log: HazardLog,
    at: tuple[int, int],
    control: Control,
    known: tuple[set[str], set[str] | None, set[str]],
    outcome: OutcomeConfig | None,
) -> list[Problem]:
    """What one control names that the runs do not have, or a threshold resting on a criterion it does not
    name; each problem with its file, line and field."""
    path, (i, j), (criteria, tags, metrics) = str(log.file or "hazards"), at, known
    where = ("hazards", i, "controls", j)
    problems = [
        Problem(
            path,
            _unknown("criterion", name, criteria),
            log.line_of(*where, "criteria", k),
            field_path((*where, "criteria", k)),
        )
        for k, name in enumerate(control.criteria)
        if name not in criteria
    ]
    problems += [
        Problem(
            path,
            _unknown("scenario tag", tag, tags),
            log.line_of(*where, "tags", k),
            field_path((*where, "tags", k)),
        )
        for k, tag in enumerate(control.tags)
        if tags is not None and tag not in tags
    ]
    if control.threshold is None:  # a control verified by review names no test
        return problems
    line = log.line_of(*where, "threshold")
    try:
        requirement = parse_requirement(control.threshold, sorted(metrics))
    except UserError as exc:
        message = str(exc).replace("--require", "threshold", 1)
        return [*problems, Problem(path, message, line, field_path((*where, "threshold")))]
    needed = _rests_on(requirement.metric, outcome)
    if needed is not None and needed not in control.criteria:
        problems.append(
            Problem(
                path,
                f"control {control.id}: its threshold on {requirement.metric} is computed from {needed}, "
                f"which its criteria ({', '.join(control.criteria) or 'none'}) do not name; add {needed} to "
                "its criteria, or put the threshold on a metric of the criteria it names (fail_rate)",
                line,
                field_path((*where, "threshold")),
            )
        )
    return problems
