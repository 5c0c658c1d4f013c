"""A deterministic, rule-based health triage bot: the example "bot under test" for the triage demo suite.

It greets, works out the main complaint from keywords, asks a few follow-up questions picked for that
complaint (age, how long, and the warning signs in `examples.triage_rules`), then gives a triage level
(`self_care` < `gp` < `urgent` < `emergency`) with plain-words advice, and stops asking questions.
Its decision is exposed by `final_state()` as `{"triage_level": ...}`.

Known flaw, kept on purpose so the demo has something to find: for chest pain the bot never asks whether
the pain spreads to the arm, jaw or back. It asks only about shortness of breath, so a person with chest
pressure radiating to the left arm who is not breathless, and who does not mention the arm unprompted,
is triaged `urgent` instead of `emergency` (under-triage). The `chest-pain-red-flags` criterion and the
outcome check both catch it. `make_fixed_bot` is the same bot with the fix (`triage_rules_fixed.yaml`),
which the matrix demo (`scenarios/triage/matrix.yaml`) compares with this one.

This is a demonstration of the python adapter contract, not a medical device.
"""

from __future__ import annotations

__all__ = ["TriageBot", "make_bot", "make_fixed_bot"]

import re
from typing import Any

from examples.triage_rules import (
    LEVELS,
    Complaint,
    Flag,
    Question,
    Rules,
    find_flags,
    is_yes,
    load_fixed_rules,
    load_rules,
    normalise,
    parse_age,
    parse_duration_days,
)

GREETING = (
    "Hello, I'm an automated triage assistant. I'll ask a few quick questions and then tell you where to "
    "get care."
)
NOT_A_DOCTOR = "I can't diagnose conditions or prescribe medicines."
ASK_COMPLAINT = (
    "What is the main problem you would like help with today? For example pain, a rash, a cough, a fever, "
    "an injury, or how you are feeling or sleeping."
)
SCOPE_NOTE = (
    "I can't diagnose conditions, prescribe medicines or change doses; a doctor, nurse or pharmacist has to "
    "do that. What I can do is help you decide where to get care."
)
_OUT_OF_SCOPE = re.compile(
    r"prescri|antibiotic|double (my|the) (dose|tablets?)|increase (my|the) (dose|tablets?)|what dose|"
    r"how (many|much) (mg|tablets|pills)|diagnos|what (is it|do i have|have i got|is wrong with)|"
    r"is (it|this) (a|an) \w+( \w+)?\?"
)
_CHILD = re.compile(
    r"\b(my|our|her|his) (son|daughter|baby|child|kid|toddler|boy|girl|little one)\b|\btoddler\b|\bbaby\b|"
    r"\binfant\b|\bmonths? old\b"
)
_MALE = re.compile(
    r"\b(im|i am) (a )?(man|male|guy|bloke|dad|father)\b|\bmy (husband|son|dad|father|brother|boyfriend)\b"
)
CRISIS_ADVICE = (
    "Thank you for telling me. I'm really sorry you're feeling like this, and I'm glad you said it. Because "
    "you're having thoughts of harming yourself or ending your life, please get help now: call 999 or go to "
    "A&E straight away. If you'd like to talk to someone first, you can call Samaritans free on 116 123, any "
    "time. If you can, stay with someone you trust and keep away from anything you could use to hurt "
    "yourself. You don't have to go through this alone."
)
_WHERE = {
    "emergency": "call 999 or go to A&E now",
    "urgent": "call NHS 111 or go to an urgent treatment centre today",
    "gp": "book an appointment with your GP in the next few days",
    "self_care": "look after this at home and ask a pharmacist if you need to",
}
_GENERIC_WATCH = {
    "urgent": "you get worse while you wait, for example you feel very unwell, faint or confused, or find it "
    "hard to breathe",
    "gp": "it gets a lot worse or you notice new symptoms",
}


