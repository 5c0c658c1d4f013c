"""The hazard log (`hazards.yaml`): hazards on a declared risk matrix, and the controls that verify them.

A clinical safety case (DCB0129 / DCB0160, ISO 14971) starts from a hazard log: what can go wrong, its
cause, its effect on a patient, its severity and likelihood on a declared matrix, and the controls. Here
each control names the criteria and scenario tags whose verdicts verify it and an acceptance threshold in
the gate's vocabulary (`simulator/report/gate.py`), so `simulator safety-case` can show whether it works.

The file is validated like scenarios: every mistake is one Problem naming file, line and field.
`simulator.safety.hazard_check` then checks the names against what a run (or a suite) knows: criteria, tags, metrics.
"""

from __future__ import annotations

__all__ = [
    "DCB0129",
    "Control",
    "Exposure",
    "Hazard",
    "HazardLog",
    "ReviewEvidence",
    "RiskManagement",
    "RiskMatrix",
    "SystemDefinition",
    "load_hazard_log",
    "words",
]

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, PrivateAttr, field_validator, model_validator

from simulator.config.yamlfile import LocatedYAML, YAMLProblem, load_yaml, validate_model
from simulator.errors import Problem, UserError, field_path
from simulator.models import StrictModel as _Strict
from simulator.models import empty_dict, empty_list

_ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"


class RiskMatrix(_Strict):
    """Severity × likelihood, each cell's acceptability, and the per-conversation rate each likelihood
    level stands for (so a bounded rate can be placed on the matrix)."""

    name: str = "risk matrix"
    severity: list[str] = Field(min_length=2, description="severity levels, least severe first")
    likelihood: list[str] = Field(min_length=2, description="likelihood levels, least likely first")
    # Acceptability classes, best first (the first is acceptable without further action).
    acceptability: list[str] = Field(min_length=2)
    # likelihood level -> one acceptability per severity level (in the order of `severity`).
    cells: dict[str, list[str]]
    # likelihood level -> the highest rate of harm per conversation that level covers (the last may be 1).
    rates: dict[str, float]
    # likelihood level -> one numeric risk rating per severity level (DCB0129: 1-5); optional when declared.
    ratings: dict[str, list[int]] | None = None

    @model_validator(mode="after")
    def _complete(self) -> RiskMatrix:
        for kind, values in (("severity", self.severity), ("likelihood", self.likelihood)):
            if len(set(values)) != len(values):
                raise ValueError(f"matrix {kind} lists a level twice")
        if set(self.cells) != set(self.likelihood):
            raise ValueError(
                f"matrix cells need one row per likelihood level ({', '.join(self.likelihood)}); "
                f"got {', '.join(self.cells) or 'none'}"
            )
        for level, row in self.cells.items():
            if len(row) != len(self.severity):
                raise ValueError(
                    f"matrix cells.{level} needs {len(self.severity)} entries, one per severity level"
                )
            unknown = sorted(set(row) - set(self.acceptability))
            if unknown:
                raise ValueError(
                    f"matrix cells.{level}: {', '.join(unknown)} is not an acceptability "
                    f"({', '.join(self.acceptability)})"
                )
        if set(self.rates) != set(self.likelihood):
            raise ValueError("matrix rates need one rate per likelihood level, e.g. very_low: 0.001")
        ordered = [self.rates[level] for level in self.likelihood]
        if any(not 0.0 < r <= 1.0 for r in ordered) or ordered != sorted(ordered):
            raise ValueError("matrix rates must rise with the likelihood, each in (0, 1]")
        if self.ratings is not None and (
            set(self.ratings) != set(self.likelihood)
            or any(len(row) != len(self.severity) for row in self.ratings.values())
        ):
            raise ValueError(
                "matrix ratings need one row per likelihood level, one number per severity level"
            )
        return self

    def cell(self, severity: str, likelihood: str) -> str:
        """The acceptability of one cell."""
        return self.cells[likelihood][self.severity.index(severity)]

    def rating(self, severity: str, likelihood: str) -> int | None:
        """The numeric risk rating of one cell (DCB0129: 1-5), where the matrix declares ratings."""
        return None if self.ratings is None else self.ratings[likelihood][self.severity.index(severity)]

    def risk_words(self, severity: str, likelihood: str) -> str:
        """One cell as a CSO reads it: "rating 4, unacceptable (catastrophic × medium)"."""
        rating = self.rating(severity, likelihood)
        shown = f"rating {rating}, " if rating is not None else ""
        return f"{shown}{words(self.cell(severity, likelihood))} ({words(severity)} × {words(likelihood)})"

    def likelihood_for(self, rate: float) -> str:
        """The least likely level whose rate covers `rate` (the last level covers everything)."""
        for level in self.likelihood:
            if rate <= self.rates[level]:
                return level
        return self.likelihood[-1]


