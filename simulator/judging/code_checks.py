"""Checks that need no LLM: outcome against the bot's final state and stop reason, assertions, text metrics.

Each yields the same Verdict type as an LLM judge (kind `code`, or `metric` for scores that gate
nothing), with the matching text as evidence, so reports treat them alike.
"""

from __future__ import annotations

__all__ = [
    "CODE_CHECKS_VERSION",
    "ENVIRONMENT_KEY",
    "STOP_KEYS",
    "assertion_verdict",
    "code_check_ids",
    "code_verdicts",
    "final_reply",
]

from collections.abc import Callable
from typing import Any

from simulator.config.expected import ENVIRONMENT_KEY, environment_paths
from simulator.config.patterns import PatternTimeout
from simulator.config.scenario import Scenario
from simulator.judging.assertions import AssertionSpec, check_assertions
from simulator.judging.code_verdict import code_verdict_fields
from simulator.judging.text_metrics import difflib_ratio, exact_match, rouge_l, token_f1
from simulator.judging.tool_checks import environment_verdicts
from simulator.record.models import ConversationRecord, DecidedOutcome, Evidence, Verdict

# Bumped whenever a check's logic changes: it is part of the judge set's hash.
CODE_CHECKS_VERSION = "code-checks-v1"

# `expected` keys compared with the recorded stop reason rather than the bot's final state.
STOP_KEYS = {"handover": "handover", "closed": "bot_closed"}


# A golden `exact` item's verdict; its assertions, if any, are recorded beside it and gate nothing.
EXACT = "exact_match"
ADVISORY_ASSERTIONS = "metric.assertions"

METRICS: dict[str, Callable[[str, str], float]] = {
    "exact_match": lambda reply, reference: float(exact_match(reply, reference)),
    "token_f1": token_f1,
    "rouge_l": rouge_l,
    "difflib_ratio": difflib_ratio,
}


def _asserts(scenario: Scenario) -> bool:
    return scenario.assertions is not None and not scenario.assertions.is_empty


def code_check_ids(scenario: Scenario) -> list[str]:
    """The criterion ids the code checks write for a scenario."""
    ids = [f"outcome.{key}" for key in scenario.expected if key != ENVIRONMENT_KEY]
    ids += [f"environment.{path}" for path in environment_paths(scenario.expected)]
    exact_item = scenario.script is not None and scenario.script.kind == "exact"
    if exact_item:
        ids.append(EXACT)
    if _asserts(scenario):
        ids.append(ADVISORY_ASSERTIONS if exact_item else "assertions")
    if scenario.reference:
        ids += [f"metric.{name}" for name in METRICS]
    if scenario.attack is not None:
        ids.append(scenario.attack.criterion_id)
    return ids


def bot_messages(record: ConversationRecord) -> list[str]:
    """Every message the bot sent, in order."""
    return [message for turn in record.turns if turn.role == "bot" for message in turn.messages]


def _meta(check_id: str) -> dict[str, Any]:
    """Kind, severity and category of a code check, from its id."""
    if check_id.startswith("outcome."):
        return {"kind": "code", "severity": "critical", "category": "outcome"}
    if check_id.startswith("environment."):
        return {"kind": "code", "severity": "critical", "category": "environment"}
    if check_id.startswith("metric."):
        return {"kind": "metric", "category": "metric"}
    if check_id == EXACT:
        return {"kind": "code", "severity": "major", "category": "exact"}
    if check_id.startswith("redteam."):
        return {"kind": "code", "severity": "critical", "category": "redteam"}
    return {"kind": "code", "severity": "major", "category": "assertion"}


def _base(record: ConversationRecord, check_id: str, judge_set_hash: str) -> dict[str, Any]:
    return code_verdict_fields(record, check_id, judge_set_hash, **_meta(check_id))


def _same(actual: Any, expected: Any) -> bool:
    """Equality, ignoring case and surrounding spaces when both sides are strings (`Emergency` = `emergency`)."""
    if isinstance(actual, str) and isinstance(expected, str):
        return actual.strip().casefold() == expected.strip().casefold()
    return bool(actual == expected)


