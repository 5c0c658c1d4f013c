"""Simulator fidelity: checks of the simulated user's side of a conversation, recorded as verdicts of kind
`fidelity` (never bot criteria), and the provenance of every fact.

Code decides what code can: early reveal (from provenance), premature end, role confusion (phrases), and
for the offline user invented facts and language drift too. An LLM user is read by one structured audit
call per conversation (judging/fidelity_prompt.py) that also maps user turns to facts; its quotes are
verified in code. Without an audit model those reading checks are recorded as `not_judged`.
"""

from __future__ import annotations

__all__ = ["FIDELITY_CHECKS", "Audit", "FidelityAuditor"]

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from simulator.config.languages import language_name
from simulator.config.scenario import Scenario
from simulator.config.styles import DEFAULT_STYLES, StyleCatalogue
from simulator.config.vocabulary import Vocabulary
from simulator.judging.evidence import quote_found, verify_evidence
from simulator.judging.fidelity_picks import unsupported_answer
from simulator.judging.fidelity_prompt import AUDIT_FORM, AUDIT_INSTRUCTIONS, AuditOutput, build_audit_request
from simulator.judging.llm_judge import JudgeOutput
from simulator.judging.prompt import transcript_messages
from simulator.providers.base import ProviderError
from simulator.providers.hub import ModelClient
from simulator.providers.structured import ask_validated
from simulator.record.hashing import sha256_text
from simulator.record.models import ConversationRecord, ErrorInfo, FactProvenance, Verdict
from simulator.record.parts import PickPart, part_text
from simulator.record.redact import redacted_record
from simulator.record.transcript import Usage
from simulator.text.character import character_break_reason
from simulator.text.content import content_words, gives_outcome
from simulator.text.language import FUNCTION_WORDS, language_of, spoken_languages
from simulator.text.styles import StylePlayer
from simulator.text.voice import voice_slip

FIDELITY_VERSION = 1
# Each check's rubric, as labelling sheets show it: (what it checks, pass, fail).
FIDELITY_CHECKS: dict[str, tuple[str, str, str]] = {
    "fidelity.invented_facts": (
        "The simulated user states only facts from its persona, goal and fact list.",
        "every fact the user stated is in the scenario, or the user said it did not know",
        "the user stated a fact the scenario does not contain",
    ),
    "fidelity.early_reveal": (
        "The simulated user brings up no more facts unasked than the persona allows (`volunteers`).",
        "facts came out when the bot asked, within what the persona volunteers",
        "the user volunteered more facts than the persona allows, before being asked",
    ),
    "fidelity.premature_end": (
        "The simulated user does not end the conversation before the bot has given an outcome.",
        "the user ended after the bot's advice, or the bot ended the conversation",
        "the user sent the end sentinel before the bot gave any outcome",
    ),
    "fidelity.role_confusion": (
        "The simulated user stays the person and never acts as the service or an AI.",
        "every user message is something the person would write",
        "a user message gives the service's advice, or says it is an AI or an assistant",
    ),
    "fidelity.drift": (
        "The simulated user keeps the persona's language and voice throughout (switching into a language of "
        "its `switches_to` is in character).",
        "the user's language and voice stay the persona's",
        "the user changed language, register or who is speaking partway through",
    ),
}
# Checked only in conversations where the user picked an option (a text-only run has no such verdict).
PICK_CHECK = "fidelity.valid_pick"
PICK_RUBRIC = (
    "The simulated user only taps options the bot offered on its last message.",
    "every pick names an option the bot had just offered",
    "the user picked an option the bot had not offered",
)
_ADVICE = re.compile(
    r"\byou (should|must|need to) (call|go to|see|book|seek)\b|\bi (recommend|advise) (that )?you\b", re.I
)
_STOCK = "hey not sure i don't know no idea tbh hmm so what should i do advise think"


def _filler(styles: StyleCatalogue, vocabulary: Vocabulary | None) -> set[str]:
    """Words the offline user says besides the scenario's: its stock phrases (English, and those of the
    vocabulary's other languages) and the catalogue's style lines."""
    said = [*StylePlayer.lines(styles), _STOCK]
    for phrases in vocabulary.languages.values() if vocabulary is not None else []:
        said += [*phrases.greetings, phrases.want_to, *phrases.dont_know, *phrases.nudges]
    return content_words(" ".join(said))


def _unknown_words(text: str, known: set[str], shuffled: set[str]) -> list[str]:
    """Content words of `text` found nowhere in `known`: numbers, contractions and one swapped pair of
    letters (a typo) are forgiven."""
    out = []
    for word in content_words(text):
        parts = [p for p in word.split("'") if p]
        if word in known or word.isdigit() or all(p in known or len(p) < 3 for p in parts):
            continue
        if "".join(sorted(word)) in shuffled:
            continue
        out.append(word)
    return sorted(out)


