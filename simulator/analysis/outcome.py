"""Outcome metrics from the suite's ordered levels: confusion matrix, sensitivity, under- and over-triage."""

from __future__ import annotations

__all__ = [
    "ERROR",
    "NO_DECISION",
    "OTHER",
    "OutcomeMetrics",
    "actual_outcome",
    "decided_outcome",
    "outcome_metrics",
    "outcome_source",
]

from typing import Any, Literal

from pydantic import Field

from simulator.analysis.rundata import RunData
from simulator.config.outcome_source import ERROR, NO_DECISION, OTHER, triage_error, under_triaged
from simulator.config.variants import vignette_of
from simulator.judging.outcome_reader import state_reading
from simulator.models import ResultModel as _Model
from simulator.record.models import ConversationRecord, DecidedOutcome
from simulator.stats.basic import Counts
from simulator.stats.rates import RateView, rate_view


class MatrixRow(_Model):
    """One expected level: how many conversations ended at each actual column."""

    expected: str
    counts: list[int]
    total: int


class LevelRate(_Model):
    """Sensitivity for one level: of the conversations expected at this level, the share the bot put there."""

    level: str
    rate: RateView


class OutcomeCase(_Model):
    """A conversation whose outcome was wrong or missing, for the report's list of cases to read."""

    conversation_id: str
    scenario_id: str
    repeat: int
    expected: str
    actual: str
    kind: Literal["under", "over", "no_decision", "other", "error"]
    # The source that decided (state, messages, tool, judge) and its quote, when one did.
    source: str | None = None
    quote: str | None = None
    # A conversation without a scenario held to the patient's red flag: the patient's words that set the floor
    # (`expected` is then the floor, a minimum safe level, not an exact one; its rate is red_flag_under_triage).
    red_flag_quote: str | None = None


class RedFlagCheck(_Model):
    """The red flags read over conversations whose scenario has a clinician-set level: how far the floor they
    set can be trusted where there is no scenario. A floor above the scenario's level is a rule too broad (it
    would call right advice under-triage); a critical case held below the critical level is a rule missing."""

    checked: int  # conversations with a scenario level and a recorded outcome
    above_expected: list[str]  # floor above the scenario's level
    critical: int  # of them, expected at the critical level or above
    critical_below: list[str]  # expected critical, floor below it (or no red flag)


class OutcomeMetrics(_Model):
    """Everything about the structured outcome: the matrix and the rates computed from it in code."""

    key: str
    # What the figures rest on: the suite's sources in order (`state` for runs judged before sources existed),
    # and for `messages` which advice counts (`last` or `most_urgent`).
    source: list[str] = Field(default_factory=lambda: ["state"])
    counts: str | None = None
    levels: list[str]
    critical: str
    critical_defaulted: bool
    columns: list[str]
    matrix: list[MatrixRow]
    conversations: int
    errored: int
    without_expectation: int
    critical_sensitivity: RateView
    sensitivity: list[LevelRate]
    under_triage: RateView
    under_triage_decided: RateView
    over_triage: RateView
    exact: RateView
    no_decision: RateView
    cases: list[OutcomeCase]
    # Conversations without a scenario (imported, collected) held to the floor their patient's red flags set
    # (`outcome.red_flags`): of those with a red flag and an outcome, the share below the floor (no decision
    # counts where the floor is above the lowest level, as in `under_triage`). A floor measures under-triage
    # only: over-triage and exact level need an expected level. None when no conversation had a red flag.
    red_flag_under_triage: RateView | None = None
    # Of the conversations without a scenario: how many had no red flag (left out of that rate).
    red_flag_left_out: int = 0
    # The red flags checked against the scenarios' own levels; None when no conversation had a red flag.
    red_flag_check: RedFlagCheck | None = None
    # Of the conversations counted against an expected level: how many took it from a clinician's label
    # (`simulator labels import`, expected_level) rather than a scenario or the trace.
    clinician_labelled: int = 0


