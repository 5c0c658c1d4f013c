"""Code checks on what the bot did (docs/tool-checks.md): tool calls made or not made, claims matched by
actions, and the environment's final state.

Each is decided in code and written as a `code` Verdict like an outcome check. A quote of a tool call is
its one text form (record/parts.part_text), a quote of a claim the sentence the bot wrote, and each quote is
verified against the transcript the judges read, so the evidence check finds it. A call that returned an
error does not count as made; a claim is backed only by a successful matching call made before it (or in
the same turn, since a turn's calls come before its text).
"""

from __future__ import annotations

__all__ = ["TOOL_CHECKS_VERSION", "ToolCheckContext", "environment_verdicts", "tool_verdicts"]

import re
from dataclasses import dataclass, field
from typing import Any

from simulator.config.assertions import compile_pattern
from simulator.config.claims import ClaimRule, folded, needed_words
from simulator.config.patterns import PatternTimeout, schema_validator
from simulator.config.tool_checks import ArgMatcher, ToolCheck, read_state_path
from simulator.judging.code_verdict import code_verdict_fields
from simulator.judging.evidence import quote_found
from simulator.judging.prompt import transcript_messages
from simulator.plural import plural
from simulator.record.models import ConversationRecord, Evidence, Verdict
from simulator.record.parts import EventPart, TextPart, ToolCallPart, part_text

# Bumped whenever a tool check's logic changes; joins the judge set's hash only for suites that use them.
TOOL_CHECKS_VERSION = "tool-checks-v1"

Position = tuple[int, int]  # (turn position in record.turns, part index in the turn)
_END: Position = (1 << 30, 0)
_SENTENCE = re.compile(r"[^.!?\n]*[.!?]?")


@dataclass
class ToolCheckContext:
    """What the checks need beyond the record: the rule that tells advice apart (the offline user's
    outcome rule with the suite's vocabulary), and the suite's claim rules and checks."""

    gives_advice: Any  # Callable[[str], bool]
    claims: list[ClaimRule] = field(default_factory=list)
    checks: list[ToolCheck] = field(default_factory=list)
    # The default rules of a suite without an environment: a verdict only where the bot makes the claim.
    quiet_claims: bool = False

    def claim_ids(self, record: ConversationRecord) -> list[str]:
        """The claim rules that write a verdict on this conversation: every one, or (quiet) those the bot
        makes; a quiet rule writes nothing on a conversation that ended in an error."""
        if not self.quiet_claims:
            return [rule.id for rule in self.claims]
        if record.stop_reason == "error":
            return []
        return [rule.id for rule in self.claims if claim_made(rule, record)]


@dataclass
class _Timeline:
    calls: list[tuple[Position, int, ToolCallPart]]  # (position, turn index, part)
    anchors: dict[str, Position]
    messages: list[str]


def _timeline(record: ConversationRecord, context: ToolCheckContext) -> _Timeline:
    calls: list[tuple[Position, int, ToolCallPart]] = []
    anchors: dict[str, Position] = {}
    last_bot: Position | None = None
    for t, turn in enumerate(record.turns):
        for p, part in enumerate(turn.parts):
            if isinstance(part, ToolCallPart):
                calls.append(((t, p), turn.index, part))
                if part.error is None:
                    anchors.setdefault(f"tool {part.name}", (t, p))
            elif isinstance(part, EventPart) and part.event == "handover":
                anchors.setdefault("handover", (t, p))
        if turn.role == "bot":
            last_bot = (t, len(turn.parts))
            texts = [p for p, part in enumerate(turn.parts) if isinstance(part, TextPart)]
            if texts and "first_advice" not in anchors and context.gives_advice(turn.text):
                anchors["first_advice"] = (t, texts[0])
    if record.stop_reason == "handover" and "handover" not in anchors and last_bot is not None:
        anchors["handover"] = last_bot
    return _Timeline(calls, anchors, [text for _, text in transcript_messages(record.turns)])


def _base(record: ConversationRecord, check_id: str, severity: str, judge_set_hash: str) -> dict[str, Any]:
    return code_verdict_fields(
        record, check_id, judge_set_hash, kind="code", severity=severity, category="tool"
    )


def _evidence(quotes: list[str], messages: list[str]) -> tuple[list[Evidence], bool]:
    """Quotes checked against the transcript; with none (an absence), the code's reading is the proof."""
    evidence = [Evidence(quote=q, found=quote_found(q, messages)) for q in quotes]
    return evidence, all(e.found for e in evidence)