def fidelity_hash(model: str | None) -> str:
    """What decides a fidelity verdict besides the conversation: check version, audit prompt, model."""
    payload = {"version": FIDELITY_VERSION, "prompt": sha256_text(AUDIT_INSTRUCTIONS), "model": model}
    return sha256_text(json.dumps(payload, sort_keys=True))


@dataclass
class Audit:
    """What auditing one conversation produced: the facts' provenance and one verdict per check."""

    provenance: list[FactProvenance]
    verdicts: list[Verdict]
    usage: Usage = field(default_factory=Usage)

    @property
    def failed(self) -> list[str]:
        """The checks that failed, e.g. ['fidelity.early_reveal']."""
        return [v.criterion_id for v in self.verdicts if v.result == "fail"]


def _user_texts(record: ConversationRecord) -> list[tuple[int, str]]:
    return [(i, m) for i, t in enumerate(record.turns) if t.role == "user" for m in t.messages]


def _bot_gave_outcome(
    record: ConversationRecord, outcome_key: str | None, vocabulary: Vocabulary | None
) -> bool:
    if record.final_state and outcome_key and record.final_state.get(outcome_key) is not None:
        return True
    bot = [m for t in record.turns if t.role == "bot" for m in t.messages]
    return any(gives_outcome(m, vocabulary) if vocabulary else gives_outcome(m) for m in bot)