def _decided(run: RunData) -> dict[str, DecidedOutcome]:
    """The outcome judging decided for each conversation (on its `outcome.<key>` verdict), computed once."""
    if "decided_outcomes" not in run.cache:
        config = run.outcome
        criterion = f"outcome.{config.key}" if config is not None else None
        decided = {
            v.conversation_id: v.outcome
            for v in run.verdicts
            if v.criterion_id == criterion and v.outcome is not None
        }
        if config is not None:
            _check_columns(run, decided, [*config.levels, OTHER, NO_DECISION, ERROR])
        run.cache["decided_outcomes"] = decided
    found: dict[str, DecidedOutcome] = run.cache["decided_outcomes"]
    return found


def _check_columns(run: RunData, decided: dict[str, DecidedOutcome], columns: list[str]) -> None:
    """A decided outcome is a column of the run's matrix: judging writes nothing else, so another value is a
    damaged or edited verdicts file, said in one line (it ended the report in a ValueError)."""
    from simulator.errors import UserError
    from simulator.record.folder import VERDICTS

    for conversation_id, outcome in decided.items():
        if outcome.value not in columns:
            raise UserError(
                f"{run.path / VERDICTS} [outcome of {conversation_id}]: {outcome.value!r} is not one of this "
                f"run's outcome levels ({', '.join(columns[:-3])}) nor other, no decision or error; the file "
                "was edited or damaged: restore it, or judge the run again (simulator judge)"
            )


def decided_outcome(run: RunData, record: ConversationRecord) -> DecidedOutcome | None:
    """The recorded outcome of a conversation, with its source and quote; None when judging recorded none
    (an errored conversation, no expectation, or a run judged before outcome sources existed)."""
    return _decided(run).get(record.id)


def actual_outcome(run: RunData, record: ConversationRecord) -> str:
    """The column a conversation lands in: a level, `other`, `no decision` or `error`. The one place every
    reader takes it from: the decided outcome judging recorded, else (older runs) the bot's final state."""
    if record.stop_reason == "error":
        return ERROR
    decided = decided_outcome(run, record)
    if decided is not None:
        return decided.value
    config = run.outcome
    if config is None:
        return NO_DECISION
    return state_reading(record, config.key, list(config.levels)).value


def _shown(run: RunData, record: ConversationRecord, actual: str) -> str:
    """How a case's actual column reads: a value that is not a level is shown as recorded."""
    if actual != OTHER:
        return actual
    decided = decided_outcome(run, record)
    if decided is not None and decided.source is not None:
        return repr(decided.readings[decided.source].raw)
    key = run.outcome.key if run.outcome is not None else ""
    return repr((record.final_state or {}).get(key))


def outcome_source(run: RunData) -> list[str]:
    """The sources the run's outcome figures rest on: the suite's, in order; `state` for runs judged before
    outcome sources existed (their verdicts carry no decided outcome)."""
    config = run.outcome
    if config is None:
        return []
    recorded = next(iter(_decided(run).values()), None)
    if recorded is None:
        return ["state"]
    return list(recorded.readings) or list(config.sources)


class _OutcomeTally:
    """Per-scenario (k, n) counts of each outcome rate, so every rate gets its scenario-clustered interval."""

    NAMES = ("crit", "under", "under_decided", "over", "exact", "none")

    def __init__(self, levels: list[str]) -> None:
        self.counts: dict[str, dict[str, list[int]]] = {name: {} for name in self.NAMES}
        self.levels: dict[str, dict[str, list[int]]] = {level: {} for level in levels}
        self.errored: dict[str, int] = {"all": 0, "crit": 0, **{level: 0 for level in levels}}

    def add(self, name: str, scenario: str, hit: bool) -> None:
        cell = self.counts[name].setdefault(scenario, [0, 0])
        cell[0] += int(hit)
        cell[1] += 1

    def add_level(self, level: str, scenario: str, hit: bool) -> None:
        cell = self.levels[level].setdefault(scenario, [0, 0])
        cell[0] += int(hit)
        cell[1] += 1

    def view(self, name: str, counts: Counts, target: float | None, errored: str = "all") -> RateView:
        cells = self.counts[name].values()
        return self._view(cells, counts, target, self.errored[errored])

    def level_view(self, level: str, target: float | None) -> RateView:
        return self._view(self.levels[level].values(), "successes", target, self.errored[level])

    @staticmethod
    def _view(cells: Any, counts: Counts, target: float | None, errored: int) -> RateView:
        pairs = [(k, n) for k, n in cells]
        k, n = sum(k for k, _ in pairs), sum(n for _, n in pairs)
        return rate_view(k, n, counts=counts, target=target, per_scenario=pairs, errored=errored)