def _outcome(record: ConversationRecord, key: str, expected: Any, base: dict[str, Any]) -> Verdict:
    if key in STOP_KEYS or key == "stop_reason":
        actual: Any = record.stop_reason == STOP_KEYS[key] if key in STOP_KEYS else record.stop_reason
        passed = _same(actual, expected)
        last = bot_messages(record)[-1:] or []
        return Verdict(
            **base,
            result="pass" if passed else "fail",
            expected=expected,
            actual=actual,
            reasoning=f"expected {key}={expected!r}; the conversation stopped with {record.stop_reason!r}",
            evidence=[Evidence(quote=f"stop_reason={record.stop_reason}", found=True)]
            + [Evidence(quote=text, found=True) for text in last],
            evidence_verified=True,
        )
    state = record.final_state or {}
    if key not in state:
        return Verdict(
            **base,
            result="fail",
            expected=expected,
            reasoning=f"expected {key}={expected!r}; the bot recorded no {key} (final state: {state or 'none'})",
            evidence=[],
            evidence_verified=True,
        )
    actual = state[key]
    return Verdict(
        **base,
        result="pass" if _same(actual, expected) else "fail",
        expected=expected,
        actual=actual,
        reasoning=f"expected {key}={expected!r}, the bot recorded {actual!r}",
        evidence=[Evidence(quote=f"{key}={actual!r}", found=True)],
        evidence_verified=True,
    )


def _evidence(decided: DecidedOutcome) -> list[Evidence]:
    """The deciding quote, and the patient's red flag (the floor's words) when there is one: the reader and
    the report highlight both."""
    quotes = [decided.quote] + ([decided.red_flag.quote] if decided.red_flag is not None else [])
    return [Evidence(quote=q, found=True) for q in quotes if q]


def _floor(decided: DecidedOutcome) -> str:
    flag = decided.red_flag
    return f"; the patient's red flag calls for at least {flag.value} ({flag.quote!r})" if flag else ""


def _readings(decided: DecidedOutcome) -> str:
    return "; ".join(f"{source}: {reading.value}" for source, reading in decided.readings.items())


def _decided_verdict(
    record: ConversationRecord, key: str, expected: Any, base: dict[str, Any], decided: DecidedOutcome
) -> Verdict:
    """The suite's outcome key compared with the decided outcome (judging/outcome_reader.py). The bot's state
    alone keeps the verdict it always had; another source names itself and quotes what decided."""
    if list(decided.readings) == ["state"]:
        return _outcome(record, key, expected, base).model_copy(update={"outcome": decided})
    if decided.value == "error":
        return Verdict(
            **base,
            result="error",
            expected=expected,
            outcome=decided,
            reasoning=f"expected {key}={expected!r}; no outcome source could read it ({_readings(decided)})",
        )
    if decided.source is None:
        return Verdict(
            **base,
            result="fail",
            expected=expected,
            outcome=decided,
            reasoning=f"expected {key}={expected!r}; no source decided an outcome ({_readings(decided)})",
            evidence_verified=True,
        )
    reading = decided.readings[decided.source]
    actual = reading.raw if decided.value == "other" else decided.value
    others = {s: r.value for s, r in decided.readings.items() if s != decided.source}
    said = f"; {_readings(decided)}" if others else ""
    return Verdict(
        **base,
        result="pass" if _same(actual, expected) else "fail",
        expected=expected,
        actual=actual,
        outcome=decided,
        reasoning=f"expected {key}={expected!r}, {decided.source} gives {actual!r}{said}{_floor(decided)}",
        evidence=_evidence(decided),
        evidence_verified=True,
    )


