"""Is a hazard's control shown to work? Its verifying conversations, the bounded result, the failures.

A control names criteria, scenario tags and a threshold in the gate's vocabulary. Its verifying
conversations are those of the scenarios with any of the tags (every scenario without tags); only the
control's criteria count. The threshold is judged by the gate's own machinery (`gate.evaluate`: the
scenario-clustered 95% bound, the rule-of-three bound where nothing failed), so "met" means the same here as
in CI. The gate's `undecidable` is this document's "not demonstrable": even a flawless result on this many
scenarios could not show it, and the result says how many more scenarios it needs.

Errored and not-judged conversations are never passes or fails: they are counted apart. Conversations whose
simulated user failed a fidelity check (simulator-faulted) stay in the rate and are shown separately, with
the bound the control would have without them.
"""

from __future__ import annotations

__all__ = ["ControlResult", "evaluate_control"]

import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import Literal

from simulator.analysis.outcome import actual_outcome, decided_outcome
from simulator.analysis.rundata import RunData
from simulator.config.variants import vignette_of
from simulator.models import ResultModel as _Model
from simulator.record.models import ConversationRecord, Verdict
from simulator.report.gate import Requirement, evaluate, gate_metrics, parse_requirement
from simulator.safety.hazards import Control, ReviewEvidence
from simulator.stats.rates import RateView, rate_view

# "verified by review": a design, process, training or labelling control (safety/reviewed.py), no test.
ControlStatus = Literal["met", "not met", "not demonstrable", "verified by review"]
OWN_METRIC = "fail_rate"  # the control's own rate: conversations failing any of its criteria
MAX_EVIDENCE = 12


class ControlEvidence(_Model):
    """One failing conversation: what failed, the judge's quotes (marked when not found) and reasoning."""

    conversation_id: str
    scenario_id: str
    repeat: int
    failed: list[str]
    quotes: list[str]
    reasoning: str
    simulator_faulted: bool


class ControlResult(_Model):
    """One control judged on its verifying conversations."""

    id: str
    description: str
    criteria: list[str]
    tags: list[str]
    threshold: str
    metric: str
    scenarios: list[str]
    conversations: int
    passed: int
    failed: int
    errored: int
    not_judged: int
    not_applicable: int
    simulator_faulted: int
    rate: RateView | None
    bound: float | None
    bound_side: Literal["upper", "lower"]
    status: ControlStatus
    reason: str
    advice: str
    more_scenarios: int | None
    bound_without_faulted: float | None
    failing: list[ControlEvidence]
    failing_total: int
    kind: str = "test"
    # A control verified by review: its document (and hash), reviewer, date and judgement.
    review: ReviewEvidence | None = None


def subset_run(run: RunData, keep: Callable[[ConversationRecord], bool], criteria: set[str]) -> RunData:
    """The run restricted to some conversations and to verdicts on `criteria` (the cache starts empty)."""
    records = [r for r in run.conversations if keep(r)]
    ids = {r.id for r in records}
    scenarios = {r.scenario_id for r in records}
    return dataclasses.replace(
        run,
        conversations=records,
        verdicts=[v for v in run.verdicts if v.conversation_id in ids and v.criterion_id in criteria],
        samples=[],
        fidelity=[v for v in run.fidelity if v.conversation_id in ids],
        scenario_order=[s for s in run.scenario_order if s in scenarios],
        cache={},
    )


def _status(record: ConversationRecord, verdicts: list[Verdict]) -> str:
    """pass / fail / error / not_judged / not_applicable over the control's criteria in one conversation."""
    results = {v.result for v in verdicts}
    if "fail" in results:
        return "fail"
    if record.stop_reason == "error" or "error" in results:
        return "error"
    if "pass" in results:
        return "pass"
    return "not_applicable" if results == {"not_applicable"} else "not_judged"


def _statuses(run: RunData) -> dict[str, str]:
    grouped = run.verdicts_by_conversation()
    return {r.id: _status(r, grouped.get(r.id, [])) for r in run.conversations}


def _own_rate(run: RunData, statuses: dict[str, str]) -> RateView:
    cells: dict[str, list[int]] = {}
    for record in run.conversations:
        status = statuses[record.id]
        if status in ("pass", "fail"):
            cell = cells.setdefault(vignette_of(record.scenario_id), [0, 0])
            cell[0] += int(status == "fail")
            cell[1] += 1
    pairs = [(k, n) for k, n in cells.values()]
    errored = sum(1 for s in statuses.values() if s == "error")
    return rate_view(sum(k for k, _ in pairs), sum(n for _, n in pairs), per_scenario=pairs, errored=errored)