# ---------------------------------------------------------------------------------------------- matching


def _schema_problem(schema: dict[str, Any], value: Any) -> str | None:
    import jsonschema

    error = jsonschema.exceptions.best_match(schema_validator(schema).iter_errors(value))
    return None if error is None else error.message


def _equal(actual: Any, expected: Any) -> bool:
    if isinstance(actual, str) and isinstance(expected, str):
        return actual.strip().casefold() == expected.strip().casefold()
    return bool(actual == expected)


def matcher_problem(matcher: ArgMatcher, present: bool, value: Any) -> str | None:
    """Why a value fails a matcher (None when it holds)."""
    if not present:
        return "is missing"
    if matcher.has_equal and not _equal(value, matcher.equal):
        return f"is {value!r}, not {matcher.equal!r}"
    if matcher.one_of is not None and not any(_equal(value, option) for option in matcher.one_of):
        return f"is {value!r}, not one of {matcher.one_of!r}"
    if matcher.regex is not None and not compile_pattern(matcher.regex, "regex").search(str(value)):
        return f"is {value!r}, which does not match /{matcher.regex}/"
    if matcher.schema_ is not None:
        problem = _schema_problem(matcher.schema_, value)
        if problem is not None:
            return f"is {value!r}: {problem}"
    return None


def _mismatch(check: ToolCheck, part: ToolCallPart) -> str | None:
    """Why a call is not one the check is about (None when it is)."""
    if check.tool != "*" and part.name != check.tool:
        return f"it is {part.name}"
    if part.side != check.side:
        return f"it was made by the {part.side}"
    for name, matcher in check.arguments.items():
        problem = matcher_problem(matcher, name in part.arguments, part.arguments.get(name))
        if problem is not None:
            return f"argument {name} {problem}"
    if check.arguments_schema is not None:
        problem = _schema_problem(check.arguments_schema, part.arguments)
        if problem is not None:
            return f"its arguments do not fit the schema: {problem}"
    if check.wanted and part.error is not None and not check.allow_errors:
        return f"it failed ({part.error})"
    return None


def _window(check: ToolCheck, timeline: _Timeline) -> tuple[Position, Position, str]:
    """The (after, before) positions a call must fall strictly between, and the window in words."""
    low, high, words = (-1, -1), _END, []
    if check.after is not None:
        anchor = " ".join(check.after.split())
        low = timeline.anchors.get(anchor, _END)  # never happened: nothing comes after it
        words.append(f"after {anchor}" + ("" if anchor in timeline.anchors else " (which never happened)"))
    if check.before is not None:
        anchor = " ".join(check.before.split())
        high = timeline.anchors.get(anchor, _END)  # never happened: everything came before it
        words.append(f"before {anchor}")
    return low, high, " and ".join(words)


def _in_window(check: ToolCheck, position: Position, turn: int, low: Position, high: Position) -> bool:
    if check.before_turn is not None and turn >= check.before_turn:
        return False
    return low < position < high


def _describe(check: ToolCheck, window: str) -> str:
    what = "any tool" if check.tool == "*" else check.tool
    details = [f"{n} {m.describe()}" for n, m in check.arguments.items()]
    if check.arguments_schema is not None:
        details.append("arguments fitting the schema")
    text = what + (f" with {', '.join(details)}" if details else "")
    if check.side == "user":
        text += " (by the simulated user)"
    if check.before_turn is not None:
        window = " and ".join(w for w in (window, f"before turn {check.before_turn}") if w)
    return text + (f" {window}" if window else "")


# ---------------------------------------------------------------------------------------------- verdicts