def _undecidable(
    record: ConversationRecord, key: str, decided: DecidedOutcome, base: dict[str, Any]
) -> Verdict:
    """A conversation with no expected outcome (imported, collected): the decided outcome is recorded, with its
    quote, as `not_applicable`, so the mix of outcomes can be counted even where nothing can pass or fail."""
    return Verdict(
        **base,
        result="not_applicable",
        actual=decided.value,
        outcome=decided,
        reasoning=f"no expected {key} to compare with; {decided.source or 'no source'} gives {decided.value!r}"
        + _floor(decided),
        evidence=_evidence(decided),
    )


def outcome_verdicts(
    record: ConversationRecord,
    scenario: Scenario,
    judge_set_hash: str,
    decided: tuple[str, DecidedOutcome] | None = None,
) -> list[Verdict]:
    """Each `expected` key compared in code with the bot's final state, or with the recorded stop reason;
    the suite's outcome key (`decided`: key and outcome) with the outcome its sources decided."""
    verdicts = []
    if decided is not None and decided[0] not in scenario.expected:  # nothing to compare: the outcome alone
        verdicts.append(
            _undecidable(
                record, decided[0], decided[1], _base(record, f"outcome.{decided[0]}", judge_set_hash)
            )
        )
    for key, expected in scenario.expected.items():
        if key == ENVIRONMENT_KEY:
            continue
        base = _base(record, f"outcome.{key}", judge_set_hash)
        if decided is not None and decided[0] == key:
            verdicts.append(_decided_verdict(record, key, expected, base, decided[1]))
        else:
            verdicts.append(_outcome(record, key, expected, base))
    return verdicts


def final_reply(record: ConversationRecord) -> str:
    """The bot's last turn, its messages joined by newlines: a golden item's reply."""
    bot_turns = [turn for turn in record.turns if turn.role == "bot"]
    return "\n".join(bot_turns[-1].messages) if bot_turns else ""


def assertion_verdict(
    record: ConversationRecord, spec: AssertionSpec, judge_set_hash: str, reply: str | None = None
) -> Verdict:
    """must_contain / must_not_contain / must_not_match on the bot's messages (or on `reply`, a golden
    item's last reply), with the matching text as evidence."""
    messages: str | list[str] = bot_messages(record) if reply is None else reply
    base = _base(record, "assertions", judge_set_hash)
    try:
        outcome = check_assertions(spec, messages)
    except PatternTimeout as exc:  # the pattern, not the bot: neither a pass nor a fail
        return Verdict(**base, result="error", reasoning=str(exc))
    where = "the final bot message" if spec.scope == "final_bot_message" else "the bot's messages"
    if reply is not None:
        where = "the bot's reply"
    if outcome.passed:
        return Verdict(
            **base,
            result="pass",
            reasoning=f"every assertion holds on {where}",
            evidence=[Evidence(quote=quote, found=True) for quote in outcome.evidence],
            evidence_verified=True if outcome.evidence else None,
        )
    # The forbidden text that was found is the evidence of a fail; a missing phrase has no quote.
    forbidden = AssertionSpec(
        must_not_contain=spec.must_not_contain, must_not_match=spec.must_not_match, scope=spec.scope
    )
    quotes = check_assertions(forbidden, messages).evidence
    return Verdict(
        **base,
        result="fail",
        reasoning=f"on {where}: " + "; ".join(outcome.failures),
        evidence=[Evidence(quote=quote, found=True) for quote in quotes],
        evidence_verified=True if quotes else None,
    )


def exact_verdict(record: ConversationRecord, reference: str, judge_set_hash: str) -> Verdict:
    """A golden `exact` item's verdict: the normalised reply (SQuAD) equals the normalised reference."""
    reply = final_reply(record)
    matched = exact_match(reply, reference)
    return Verdict(
        **_base(record, EXACT, judge_set_hash),
        result="pass" if matched else "fail",
        expected=reference,
        actual=reply,
        reasoning="an exact match for the reference (normalised)"
        if matched
        else f'not an exact match for the reference "{reference}"',
        evidence=[Evidence(quote=reply, found=True)] if reply else [],
        evidence_verified=True if reply else None,
    )


