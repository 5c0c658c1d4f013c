"""A hazard log checked against runs: every criterion, tag and threshold metric a control names must exist."""

from __future__ import annotations

__all__ = ["check_hazard_log"]

import difflib

from simulator.errors import Problem, UserError
from simulator.report.gate import parse_requirement
from simulator.safety.hazards import HazardLog


def _unknown(kind: str, name: str, known: set[str]) -> str:
    guess = difflib.get_close_matches(name, sorted(known), n=1)
    hint = f"did you mean '{guess[0]}'? " if guess else ""
    shown = ", ".join(sorted(known)[:12]) + (" ..." if len(known) > 12 else "")
    return f"unknown {kind} '{name}'; {hint}known: {shown or 'none'}"


def check_hazard_log(log: HazardLog, criteria: set[str], tags: set[str] | None, metrics: set[str]) -> None:
    """Every criterion, tag and threshold metric a control names must exist; one UserError lists them all.

    `metrics` is the gate's vocabulary for the run (`gate.metric_names`) plus `fail_rate`, the control's
    own rate over its criteria. `tags` None skips the tag check (a run of a subset of the suite's scenarios)."""
    path = str(log.file or "hazards")
    problems = []
    for i, hazard in enumerate(log.hazards):
        for j, control in enumerate(hazard.controls):
            where = ("hazards", i, "controls", j)
            for k, name in enumerate(control.criteria):
                if name not in criteria:
                    problems.append(
                        Problem(
                            path,
                            _unknown("criterion", name, criteria),
                            log.line_of(*where, "criteria", k),
                            f"hazards.{i}.controls.{j}.criteria.{k}",
                        )
                    )
            for k, tag in enumerate(control.tags):
                if tags is not None and tag not in tags:
                    problems.append(
                        Problem(
                            path,
                            _unknown("scenario tag", tag, tags),
                            log.line_of(*where, "tags", k),
                            f"hazards.{i}.controls.{j}.tags.{k}",
                        )
                    )
            if control.threshold is None:  # a control verified by review names no test
                continue
            try:
                parse_requirement(control.threshold, sorted(metrics))
            except UserError as exc:
                message = str(exc).replace("--require", "threshold", 1)
                problems.append(
                    Problem(
                        path, message, log.line_of(*where, "threshold"), f"hazards.{i}.controls.{j}.threshold"
                    )
                )
    if problems:
        raise UserError("the hazard log names things the runs do not have", problems)