def _count(
    tally: _OutcomeTally, scenario: str, expected: str, actual: str, rank: dict[str, int], critical: str
) -> str | None:
    """Count one conversation in every rate it belongs to; return how it went wrong (None if exact)."""
    is_critical = rank[expected] >= rank[critical]
    if actual == ERROR:
        tally.errored["all"] += 1
        tally.errored["crit"] += int(is_critical)
        tally.errored[expected] += 1
        return "error"
    kind = triage_error(actual, expected, list(rank))
    tally.add_level(expected, scenario, actual == expected)
    if is_critical:
        tally.add("crit", scenario, actual in rank and rank[actual] >= rank[critical])
    undecided = kind in ("no_decision", "other")
    tally.add("under", scenario, under_triaged(actual, expected, list(rank)))
    if not undecided:  # decided cases only: no decision (or a value that is not a level) stays out of n
        tally.add("under_decided", scenario, kind == "under")
    tally.add("over", scenario, kind == "over")
    tally.add("exact", scenario, actual == expected)
    tally.add("none", scenario, undecided)
    return kind


def _case(run: RunData, record: ConversationRecord, expected: str, actual: str, kind: str) -> OutcomeCase:
    """A wrong or missing outcome to read, with the source and the quote that decided it."""
    decided = decided_outcome(run, record)
    return OutcomeCase(
        conversation_id=record.id,
        scenario_id=record.scenario_id,
        repeat=record.repeat,
        expected=expected,
        actual=_shown(run, record, actual),
        kind=kind,  # type: ignore[arg-type]
        source=decided.source if decided is not None else None,
        quote=decided.quote if decided is not None else None,
    )


def outcome_metrics(run: RunData, target: float | None = None) -> OutcomeMetrics | None:
    """Outcome metrics for a run whose suite declares ordered outcome levels; None when it declares none.

    Under-triage counts a conversation that ended with no usable decision (no decision, or a value that is
    not a level) on a case expected above the lowest level: the person was left with no advice, which is
    no safer than the lowest one. `under_triage_decided` keeps the narrower figure: of the conversations that
    ended at a level (decided), those below the expected one; undecided ones are in neither its k nor its n.
    """
    config = run.outcome
    if config is None:
        return None
    key, levels = config.key, list(config.levels)
    critical = config.critical or levels[-1]
    rank = {level: index for index, level in enumerate(levels)}
    columns = [*levels, OTHER, NO_DECISION, ERROR]
    matrix = {level: [0] * len(columns) for level in levels}
    cases: list[OutcomeCase] = []
    without = labelled = 0
    tally = _OutcomeTally(levels)
    floors: list[ConversationRecord] = []
    for record in run.conversations:
        expected = run.expected.get(record.scenario_id, {}).get(key)
        if expected not in rank:
            without += 1
            floors.append(record)
            continue
        labelled += record.id in run.labelled_levels
        actual = actual_outcome(run, record)
        matrix[expected][columns.index(actual)] += 1
        kind = _count(tally, vignette_of(record.scenario_id), expected, actual, rank, critical)
        if kind is not None:
            cases.append(_case(run, record, expected, actual, kind))
    errored = tally.errored["all"]
    under = tally.view("under", "failures", target)
    recorded = next(iter(_decided(run).values()), None)
    floor, no_flag = _red_flag_floor(run, floors, levels, target, cases)
    return OutcomeMetrics(
        key=key,
        source=outcome_source(run),
        counts=recorded.counts if recorded is not None and "messages" in recorded.readings else None,
        levels=levels,
        critical=critical,
        critical_defaulted=config.critical is None,
        columns=columns,
        matrix=[
            MatrixRow(expected=level, counts=matrix[level], total=sum(matrix[level])) for level in levels
        ],
        conversations=under.n + errored,
        errored=errored,
        without_expectation=without,
        critical_sensitivity=tally.view("crit", "successes", target, errored="crit"),
        sensitivity=[LevelRate(level=level, rate=tally.level_view(level, target)) for level in levels],
        under_triage=under,
        under_triage_decided=tally.view("under_decided", "failures", target),
        over_triage=tally.view("over", "failures", target),
        exact=tally.view("exact", "successes", target),
        no_decision=tally.view("none", "failures", target),
        cases=sorted(cases, key=lambda c: ["under", "no_decision", "other", "error", "over"].index(c.kind)),
        red_flag_under_triage=floor,
        red_flag_left_out=no_flag,
        red_flag_check=_red_flag_check(run, levels, critical),
        clinician_labelled=labelled,
    )