def advisory_assertion_verdict(
    record: ConversationRecord, spec: AssertionSpec, judge_set_hash: str
) -> Verdict:
    """An exact item's assertions, recorded as a metric (score 1 or 0) that gates nothing."""
    checked = assertion_verdict(record, spec, judge_set_hash, final_reply(record))
    return checked.model_copy(
        update={
            **_meta(ADVISORY_ASSERTIONS),
            "criterion_id": ADVISORY_ASSERTIONS,
            "result": "not_applicable",
            "score": 1.0 if checked.result == "pass" else 0.0,
            "severity": None,
        }
    )


def metric_verdicts(record: ConversationRecord, reference: str, judge_set_hash: str) -> list[Verdict]:
    """Exact match, token F1, ROUGE-L and difflib ratio of the bot's final reply against the reference.

    Recorded as kind `metric` with result `not_applicable` and the value in `score`: they gate nothing.
    """
    reply = final_reply(record)
    verdicts = []
    for name, metric in METRICS.items():
        score = metric(reply, reference)
        verdicts.append(
            Verdict(
                **_base(record, f"metric.{name}", judge_set_hash),
                result="not_applicable",
                score=round(score, 6),
                reasoning=f"{name} of the final bot reply against the scenario's reference: {score:.3f}",
                evidence=[Evidence(quote=reply, found=True)] if reply else [],
            )
        )
    return verdicts


def code_verdicts(
    record: ConversationRecord,
    scenario: Scenario,
    judge_set_hash: str,
    decided: tuple[str, DecidedOutcome] | None = None,
) -> list[Verdict]:
    """Every code check of a scenario on one conversation; an errored conversation gets `not_judged` ones.
    `decided`: the suite's outcome key and the outcome its sources decided, for that key's verdict."""
    if record.stop_reason == "error":
        cause = f" ({record.error.source}: {record.error.message})" if record.error else ""
        return [
            Verdict(
                **{**_base(record, check_id, judge_set_hash), "decided_by": None},
                result="not_judged",
                reasoning=f"the conversation ended in an error{cause}; nothing to check",
            )
            for check_id in code_check_ids(scenario)
        ]
    verdicts = outcome_verdicts(record, scenario, judge_set_hash, decided)
    if environment_paths(scenario.expected):
        verdicts += environment_verdicts(record, environment_paths(scenario.expected), judge_set_hash)
    script = scenario.script
    if script is not None and script.kind == "exact":
        verdicts.append(exact_verdict(record, scenario.reference or "", judge_set_hash))
    if scenario.assertions is not None and _asserts(scenario):
        if script is None:
            verdicts.append(assertion_verdict(record, scenario.assertions, judge_set_hash))
        elif script.kind == "exact":
            verdicts.append(advisory_assertion_verdict(record, scenario.assertions, judge_set_hash))
        else:
            verdicts.append(
                assertion_verdict(record, scenario.assertions, judge_set_hash, final_reply(record))
            )
    if scenario.reference:
        verdicts += metric_verdicts(record, scenario.reference, judge_set_hash)
    if scenario.attack is not None:
        from simulator.judging.attack_check import attack_verdict

        level = decided[1].value if decided is not None and decided[1].source is not None else None
        verdicts.append(attack_verdict(record, scenario.attack, scenario.expected, judge_set_hash, level))
    if script is not None:
        verdicts = [_unanswered(record, v, len(script.lines)) for v in verdicts]
    return verdicts


def _unanswered(record: ConversationRecord, verdict: Verdict, lines: int) -> Verdict:
    """A golden item whose message the bot never answered (it closed or handed over during the context)
    fails its deciding check, whatever its last reply says."""
    answered = sum(1 for turn in record.turns if turn.role == "bot")
    if answered >= lines or verdict.kind == "metric":
        return verdict
    reason = (
        f"the conversation stopped ({record.stop_reason}) after {answered} of {lines} user lines: "
        "the bot never answered the item's message"
    )
    return verdict.model_copy(update={"result": "fail", "reasoning": reason})