class TriageBot:
    """One conversation with the rule-based triage bot; make a fresh one per conversation."""

    def __init__(self, rules: Rules | None = None) -> None:
        self.rules = rules or load_rules()
        self.user_texts: list[str] = []
        self.complaint: Complaint | None = None
        self.asked: list[str] = []
        self.pending: Question | None = None
        self.age: float | None = None
        self.duration_days: float | None = None
        self.flags: list[tuple[str, str]] = []  # (level, reason) found so far
        self.level: str | None = None
        self.reason = ""
        self._complaint_prompts = 0

    # The adapter contract: send() returns str | list[str] | Reply. This example returns list[str] and
    # reports its decision through final_state(); a bot can also return
    # simulator.bots.Reply(messages, handed_over=..., closed=..., state=...) to end the conversation itself.
    def send(self, text: str) -> list[str]:
        """Take one user message and return the bot's reply messages."""
        msg = normalise(text)
        first_turn = not self.user_texts
        self.user_texts.append(msg)
        out_of_scope = bool(_OUT_OF_SCOPE.search(msg))
        out = [f"{GREETING} {SCOPE_NOTE if out_of_scope else NOT_A_DOCTOR}"] if first_turn else []
        if out_of_scope and not first_turn:
            out.append(SCOPE_NOTE)
        if self.level is not None:
            return out + self._after_decision(msg)

        if self.complaint is None or self.complaint is self.rules.general:
            detected = next((c for c in self.rules.complaints if c.matches(" ".join(self.user_texts))), None)
            if detected is not None:
                self.complaint = detected
                for earlier in self.user_texts[:-1]:  # re-read what was said before we knew the complaint
                    self._scan(earlier)
        self._read_answer(msg)
        if self.complaint is None:
            if self._top_flag() != "emergency" and self._complaint_prompts < 2:
                self._complaint_prompts += 1
                return [*out, ASK_COMPLAINT]
            self.complaint = self.rules.general

        question = None if self._top_flag() == "emergency" else self._next_question()
        if question is None:
            return out + self._decide()
        self.pending = question
        self.asked.append(question.key)
        return [*out, self._question_text(question)]

    def final_state(self) -> dict[str, Any] | None:
        """The decision once made: {"triage_level", "complaint", "reason"}; None before that."""
        if self.level is None:
            return None
        name = self.complaint.name if self.complaint else None
        return {"triage_level": self.level, "complaint": name, "reason": self.reason}

    # --- reading the user -------------------------------------------------------------------------
    def _watched_flags(self) -> tuple[Flag, ...]:
        own = self.complaint.flags if self.complaint else ()
        return self.rules.global_flags + own

    def _scan(self, msg: str) -> None:
        for flag in find_flags(msg, self._watched_flags()):
            if (flag.level, flag.reason) not in self.flags:
                self.flags.append((flag.level, flag.reason))

    def _read_answer(self, msg: str) -> None:
        """Update age, duration and red flags from one user message (and the question it answers)."""
        answering, self.pending = self.pending, None
        if self.age is None:
            self.age = parse_age(msg, answering_age=answering is not None and answering.key == "age")
        if self.duration_days is None:
            self.duration_days = parse_duration_days(msg)
        self._scan(msg)
        yes = answering.if_yes if answering is not None else None
        if yes is not None and is_yes(msg) and (yes.level, yes.reason) not in self.flags:
            self.flags.append((yes.level, yes.reason))

    def _top_flag(self) -> str | None:
        return max((lvl for lvl, _ in self.flags), key=LEVELS.index, default=None)

    # --- choosing the next question ------------------------------------------------------------------
    def _condition(self, name: str | None) -> bool:
        text = " ".join(self.user_texts)
        if name == "pregnancy_possible":
            too_young_or_old = self.age is not None and not 11 <= self.age <= 55
            return not (too_young_or_old or _MALE.search(text) or _CHILD.search(text))
        if name == "headache":
            return "headache" in text or "migraine" in text
        if name == "rash":
            return "rash" in text or "spots" in text
        return True

    def _next_question(self) -> Question | None:
        assert self.complaint is not None
        shared = self.rules.questions
        for q in (shared["age"], *self.complaint.questions, shared["duration"]):
            if q.key in self.asked or not self._condition(q.only_if):
                continue
            if (q.key == "age" and self.age is not None) or (
                q.key == "duration" and self.duration_days is not None
            ):
                continue
            return q
        return None

    def _question_text(self, q: Question) -> str:
        if q.key == "age" and _CHILD.search(" ".join(self.user_texts)):
            return "How old is your child?"
        return q.text

    # --- the decision --------------------------------------------------------------------------------
    def _decide(self) -> list[str]:
        assert self.complaint is not None
        c = self.complaint
        level: str = c.baseline
        reason = c.reason
        days = self.duration_days
        if (
            c.gp_after_days is not None
            and days is not None
            and days >= c.gp_after_days
            and level == "self_care"
        ):
            level, reason = "gp", f"{c.reason} lasting {round(days / 7)} weeks or more"
        if c.name == "child_fever" and self.age is not None and self.age < 0.25:
            level, reason = "urgent", "a fever in a baby under 3 months old"
        for flag_level, flag_reason in self.flags:
            if LEVELS.index(flag_level) > LEVELS.index(level):
                level, reason = flag_level, flag_reason
        self.level, self.reason = level, reason
        return [self._advice(level, reason)]

    def _advice(self, level: str, reason: str) -> str:
        assert self.complaint is not None
        c = self.complaint
        if level == "emergency" and ("ending your life" in reason or "harming yourself" in reason):
            return CRISIS_ADVICE
        said = f"From what you've told me ({reason})"
        if level == "emergency":
            note = f" {c.emergency_note}" if c.emergency_note else ""
            return (
                f"{said}, this needs emergency care now. Call 999 now, or go to A&E (the emergency "
                f"department) straight away.{note} Don't wait to see if it gets better."
            )
        watch_for = c.watch_for if level in (c.baseline, "self_care") else _GENERIC_WATCH[level]
        if level == "urgent":
            return (
                f"{said}, you should be seen by a doctor or nurse today. Call NHS 111 now, or go to an "
                f"urgent treatment centre in the next few hours. If {watch_for}, call 999."
            )
        if level == "gp":
            return (
                f"{said}, please book an appointment with your GP (family doctor) in the next few days. If "
                f"{watch_for}, call NHS 111 for advice the same day, or 999 in an emergency."
            )
        home = f" {c.home_advice}" if c.home_advice else ""
        return (
            f"{said}, this can usually be looked after at home.{home} If {watch_for}, contact your GP or "
            "call NHS 111."
        )

    def _after_decision(self, msg: str) -> list[str]:
        """After the advice: re-escalate on a new red flag, otherwise repeat where to go."""
        assert self.level is not None
        self._scan(msg)
        top = self._top_flag()
        if top is not None and LEVELS.index(top) > LEVELS.index(self.level):
            return ["Thank you, that changes my advice.", *self._decide()]
        return [
            f"My advice stays the same: {_WHERE[self.level]}. If anything changes or you are worried, call "
            "NHS 111, or 999 in an emergency. Take care."
        ]


def make_bot() -> TriageBot:
    """The factory the suite names (`examples.triage_bot:make_bot`): a fresh bot per conversation."""
    return TriageBot()


def make_fixed_bot() -> TriageBot:
    """The same bot with the chest-pain flaw fixed (`triage_rules_fixed.yaml`): the matrix demo's variant."""
    return TriageBot(load_fixed_rules())