def control_metrics(run: RunData) -> dict[str, Callable[[], RateView]]:
    """The gate's metrics on this (subset) run, plus the control's own `fail_rate`."""
    metrics = gate_metrics(run)
    metrics[OWN_METRIC] = lambda: _own_rate(run, _statuses(run))
    return metrics


def _faulted(run: RunData) -> set[str]:
    return {v.conversation_id for v in run.fidelity if v.result == "fail"}


def _evidence(run: RunData, statuses: dict[str, str], faulted: set[str]) -> list[ControlEvidence]:
    grouped = run.verdicts_by_conversation()
    key = run.outcome.key if run.outcome is not None else None
    out = []
    for record in run.conversations:
        if statuses[record.id] != "fail":
            continue
        failing = sorted(
            (v for v in grouped.get(record.id, []) if v.result == "fail"), key=lambda v: v.criterion_id
        )
        quotes = [
            e.quote + ("" if e.found else " (NOT FOUND in the transcript)")
            for v in failing
            for e in v.evidence
        ]
        outcome = [v for v in failing if key is not None and v.criterion_id == f"outcome.{key}"]
        reasons = [f"{v.criterion_id}: {v.reasoning}" for v in failing if v.reasoning and v not in outcome]
        if outcome and key is not None:
            # Found in code from the decided outcome: say what was expected and decided (and from which source
            # when not the bot's state), and quote the advice given.
            expected = run.expected.get(record.scenario_id, {}).get(key)
            decided = decided_outcome(run, record)
            where = f" (from {decided.source})" if decided and decided.source not in (None, "state") else ""
            reasons.insert(
                0, f"expected {key} {expected}, the bot decided {actual_outcome(run, record)}{where}"
            )
            quotes = [q for q in quotes if not q.startswith(f"{key}=")] + _last_bot_message(record)
        out.append(
            ControlEvidence(
                conversation_id=record.id,
                scenario_id=record.scenario_id,
                repeat=record.repeat,
                failed=[v.criterion_id for v in failing],
                quotes=quotes,
                reasoning="; ".join(reasons),
                simulator_faulted=record.id in faulted,
            )
        )
    return out


def _last_bot_message(record: ConversationRecord) -> list[str]:
    """The bot's final message, quoted, for a failure found in code (the outcome check quotes the state)."""
    for turn in reversed(record.turns):
        if turn.role == "bot" and turn.messages:
            text = " ".join(turn.messages)
            return [f"bot's last message: {text[:400]}{'…' if len(text) > 400 else ''}"]
    return []


def _verifying(run: RunData, control: Control) -> RunData:
    tags = set(control.tags)
    return subset_run(run, lambda r: not tags or bool(tags & set(r.tags)), set(control.criteria))


def evaluate_control(run: RunData, control: Control, known: list[str]) -> ControlResult:
    """Judge one control on its verifying conversations of `run`."""
    assert control.threshold is not None, "a test control has a threshold (hazards.Control)"
    sub = _verifying(run, control)
    requirement = parse_requirement(control.threshold, known)
    statuses = _statuses(sub)
    metrics = control_metrics(sub)
    rate = metrics[requirement.metric]() if requirement.metric in metrics else None
    status, reason, advice, bound, more = _decide(requirement, rate, statuses)
    if status != "not met" and rate is not None and rate.n:  # failures seen stand: the missing can only add
        lacking = [*_never_judged(sub, control.criteria), *_partial(run, sub, control)]
        if lacking:
            # A "met" would rest on less evidence than the control names: not demonstrable until it exists.
            status, advice = "not demonstrable", _lacking_advice(lacking, advice)
            reason = f"{'; '.join(lacking)}; on what there is, {reason}"
    faulted = _faulted(sub) & set(statuses)
    without = None
    if faulted and rate is not None:
        rest = subset_run(sub, lambda r: r.id not in faulted, set(control.criteria))
        rest_rate = control_metrics(rest).get(requirement.metric)
        if rest_rate is not None and rest_rate().n:
            without = evaluate(requirement, rest_rate()).bound
    evidence = _evidence(sub, statuses, faulted)
    return ControlResult(
        id=control.id,
        description=control.description,
        criteria=list(control.criteria),
        tags=list(control.tags),
        threshold=requirement.text,
        metric=requirement.metric,
        scenarios=list(sub.scenario_order),
        conversations=len(sub.conversations),
        passed=sum(1 for s in statuses.values() if s == "pass"),
        failed=sum(1 for s in statuses.values() if s == "fail"),
        errored=sum(1 for s in statuses.values() if s == "error"),
        not_judged=sum(1 for s in statuses.values() if s == "not_judged"),
        not_applicable=sum(1 for s in statuses.values() if s == "not_applicable"),
        simulator_faulted=len(faulted),
        rate=rate,
        bound=bound,
        bound_side="upper" if requirement.upper else "lower",
        status=status,
        reason=reason,
        advice=advice,
        more_scenarios=more,
        bound_without_faulted=without,
        failing=evidence[:MAX_EVIDENCE],
        failing_total=len(evidence),
    )