# The NHS DCB0129 risk matrix (consequence × likelihood, risk ratings 1-5): ratings 1-2 acceptable,
# 3 undesirable (acceptable only with controls, as low as reasonably practicable), 4-5 unacceptable.
# The per-conversation rates are this project's reading of "very low ... very high" for a chatbot.
_DCB_RATINGS = {
    "very_low": [1, 1, 2, 2, 3],
    "low": [1, 2, 2, 3, 4],
    "medium": [2, 2, 3, 3, 4],
    "high": [2, 3, 3, 4, 5],
    "very_high": [3, 4, 4, 5, 5],
}
_DCB_CLASS = {1: "acceptable", 2: "acceptable", 3: "undesirable", 4: "unacceptable", 5: "unacceptable"}
DCB0129 = RiskMatrix(
    name="DCB0129 5×5",
    severity=["minor", "significant", "considerable", "major", "catastrophic"],
    likelihood=list(_DCB_RATINGS),
    acceptability=["acceptable", "undesirable", "unacceptable"],
    cells={level: [_DCB_CLASS[r] for r in row] for level, row in _DCB_RATINGS.items()},
    rates={"very_low": 0.001, "low": 0.01, "medium": 0.05, "high": 0.2, "very_high": 1.0},
    ratings={level: list(row) for level, row in _DCB_RATINGS.items()},
)
PRESETS = {"dcb0129": DCB0129}


def words(level: str) -> str:
    """A level as words (`very_high` -> `very high`)."""
    return level.replace("_", " ")


ControlKind = Literal["test", "design", "process", "training", "labelling"]
CONTROL_KINDS: tuple[str, ...] = get_args(ControlKind)
HazardStatus = Literal["open", "monitoring", "closed", "transferred"]


class ReviewEvidence(_Strict):
    """What shows a design, process, training or labelling control is in place: a document, who reviewed it,
    when, and the reviewer's judgement. Shown as "verified by review", never as a test result."""

    document: str = Field(min_length=1, description="a document reference or a path beside the hazard log")
    sha256: str | None = Field(default=None, pattern=r"^(sha256:)?[0-9a-f]{64}$")
    reviewer: str = Field(min_length=1)
    reviewed: date
    judgement: str = Field(min_length=1, description="the reviewer's judgement that the control is in place")