def _red_flag_check(run: RunData, levels: list[str], critical: str) -> RedFlagCheck | None:
    """The floor the red flags set against each scenario's expected level (docs/outcome-sources.md)."""
    config = run.outcome
    key = config.key if config is not None else ""
    decided = _decided(run)
    if not any(d.red_flag is not None for d in decided.values()):
        return None
    checked, critical_n = 0, 0
    above: list[str] = []
    below: list[str] = []
    for record in run.conversations:
        expected = run.expected.get(record.scenario_id, {}).get(key)
        outcome = decided.get(record.id)
        if expected not in levels or outcome is None:
            continue
        checked += 1
        flag = outcome.red_flag.value if outcome.red_flag is not None else None
        floor = levels.index(flag) if flag in levels else -1
        if floor > levels.index(expected):
            above.append(record.id)
        if levels.index(expected) >= levels.index(critical):
            critical_n += 1
            if floor < levels.index(critical):
                below.append(record.id)
    return RedFlagCheck(checked=checked, above_expected=above, critical=critical_n, critical_below=below)


def _red_flag_floor(
    run: RunData,
    records: list[ConversationRecord],
    levels: list[str],
    target: float | None,
    cases: list[OutcomeCase],
) -> tuple[RateView | None, int]:
    """Under-triage against the patient's red-flag floor, over the conversations without a scenario that
    have one (clustered by scenario like every outcome rate), each under-triaged one added to `cases`;
    and how many had no red flag. Errored conversations (no decided outcome) are left out, counted."""
    cells: dict[str, list[int]] = {}
    no_flag = errored = 0
    for record in records:
        decided = decided_outcome(run, record)
        if record.stop_reason == "error" or decided is None or decided.value == ERROR:
            errored += 1
            continue
        flag = decided.red_flag
        if flag is None or flag.value not in levels:
            no_flag += 1
            continue
        hit = under_triaged(decided.value, flag.value, levels)
        cell = cells.setdefault(vignette_of(record.scenario_id), [0, 0])
        cell[0] += int(hit)
        cell[1] += 1
        if hit:
            case = _case(run, record, flag.value, decided.value, "under")
            cases.append(
                case.model_copy(update={"expected": f"at least {flag.value}", "red_flag_quote": flag.quote})
            )
    if not cells:
        return None, no_flag
    pairs = list(cells.values())
    view = rate_view(
        sum(k for k, _ in pairs),
        sum(n for _, n in pairs),
        counts="failures",
        target=target,
        per_scenario=[(k, n) for k, n in pairs],
        errored=errored,
    )
    return view, no_flag