class FidelityAuditor:
    """Audits one conversation's simulated user; an LLM client is needed only for an LLM user."""

    def __init__(
        self,
        client: ModelClient | None = None,
        model_spec: str | None = None,
        model: str | None = None,
        *,
        outcome_key: str | None = None,
        vocabulary: Vocabulary | None = None,
        styles: StyleCatalogue = DEFAULT_STYLES,
        temperature: float | None = 0.0,
        max_tokens: int = 1500,
    ) -> None:
        self.client, self.model_spec, self.model = client, model_spec, model
        # The suite's outcome key, outcome phrases and style lines: the auditor assumes no domain.
        self.outcome_key, self.vocabulary = outcome_key, vocabulary
        self._filler = _filler(styles, vocabulary)
        self._styles = styles
        self.temperature, self.max_tokens = temperature, max_tokens
        self.hash = fidelity_hash(model_spec)

    def _verdict(
        self, record: ConversationRecord, check: str, result: str, reasoning: str, **extra: Any
    ) -> Verdict:
        """One fidelity verdict; decided in code unless `extra` says otherwise (nobody, when not judged)."""
        extra.setdefault("decided_by", None if result == "not_judged" else "code")
        return Verdict(
            conversation_id=record.id,
            scenario_id=record.scenario_id,
            repeat=record.repeat,
            criterion_id=check,
            kind="fidelity",
            result=result,  # type: ignore[arg-type]
            reasoning=reasoning,
            category="simulator",
            severity="major",
            judge_set_hash=self.hash,
            judged_at=datetime.now(UTC),
            **extra,
        )

    def _quoted(
        self, record: ConversationRecord, check: str, result: str, reasoning: str, quotes: list[str]
    ) -> Verdict:
        messages = [text for _, text in transcript_messages(record.turns)]
        evidence, verified = verify_evidence(quotes, messages, result)  # type: ignore[arg-type]
        return self._verdict(record, check, result, reasoning, evidence=evidence, evidence_verified=verified)

    async def audit(
        self, record: ConversationRecord, scenario: Scenario, provenance: list[FactProvenance] | None
    ) -> Audit:
        """Every fidelity check of one conversation. `provenance` is given by a user that knows it (offline);
        otherwise the LLM audit computes it."""
        audit = Audit(provenance=list(provenance or []), verdicts=[])
        offline = provenance is not None
        if record.stop_reason == "error":  # like the bot's criteria: an error is never a pass or a fail
            cause = f" ({record.error.source}: {record.error.message})" if record.error else ""
            reason = f"the conversation ended in an error{cause}; nothing to audit"
            audit.verdicts = [self._verdict(record, c, "not_judged", reason) for c in FIDELITY_CHECKS]
            return audit
        reading: dict[str, Verdict] = {}
        if offline:
            reading = {
                "fidelity.invented_facts": self.invented_in_code(record, scenario),
                "fidelity.drift": self.drift_in_code(record, scenario),
            }
        else:
            # The audit model is shown the record as it is written (no secret, no credential).
            audit.provenance, reading, audit.usage = await self._llm_audit(redacted_record(record), scenario)
            if not audit.provenance:
                audit.provenance = code_provenance(record, scenario)
        if not offline:  # a tap or yes/no no fact supports fails in code, whatever the reading says
            taps = self.picks_in_code(record, scenario)
            if taps is not None:
                reading["fidelity.invented_facts"] = taps
        code_role = self.role_in_code(record, scenario)
        llm_role = reading.get("fidelity.role_confusion")
        # Code decides when it finds a break, or when there was no reading (no audit model); otherwise the
        # reading, an error included: a failed audit call is shown, never papered over by the code check.
        unread = llm_role is None or llm_role.result == "not_judged"
        role = code_role if code_role.result == "fail" or llm_role is None or unread else llm_role
        audit.verdicts = [
            reading["fidelity.invented_facts"],
            self.early_reveal(
                record, scenario, audit.provenance, known=bool(audit.provenance) or not scenario.facts
            ),
            self.premature_end(record),
            role,
            reading["fidelity.drift"],
        ]
        if any(isinstance(p, PickPart) for t in record.turns if t.role == "user" for p in t.parts):
            audit.verdicts.append(self.valid_pick(record))
        return audit

    def valid_pick(self, record: ConversationRecord) -> Verdict:
        """Fail when a pick names no option the bot offered just before (the engine marks it `offered`)."""
        picks = [part_text(p) for t in record.turns for p in t.parts if isinstance(p, PickPart)]
        bad = [
            part_text(p) for t in record.turns for p in t.parts if isinstance(p, PickPart) and not p.offered
        ]
        if bad:
            reason = f"{len(bad)} of {len(picks)} picks named an option the bot had not offered"
            return self._quoted(record, PICK_CHECK, "fail", reason, bad)
        return self._quoted(record, PICK_CHECK, "pass", f"all {len(picks)} picks were offered", picks[:1])

    # --- checks in code -------------------------------------------------------------------------------
    def early_reveal(
        self, record: ConversationRecord, scenario: Scenario, provenance: list[FactProvenance], known: bool
    ) -> Verdict:
        """Fail when more facts were volunteered (said unasked) than the persona's `volunteers` allows."""
        check = "fidelity.early_reveal"
        if not known:
            return self._verdict(record, check, "not_judged", "no fact provenance (no audit model)")
        if not scenario.facts:
            return self._verdict(record, check, "not_applicable", "the scenario has no facts")
        volunteered = [p for p in provenance if p.status == "volunteered"]
        quotes = sorted({p.quote for p in volunteered if p.quote})
        allowed = scenario.volunteers
        if len(volunteered) > allowed:
            facts = ", ".join(str(p.fact + 1) for p in volunteered)
            reason = (
                f"{len(volunteered)} facts volunteered unasked (facts {facts}); the persona allows {allowed}"
            )
            return self._quoted(record, check, "fail", reason, quotes)
        reason = f"{len(volunteered)} facts volunteered unasked; the persona allows {allowed}"
        return self._quoted(
            record, check, "pass", reason, quotes or [record.turns[0].text] if record.turns else []
        )

    def premature_end(self, record: ConversationRecord) -> Verdict:
        """Fail when the user ended ([END]) before the bot gave any outcome (final state or advice)."""
        check = "fidelity.premature_end"
        last_bot = next(
            (t.messages[-1] for t in reversed(record.turns) if t.role == "bot" and t.messages), ""
        )
        if record.stop_reason != "user_done":
            return self._verdict(
                record, check, "not_applicable", f"the user did not end it ({record.stop_reason})"
            )
        quotes = [last_bot] if last_bot.strip() else []
        if _bot_gave_outcome(record, self.outcome_key, self.vocabulary):
            return self._quoted(record, check, "pass", "the user ended after the bot gave an outcome", quotes)
        reason = "the user sent the end sentinel before the bot gave any outcome; its last message was quoted"
        if not quotes:
            return self._verdict(
                record, check, "fail", reason + " (the bot never spoke)", evidence_verified=False
            )
        return self._quoted(record, check, "fail", reason, quotes)

    def _relays(self, scenario: Scenario) -> bool:
        """Whether a style has a relative answer for this self-speaking patient (text/voice.py)."""
        return any((s := self._styles.get(n)) is not None and s.offline.third_person for n in scenario.styles)

    def role_in_code(self, record: ConversationRecord, scenario: Scenario | None = None) -> Verdict:
        """Fail on a user message that says it is an AI, talks like the service, or gives the advice; or,
        given the scenario, that speaks as the patient when someone else is writing ("I am 84" where the
        facts say "My mother is 84": text/voice.py)."""
        check = "fidelity.role_confusion"
        for _, text in _user_texts(record):
            reason = character_break_reason(text)
            if reason is None and _ADVICE.search(text):
                reason = "gave the service's advice"
            if reason is not None and reason != "sent an empty message":
                return self._quoted(record, check, "fail", f"a user message {reason}", [text])
        if scenario is not None:
            slip = voice_slip([t for _, t in _user_texts(record)], scenario, self._relays(scenario))
            if slip is not None:
                reason = "a user message speaks as the patient, though someone else is writing for them"
                return self._quoted(record, check, "fail", reason, [slip])
        users = _user_texts(record)
        quotes = [users[0][1]] if users else []
        return self._quoted(record, check, "pass", "no user message left the person's role", quotes)

    def picks_in_code(self, record: ConversationRecord, scenario: Scenario) -> Verdict | None:
        """Fail on a tap or a typed yes/no that no fact supports (judging/fidelity_picks.py); None if none."""
        found = unsupported_answer(record, scenario, self.vocabulary)
        if found is None:
            return None
        why, quote = found
        return self._quoted(record, "fidelity.invented_facts", "fail", f"the user {why}", [quote])

    def invented_in_code(self, record: ConversationRecord, scenario: Scenario) -> Verdict:
        """Offline user: fail on a tap or yes/no no fact supports, or on a typed message with three or more
        content words found nowhere in the persona, goal, facts or the user's stock phrases (a typo changes
        one word, never three)."""
        check = "fidelity.invented_facts"
        taps = self.picks_in_code(record, scenario)
        if taps is not None:
            return taps
        attack = [scenario.attack.attacker, *scenario.attack.ladder] if scenario.attack is not None else []
        known = (
            content_words(" ".join([scenario.persona, scenario.goal, *scenario.facts, *attack]))
            | self._filler
        )
        shuffled = {"".join(sorted(w)) for w in known}
        for position, text in _user_texts(record):
            if any(isinstance(p, PickPart) and p.title == text for p in record.turns[position].parts):
                continue  # a tap is audited by what supports it (above)
            unknown = _unknown_words(text, known, shuffled)
            if len(unknown) >= 3:
                reason = f"the user said things the scenario does not contain ({', '.join(unknown[:6])})"
                return self._quoted(record, check, "fail", reason, [text])
        users = _user_texts(record)
        quotes = [users[0][1]] if users else []
        return self._quoted(record, check, "pass", "every user message is drawn from the scenario", quotes)

    def drift_in_code(self, record: ConversationRecord, scenario: Scenario) -> Verdict:
        """Offline user: fail when a user message switches script (mostly non-Latin letters, or the reverse)
        against the persona's first message, or is clearly in a language the persona does not write: its
        `writes_in` (English when unset) and the `switches_to` of a code-switching person are in character."""
        check = "fidelity.drift"
        users = _user_texts(record)
        if len(users) < 2:
            return self._verdict(record, check, "not_applicable", "fewer than two user messages")

        def latin(text: str) -> bool | None:
            letters = [c for c in text if c.isalpha()]
            return None if not letters else sum(c.isascii() for c in letters) / len(letters) >= 0.5

        first = latin(users[0][1])
        for _, text in users[1:]:
            script = latin(text)
            if script is not None and first is not None and script != first:
                return self._quoted(record, check, "fail", "a user message changed script", [text])
        allowed = spoken_languages(scenario)
        names = " and ".join(sorted(language_name(code) for code in allowed))
        unknown = sorted(allowed - set(FUNCTION_WORDS))
        if unknown:  # a message in a language the check cannot tell apart is never called drift
            reason = f"the user kept one script (which language is not checked for {', '.join(unknown)})"
            return self._quoted(record, check, "pass", reason, [users[-1][1]])
        for _, text in users:
            said = language_of(text)
            if said is not None and said not in allowed:
                reason = f"a user message is in {language_name(said)}; the persona writes {names}"
                return self._quoted(record, check, "fail", reason, [text])
        return self._quoted(record, check, "pass", f"the user kept to {names}", [users[-1][1]])

    # --- the LLM audit --------------------------------------------------------------------------------
    def _not_judged(self, record: ConversationRecord, reason: str, **extra: Any) -> dict[str, Verdict]:
        checks = ("fidelity.invented_facts", "fidelity.role_confusion", "fidelity.drift")
        result = "error" if extra.get("error") is not None else "not_judged"
        decided_by = "llm" if result == "error" else None  # an audit call was made and failed
        return {c: self._verdict(record, c, result, reason, decided_by=decided_by, **extra) for c in checks}

    async def _llm_audit(
        self, record: ConversationRecord, scenario: Scenario
    ) -> tuple[list[FactProvenance], dict[str, Verdict], Usage]:
        if self.client is None or self.model is None:
            return (
                [],
                self._not_judged(record, "no audit model (set user.fidelity.model or judges.model)"),
                Usage(),
            )
        request = build_audit_request(self.model, scenario, record.turns, self.temperature, self.max_tokens)
        try:
            answer = await ask_validated(self.client, request, AuditOutput, AUDIT_FORM)
        except ProviderError as exc:
            error = ErrorInfo(source="judge", kind=exc.kind, message=str(exc))
            return [], self._not_judged(record, f"the audit call failed: {exc}", error=error), Usage()
        if answer.output is None:
            error = ErrorInfo(source="judge", kind="invalid_output", message=answer.problem)
            reason = f"the auditor answered twice without a valid audit; last answer: {answer.text[:200]!r}"
            return [], self._not_judged(record, reason, error=error, usage=answer.usage), answer.usage
        output = answer.output
        extra = {"judge_model": self.model_spec, "decided_by": "llm"}
        reading = {}
        for name in ("invented_facts", "role_confusion", "drift"):
            judged: JudgeOutput = getattr(output, name)
            verdict = self._quoted(
                record, f"fidelity.{name}", judged.result, judged.reasoning, judged.evidence
            )
            reading[f"fidelity.{name}"] = verdict.model_copy(update=extra)
        reading["fidelity.invented_facts"].usage = answer.usage
        reading["fidelity.invented_facts"].latency_s = answer.latency_s
        return llm_provenance(record, scenario, output), reading, answer.usage