_Decision = tuple[ControlStatus, str, str, float | None, int | None]


def _decide(requirement: Requirement, rate: RateView | None, statuses: dict[str, str]) -> _Decision:
    """(status, reason, advice, bound, more scenarios) of the threshold on the rate, as the gate judges it."""
    if rate is None or rate.n == 0:
        return "not demonstrable", _nothing(statuses), _nothing_advice(statuses), None, None
    result = evaluate(requirement, rate)
    status: ControlStatus = "not demonstrable" if result.status == "undecidable" else result.status
    # The gate's own projection from the bound that decided (failing scenarios kept), never 3/n alone.
    more = result.more_clean_scenarios if status == "not demonstrable" else None
    return status, result.reason, result.advice, result.bound, more


def _partial(run: RunData, sub: RunData, control: Control) -> list[str]:
    """What the control's evidence lacks in the records (`RunData.unrecorded`, `unverdicted`): planned
    conversations of its scenarios never recorded, verifying conversations holding no verdict."""
    tags = set(control.tags)
    scenario_tags = {e.id: set(e.tags) for e in run.manifest.scenarios} | {
        s: set(t) for s, t in run.scenario_tags().items()
    }
    unrecorded = sum(n for s, n in run.unrecorded.items() if not tags or tags & scenario_tags.get(s, set()))
    unverdicted = sum(1 for r in sub.conversations if r.id in run.unverdicted)
    out = []
    if unrecorded:
        out.append(
            f"the evidence is partial: {unrecorded} planned conversations of its scenarios were never recorded"
        )
    if unverdicted:
        out.append(
            f"the evidence is partial: {unverdicted} verifying conversations hold no verdict (lost or never written)"
        )
    return out


def _lacking_advice(lacking: list[str], advice: str) -> str:
    fixes = []
    if any("never judged" in item for item in lacking):
        fixes.append(_nothing_advice({"": "not_judged"}))
    if any(item.startswith("the evidence is partial") for item in lacking):
        fixes.append("finish the run (simulator run --resume RUN) and build the case again")
    return "; ".join([*fixes, advice] if advice else fixes)


def _never_judged(run: RunData, criteria: list[str]) -> list[str]:
    """Each of `criteria` with no pass or fail on any conversation of `run`, and why: how many rows said
    not judged (with the run's reason, e.g. no judge set), not applicable or errored, or that none exist."""
    rows: dict[str, list[Verdict]] = {}
    for verdict in run.verdicts:
        rows.setdefault(verdict.criterion_id, []).append(verdict)
    out = []
    for criterion in criteria:
        of = rows.get(criterion, [])
        if any(v.result in ("pass", "fail") for v in of) or not run.conversations:
            continue
        if not of:
            out.append(
                f"{criterion} never judged on these conversations (no verdict on any of {len(run.conversations)})"
            )
            continue
        counts = Counter(v.result for v in of)
        why = [f"{n} {result.replace('_', ' ')}" for result, n in sorted(counts.items())]
        said = sorted({v.reasoning for v in of if v.result == "not_judged" and v.reasoning})
        if len(said) == 1:
            why[why.index(f"{counts['not_judged']} not judged")] += f": {said[0]}"
        out.append(f"{criterion} never judged on these conversations ({', '.join(why)})")
    return out


def _nothing(statuses: dict[str, str]) -> str:
    if not statuses:
        return "no conversation of a scenario with these tags: nothing measured"
    parts = [
        f"{sum(1 for s in statuses.values() if s == k)} {k.replace('_', ' ')}"
        for k in sorted(set(statuses.values()))
    ]
    return f"nothing measured: of {len(statuses)} verifying conversations, {', '.join(parts)}"


def _nothing_advice(statuses: dict[str, str]) -> str:
    values = set(statuses.values())
    if not values:
        return "add scenarios with these tags to the suite, or correct the control's tags"
    if "not_judged" in values:
        return (
            "judge these conversations (simulator judge RUN --judge-model MODEL): an unjudged criterion "
            "shows nothing"
        )
    if values <= {"not_applicable"}:
        return "the criteria never applied to these scenarios: add scenarios they apply to"
    return "the verifying conversations errored: fix the errors and resume the run (--retry-errors)"