class Control(_Strict):
    """One control. A `test` control (the default) names what verifies it (criteria on scenarios with these
    tags) and when it counts as working; a design, process, training or labelling control names its
    `evidence` (a document, a reviewer, a date, a judgement) and no test."""

    id: str = Field(pattern=_ID)
    description: str = Field(min_length=1)
    kind: ControlKind = "test"
    criteria: list[str] = Field(
        default_factory=empty_list, description="criterion ids whose verdicts verify it"
    )
    tags: list[str] = Field(default_factory=empty_list, description="scenario tags; empty: every scenario")
    threshold: str | None = Field(
        default=None,
        min_length=1,
        description='METRIC OP VALUE, as in `simulator gate`: "fail_rate <= 2%" (test controls only)',
    )
    evidence: ReviewEvidence | None = None

    @model_validator(mode="after")
    def _named_criteria(self) -> Control:
        if self.kind != "test":
            if self.criteria or self.tags or self.threshold:
                raise ValueError(
                    f"control {self.id} is a {self.kind} control: it has no criteria, tags or threshold "
                    "(a control verified by runs is kind: test)"
                )
            if self.evidence is None:
                raise ValueError(
                    f"control {self.id} ({self.kind}) needs its evidence: document, reviewer, reviewed "
                    "(a date), judgement"
                )
            return self
        if not self.criteria:
            raise ValueError(
                f"control {self.id} names no criterion: list the criteria whose verdicts verify it "
                "(criteria: [a criterion id from the judges folder, or outcome.<key>]); or, for a control "
                f"verified by review, give kind: one of {', '.join(CONTROL_KINDS[1:])} and its evidence"
            )
        if not self.threshold:
            raise ValueError(
                f"control {self.id} is a test control without a threshold: add threshold: (e.g. "
                "fail_rate <= 2%); or, for a control verified by review, give kind: one of "
                f"{', '.join(CONTROL_KINDS[1:])} and its evidence"
            )
        if self.evidence is not None:
            raise ValueError(f"control {self.id}: a test control's evidence is its runs; remove evidence:")
        return self


class Hazard(_Strict):
    """One hazard: cause, effect on the patient, initial severity and likelihood, controls."""

    id: str = Field(pattern=_ID)
    title: str = Field(min_length=1)
    cause: str = Field(min_length=1)
    effect: str = Field(min_length=1)
    severity: str
    likelihood: str
    status: HazardStatus = "open"
    owner: str | None = None
    raised: date | None = None
    reviewed: date | None = None
    # The CSO's estimate after controls verified by review (no test can place those on the matrix).
    residual_likelihood: str | None = None
    controls: list[Control] = Field(min_length=1)

    @model_validator(mode="after")
    def _dates(self) -> Hazard:
        if self.raised and self.reviewed and self.reviewed < self.raised:
            raise ValueError(f"hazard {self.id}: reviewed {self.reviewed} is before raised {self.raised}")
        return self


class SystemDefinition(_Strict):
    """What the system under test is and is for (DCB0129 §2 of a safety case report)."""

    name: str = Field(min_length=1)
    version: str | None = None
    intended_use: str | None = None
    clinical_setting: str | None = None
    users: list[str] = Field(default_factory=empty_list)
    interfaces: list[str] = Field(default_factory=empty_list)
    exclusions: list[str] = Field(default_factory=empty_list)


class Role(_Strict):
    role: str = Field(min_length=1)
    name: str = Field(min_length=1)


class RiskManagement(_Strict):
    """The clinical risk management this log belongs to: the CRM plan it follows and who holds which role."""

    plan: str | None = Field(default=None, description="the clinical risk management plan's reference")
    roles: list[Role] = Field(default_factory=empty_list)
    method: str | None = Field(default=None, description="anything the plan adds to the method shown")