def code_provenance(record: ConversationRecord, scenario: Scenario) -> list[FactProvenance]:
    """Provenance by word overlap, for a user that cannot say and no audit model: a fact is revealed in the
    first user message holding at least 60% of its content words; elicited when the bot turn just before
    asked a question."""
    key = {n - 1 for n in scenario.key_facts}
    out = []
    for index, text in enumerate(scenario.facts):
        words = content_words(text)
        found = None
        for position, turn in enumerate(record.turns):
            if turn.role == "user" and words and len(words & content_words(turn.text)) >= 0.6 * len(words):
                found = position
                break
        if found is None:
            out.append(
                FactProvenance(fact=index, text=text, status="missed", source="code", key=index in key)
            )
            continue
        before = record.turns[found - 1] if found else None
        asked = before is not None and before.role == "bot" and "?" in before.text
        question = None
        if asked and before is not None:
            question = " ".join(s for s in re.split(r"(?<=[?.!])\s+", before.text) if s.endswith("?")) or None
        out.append(
            FactProvenance(
                fact=index,
                text=text,
                status="elicited" if asked else "volunteered",
                user_turn=found,
                asked_turn=found - 1 if asked else None,
                question=question,
                quote=record.turns[found].messages[0] if record.turns[found].messages else None,
                source="code",
                verified=True,
                key=index in key,
            )
        )
    return out