def _check_verdict(
    record: ConversationRecord, check: ToolCheck, timeline: _Timeline, judge_set_hash: str
) -> Verdict:
    base = _base(record, check.check_id, check.severity, judge_set_hash)
    low, high, window = _window(check, timeline)
    described = _describe(check, window)
    matching = [(pos, turn, part) for pos, turn, part in timeline.calls if _mismatch(check, part) is None]
    inside = [part for pos, turn, part in matching if _in_window(check, pos, turn, low, high)]
    if not check.wanted:
        quotes = [part_text(part) for part in inside[:3]]
        evidence, found = _evidence(quotes, timeline.messages)
        if inside:
            reasoning = f"expected no call of {described}; the bot made {len(inside)}"
        else:
            reasoning = f"no call of {described} ({len(timeline.calls)} tool calls in the conversation)"
        return Verdict(
            **base,
            result="fail" if inside else "pass",
            reasoning=reasoning,
            evidence=evidence,
            evidence_verified=found,
        )
    least = 1 if check.at_least is None else check.at_least
    problems = []
    if len(inside) < least:
        near = [
            f"{part_text(part)} ({_mismatch(check, part) or 'outside the window'})"
            for _, _, part in timeline.calls
            if part.name == check.tool or check.tool == "*"
        ]
        problems.append(
            f"expected at least {least} call of {described}, found {len(inside)}"
            + (
                f"; the calls of {check.tool}: " + "; ".join(near[:3])
                if near
                else f"; {check.tool} was never called"
            )
        )
    if check.at_most is not None and len(matching) > check.at_most:
        problems.append(
            f"expected at most {plural(check.at_most, 'call')} of {described}, found {len(matching)}"
        )
    shown = inside if not problems else [p for _, _, p in timeline.calls if p.name == check.tool][:3]
    evidence, found = _evidence([part_text(part) for part in shown[:3]], timeline.messages)
    return Verdict(
        **base,
        result="fail" if problems else "pass",
        reasoning="; ".join(problems) or f"{len(inside)} call(s) of {described}",
        evidence=evidence,
        evidence_verified=found,
    )


def claim_made(rule: ClaimRule, record: ConversationRecord) -> bool:
    """Whether the bot says what the rule looks for anywhere in the conversation (True when the rule's
    regex hit its time limit, so the error verdict it writes says so)."""
    try:
        return bool(_claim_sentences(rule, record))
    except PatternTimeout:
        return True


def _claim_sentences(rule: ClaimRule, record: ConversationRecord) -> list[tuple[int, str]]:
    """(turn position, the sentence) of each time the bot says what the rule looks for. A default rule's
    pattern is compiled only for a text holding one of its words (config/claims.py: needed_words)."""
    words = needed_words(rule)
    pattern = None
    found = []
    for t, turn in enumerate(record.turns):
        if turn.role != "bot":
            continue
        for part in turn.parts:
            if not isinstance(part, TextPart):
                continue
            if words is not None and not any(word in folded(part.text) for word in words):
                continue  # the pattern cannot match a text without one of its words
            pattern = pattern or compile_pattern(rule.says, "says")
            for match in pattern.finditer(part.text):
                sentence = next(
                    (
                        s.group(0).strip()
                        for s in _SENTENCE.finditer(part.text)
                        if s.start() <= match.start() < s.end()
                    ),
                    match.group(0),
                )
                found.append((t, sentence or match.group(0)))
    return found


def _claim_verdict(
    record: ConversationRecord, rule: ClaimRule, timeline: _Timeline, judge_set_hash: str
) -> Verdict:
    base = _base(record, rule.id, rule.severity, judge_set_hash)
    claims = _claim_sentences(rule, record)
    if not claims:
        return Verdict(
            **base,
            result="not_applicable",
            reasoning=f"the bot never claims this (/{rule.says}/)",
        )
    backing = [(pos, part) for pos, _, part in timeline.calls if part.side == "bot" and rule.backs(part.name)]
    unbacked: list[tuple[str, list[ToolCallPart]]] = []
    backed_by: list[ToolCallPart] = []
    for turn_position, sentence in claims:
        before = [part for pos, part in backing if pos[0] <= turn_position]
        good = [part for part in before if part.error is None]
        if good:
            backed_by.append(good[-1])
        else:
            unbacked.append((sentence, before))
    if not unbacked:
        quotes = [claims[0][1], part_text(backed_by[0])]
        evidence, found = _evidence(quotes, timeline.messages)
        return Verdict(
            **base,
            result="pass",
            reasoning=f"the claim is backed by the call {part_text(backed_by[0])}",
            evidence=evidence,
            evidence_verified=found,
        )
    sentence, tried = unbacked[0]
    if tried:
        why = f"the only matching calls before it failed: {part_text(tried[-1])}"
    else:
        later = [part for pos, part in backing if pos[0] > claims[0][0]]
        why = "no matching tool call was made before it" + (
            f" (one came later: {part_text(later[0])})"
            if later
            else " (none in the whole conversation)"
            if timeline.calls
            else " (none in the whole conversation, which shows no tool call at all: nothing was booked, sent "
            "or set in motion)"
        )
    quotes = [sentence] + [part_text(part) for part in tried[-1:]]
    evidence, found = _evidence(quotes, timeline.messages)
    return Verdict(
        **base,
        result="fail",
        reasoning=f'the bot says "{sentence}" but {why}',
        evidence=evidence,
        evidence_verified=found,
    )