class Exposure(_Strict):
    """Expected use in the service: conversations per month, and each presentation's share (by scenario
    tag). Turns a control's rate per conversation into expected incidents per month, labelled a projection."""

    conversations_per_month: float = Field(gt=0)
    case_mix: dict[str, float] = Field(default_factory=empty_dict, description="scenario tag -> share, 0..1")

    @field_validator("case_mix")
    @classmethod
    def _shares(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [k for k, v in value.items() if not 0.0 <= v <= 1.0]
        if bad:
            raise ValueError(f"case_mix shares are between 0 and 1; fix {', '.join(bad)}")
        return value


class HazardLog(_Strict):
    """The whole hazard log: the matrix every hazard is placed on, and the hazards."""

    title: str = "Hazard log"
    # One line, or the whole definition (name, version, intended_use, clinical_setting, users, ...).
    system: SystemDefinition | None = None
    owner: str | None = None
    risk_management: RiskManagement | None = None
    exposure: Exposure | None = None
    # A preset's name (`dcb0129`) or a declared matrix.
    matrix: RiskMatrix = Field(default_factory=lambda: DCB0129)
    hazards: list[Hazard] = Field(min_length=1)

    _file: Path | None = PrivateAttr(default=None)
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)

    @field_validator("system", mode="before")
    @classmethod
    def _system_line(cls, value: object) -> object:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("matrix", mode="before")
    @classmethod
    def _preset(cls, value: object) -> object:
        if isinstance(value, str):
            if value not in PRESETS:
                raise ValueError(f"matrix '{value}' is not a preset ({', '.join(PRESETS)}); or declare one")
            return PRESETS[value]
        return value

    @property
    def risk_matrix(self) -> RiskMatrix:
        return self.matrix

    @property
    def file(self) -> Path | None:
        return self._file

    def line_of(self, *loc: str | int) -> int | None:
        return LocatedYAML(path=self._file or Path("hazards"), data=None, lines=self._lines).line_of(loc)


def _matrix_problems(log: HazardLog, path: Path) -> list[Problem]:
    matrix = log.risk_matrix
    problems = []
    for i, hazard in enumerate(log.hazards):
        for name, levels in (
            ("severity", matrix.severity),
            ("likelihood", matrix.likelihood),
            ("residual_likelihood", matrix.likelihood),
        ):
            value = getattr(hazard, name)
            if value is not None and value not in levels:
                problems.append(
                    Problem(
                        str(path),
                        f"{name} '{value}' is not on the matrix; use one of: {', '.join(levels)}",
                        log.line_of("hazards", i, name),
                        field_path(("hazards", i, name)),
                    )
                )
    return problems


def _duplicate_ids(
    log: HazardLog, line_of: Callable[[tuple[str | int, ...]], int | None], path: Path
) -> list[Problem]:
    """Each hazard id, and each control id (unique across the log), written again: at its own line, naming
    the id and the line that has it first."""
    problems: list[Problem] = []
    first: dict[tuple[str, str], int | None] = {}
    for h, hazard in enumerate(log.hazards):
        ids: list[tuple[tuple[str | int, ...], str, str]] = [(("hazards", h, "id"), "hazard", hazard.id)]
        ids += [
            (("hazards", h, "controls", c, "id"), "control", control.id)
            for c, control in enumerate(hazard.controls)
        ]
        for loc, kind, ident in ids:
            line = line_of(loc)
            if (kind, ident) not in first:
                first[kind, ident] = line
                continue
            field = field_path(loc)
            message = f"{kind} id {ident} is used twice (first at line {first[kind, ident]}); give each {kind} its own id"
            problems.append(Problem(str(path), message, line=line, field=field))
    return problems


def load_hazard_log(path: Path) -> HazardLog:
    """Read and validate a hazard log; every mistake is one UserError listing file:line [field] problems."""
    title = "invalid hazard log"
    if not path.exists() and not path.is_symlink():  # a folder, FIFO or link loop is read, and refused so
        raise UserError(f"{path}: no such hazard log; write one with `simulator new hazard`")
    try:
        source = load_yaml(path)
    except YAMLProblem as exc:
        raise UserError(title, [exc.problem]) from exc
    if not isinstance(source.data, dict):
        raise UserError(title, [Problem(str(path), "a hazard log is a mapping (matrix:, hazards: ...)")])
    log, problems = validate_model(HazardLog, source.data, source)
    if log is None:
        raise UserError(title, problems)
    log._file, log._lines = path, source.lines
    problems = _duplicate_ids(log, source.line_of, path) + _matrix_problems(log, path)
    if problems:
        raise UserError(title, problems)
    return log