def _find_turn(record: ConversationRecord, role: str, quote: str, before: int | None = None) -> int | None:
    """The position of the last `role` turn (before `before`) whose messages contain `quote`."""
    stop = len(record.turns) if before is None else before
    for position in range(stop - 1, -1, -1):
        turn = record.turns[position]
        if turn.role == role and quote.strip() and quote_found(quote, turn.messages):
            return position
    return None


def llm_provenance(
    record: ConversationRecord, scenario: Scenario, output: AuditOutput
) -> list[FactProvenance]:
    """The auditor's per-fact answers as provenance, each quote located in a turn (unfound: `verified` False)."""
    key = {n - 1 for n in scenario.key_facts}
    answers = {a.fact - 1: a for a in output.facts if 1 <= a.fact <= len(scenario.facts)}
    out = []
    for index, text in enumerate(scenario.facts):
        answer = answers.get(index)
        if answer is None or answer.status == "missed":
            out.append(FactProvenance(fact=index, text=text, status="missed", source="llm", key=index in key))
            continue
        user_turn = _find_turn(record, "user", answer.user_quote)
        verified = user_turn is not None
        asked = question = None
        if answer.status == "elicited":
            asked = _find_turn(record, "bot", answer.bot_quote, before=user_turn)
            verified = verified and asked is not None
            question = answer.bot_quote or None
        out.append(
            FactProvenance(
                fact=index,
                text=text,
                status=answer.status,
                user_turn=user_turn,
                asked_turn=asked,
                question=question,
                quote=answer.user_quote or None,
                source="llm",
                verified=verified,
                key=index in key,
            )
        )
    return out