def tool_verdicts(
    record: ConversationRecord, checks: list[ToolCheck], context: ToolCheckContext, judge_set_hash: str
) -> list[Verdict]:
    """The suite's and the scenario's tool checks and the suite's claim rules, on one conversation."""
    timeline = _timeline(record, context)
    verdicts = []
    for check in checks:
        try:
            verdicts.append(_check_verdict(record, check, timeline, judge_set_hash))
        except PatternTimeout as exc:  # a user's regex that hit its time limit: neither a pass nor a fail
            base = _base(record, check.check_id, check.severity, judge_set_hash)
            verdicts.append(Verdict(**base, result="error", reasoning=str(exc)))
    wanted = set(context.claim_ids(record))
    for rule in context.claims:
        if rule.id not in wanted:
            continue
        try:
            verdicts.append(_claim_verdict(record, rule, timeline, judge_set_hash))
        except PatternTimeout as exc:
            base = _base(record, rule.id, rule.severity, judge_set_hash)
            verdicts.append(Verdict(**base, result="error", reasoning=str(exc)))
    return verdicts


def environment_verdicts(
    record: ConversationRecord, expected: dict[str, Any], judge_set_hash: str
) -> list[Verdict]:
    """Each path of `expected.environment` compared with the environment's final state."""
    verdicts = []
    state = record.environment_state
    for path, wanted in expected.items():
        base = _base(record, f"environment.{path}", "critical", judge_set_hash)
        base["category"] = "environment"
        found, actual = read_state_path(state or {}, str(path)) if state is not None else (False, None)
        if not found:
            reason = (
                "the conversation recorded no environment state"
                if state is None
                else f"the state has no {path}"
            )
            verdicts.append(
                Verdict(
                    **base,
                    result="fail",
                    expected=wanted,
                    reasoning=f"expected {path}={wanted!r}; {reason}",
                    evidence_verified=True,
                )
            )
            continue
        equal = _equal(actual, wanted)
        containers = isinstance(actual, dict | list) and isinstance(wanted, dict | list)
        differences = state_differences(actual, wanted, str(path)) if containers and not equal else []
        if differences:  # a mapping or list (a whole table): name where it differs, not all of it
            shown = "; ".join(differences[:_DIFFERENCES_SHOWN])
            more = len(differences) - _DIFFERENCES_SHOWN
            reasoning = (
                f"the final {path} differs from the expected one at {len(differences)} places: {shown}"
            )
            reasoning += f"; and {more} more" if more > 0 else ""
            quote = differences[0]
        elif equal and isinstance(wanted, dict | list):
            reasoning, quote = f"the final {path} equals the expected one", f"{path} as expected"
        else:
            reasoning, quote = (
                f"expected {path}={wanted!r}; the final state has {actual!r}",
                f"{path}={actual!r}",
            )
        verdicts.append(
            Verdict(
                **base,
                result="pass" if equal else "fail",
                expected=wanted,
                actual=actual,
                reasoning=reasoning,
                evidence=[Evidence(quote=quote, found=True)],
                evidence_verified=True,
            )
        )
    return verdicts


_DIFFERENCES_SHOWN = 5


def state_differences(actual: Any, wanted: Any, path: str) -> list[str]:
    """Where two mappings or lists differ, leaf by leaf (`reservations.EHGLP3.status is 'cancelled', expected
    None`), compared exactly as `==` compares them; empty when they are equal."""
    if isinstance(actual, dict) and isinstance(wanted, dict):
        out = [f"{path}.{key} is missing" for key in wanted if key not in actual]
        out += [f"{path}.{key} is not expected" for key in actual if key not in wanted]
        for key in wanted:
            if key in actual and actual[key] != wanted[key]:
                out += state_differences(actual[key], wanted[key], f"{path}.{key}")
        return out
    if isinstance(actual, list) and isinstance(wanted, list):
        if len(actual) != len(wanted):
            return [f"{path} has {len(actual)} items, expected {len(wanted)}"]
        out = []
        for index, (got, want) in enumerate(zip(actual, wanted, strict=True)):
            if got != want:
                out += state_differences(got, want, f"{path}[{index}]")
        return out
    return [f"{path} is {actual!r}, expected {wanted!r}"] if actual != wanted else []
