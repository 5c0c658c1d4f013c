"""Who is speaking: the person writing (`speaker`: self, parent, relative, carer) and the voice every message
keeps, facts included.

A scenario written for a patient writing about themselves has its facts in the first person ("I am 52");
one written for someone writing on another's behalf has them in the writer's voice ("My mother is 84", "He is
2 years old") and they are said as written: never rewritten into "I am 84". Only the goal, which authors
write about the writer in the third person ("whether she can give her toddler..."), is rewritten, and only the
writer's own pronouns (known from the persona: "31-year-old mother"), never the patient's. A style that
makes a relative answer for a self-speaking patient (`third_person`) turns the patient's "I" into "they".

`voice_slip` finds the opposite in any simulated user's messages: a statement about the patient made in the
first person by someone writing on their behalf ("I am 84" where the facts say "she is 84"); the fidelity
role check fails on it, with the quote.
"""

from __future__ import annotations

__all__ = ["Voice", "first_person", "third_person", "voice_slip"]

import re
from collections.abc import Iterable

from simulator.config.scenario import Scenario
from simulator.users.words import CHAT_WORDS

_RELATIONS = (
    r"mum|mummy|mother|mom|dad|daddy|father|son|daughter|child|kid|toddler|baby|boy|girl|husband|wife|partner|"
    r"gran|granny|grandma|grandmother|grandad|grandpa|grandfather|nan|nana|brother|sister|aunt|uncle|"
    r"patient|client|resident"
)
_ON_BEHALF = re.compile(
    rf"\bon behalf of\b|\b(writing|asking|messaging|typing|texting|worried) (about|for) (her|his|their|my|a|an) "
    rf"(\S+ )?({_RELATIONS})\b",
    re.I,
)
_CARER = re.compile(r"\b(carer|caregiver|care worker|support worker|care assistant)\b", re.I)
_PARENT = re.compile(
    r"\b(mother|father|mum|dad|parent|mom)\b[^.]*\b(son|daughter|child|toddler|baby|kid|boy|girl)\b"
)
_FEMALE = re.compile(
    r"\b(woman|mother|mum|mom|wife|daughter|girl|lady|grandmother|sister|aunt|she|her)\b", re.I
)
_MALE = re.compile(r"\b(man|father|dad|husband|son|boy|grandfather|brother|uncle|he|his|him)\b", re.I)
_SHE = re.compile(r"\b(she|her|herself)\b", re.I)
_HE = re.compile(r"\b(he|his|him|himself)\b", re.I)
_THIRD_VERB = re.compile(r"\b(he|she) ([a-z]+s)\b", re.I)
_NOT_VERBS = ("is", "was", "has", "does", "always", "never", "also", "just", "still", "thinks")


def _first_person_of(pronoun: str, text: str) -> str:
    """`text` with one pronoun's forms (he or she) in the first person ("she needs" -> "I need")."""

    def deconjugate(match: re.Match[str]) -> str:
        if match.group(1).lower() != pronoun or match.group(2).lower() in _NOT_VERBS:
            return match.group(0)
        verb = match.group(2)
        return "I " + (verb[:-2] if re.search(r"(o|sh|ch|ss|x)es$", verb) else verb[:-1])

    text = _THIRD_VERB.sub(deconjugate, text)
    for verb, said in (("is", "I am"), ("has", "I have"), ("was", "I was"), ("does", "I do")):
        text = re.sub(rf"\b{pronoun} {verb}\b", said, text, flags=re.I)
    text = re.sub(rf"\b{pronoun}\b", "I", text, flags=re.I)
    if pronoun == "he":
        text = re.sub(r"\bhis\b", "my", text, flags=re.I)
        text = re.sub(r"\bhim(self)?\b", "me", text, flags=re.I)
    else:
        text = re.sub(r"\bherself\b", "me", text, flags=re.I)
        text = re.sub(r"\bher\b", "my", text, flags=re.I)
    return re.sub(r"\bwants\b", "want", text, flags=re.I)


def first_person(text: str) -> str:
    """Third-person persona text of a patient writing for themselves, as they would say it ("he needs" ->
    "I need")."""
    return _first_person_of("she", _first_person_of("he", text))


_THIRD = [
    (re.compile(r"\bI am\b|\bI'm\b", re.I), "they are"),
    (re.compile(r"\bI was\b", re.I), "they were"),
    (re.compile(r"\bI\b"), "they"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bme\b", re.I), "them"),
]


def third_person(text: str) -> str:
    """First-person fact text as a relative would say it ("I am 52" -> "they are 52")."""
    for pattern, replacement in _THIRD:
        text = pattern.sub(replacement, text)
    return text


def declared_or_guessed(scenario: Scenario) -> str:
    """The scenario's `speaker`, else a guess from its persona and tags ("writing about her toddler")."""
    if scenario.speaker is not None:
        return scenario.speaker
    if _CARER.search(scenario.persona):
        return "carer"
    if _ON_BEHALF.search(scenario.persona) or "on-behalf" in scenario.tags:
        return "parent" if _PARENT.search(scenario.persona.casefold()) else "relative"
    return "self"


class Voice:
    """How one conversation's person speaks: `speaker` (who writes) and whether the facts, as written, are
    about the writer (`facts_about_writer`)."""

    def __init__(self, scenario: Scenario, third_person_style: bool = False) -> None:
        written = declared_or_guessed(scenario)
        self.facts_about_writer = written == "self"
        # A self-speaking patient played by a relative (a `third_person` style) is a relative speaking.
        self.relays = self.facts_about_writer and third_person_style
        self.speaker = "relative" if self.relays else written
        self._writer = self._writer_pronoun(scenario)

    def _writer_pronoun(self, scenario: Scenario) -> str | None:
        """The writer's pronoun when it differs from every pronoun the facts use for the patient."""
        if self.facts_about_writer:
            return None
        match = _FEMALE.search(scenario.persona), _MALE.search(scenario.persona)
        first = min((m for m in match if m), key=lambda m: m.start(), default=None)
        if first is None:
            return None
        writer = "she" if first is match[0] else "he"
        patient = " ".join(scenario.facts)
        used = {"she"} if _SHE.search(patient) else set()
        used |= {"he"} if _HE.search(patient) else set()
        return None if writer in used else writer

    def fact(self, text: str, english: bool) -> str:
        """A fact as this person says it."""
        if not english or not self.facts_about_writer:
            return text  # in the writer's voice already (or a language the rewrite does not know)
        return third_person(text) if self.relays else first_person(text)

    def goal(self, text: str, english: bool) -> str:
        """The goal as the writer says it."""
        if not english:
            return text
        if self.facts_about_writer:
            said = first_person(text)
            return third_person(said) if self.relays else said
        # "her mother", "his daughter": the relative named is the writer's own.
        text = re.sub(rf"\b(his|her|their)(\s+(?:\S+\s+)?(?:{_RELATIONS}))\b", r"my\2", text, flags=re.I)
        return _first_person_of(self._writer, text) if self._writer else text


# --- the audit: a statement about the patient in the wrong person --------------------------------------
_FIRST = re.compile(r"\b(i'm|i've|i am|i have|i was|i|me|my|myself|mine)\b", re.I)
_PATIENT = re.compile(
    rf"\b((my|our|his|her|their|the)\s+(\S+\s+)?({_RELATIONS})('s)?|({_RELATIONS})('s)?|he|she|they|him|them|his|"
    r"her|their|himself|herself|themselves|he's|she's|they're)\b",
    re.I,
)
_NAMED = re.compile(rf"\b(my|our|his|her|their|the)\s+(\S+\s+)?({_RELATIONS})('s)?\b", re.I)
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?|@")
_SKIP = CHAT_WORDS | {
    "am",
    "is",
    "are",
    "was",
    "were",
    "has",
    "have",
    "'s",
    "can",
    "could",
    "been",
    "seems",
    "seem",
}


def _windows(text: str, subject: re.Pattern[str]) -> set[tuple[str, ...]]:
    """What is said of a subject: the two content words after each of its mentions, within the clause.
    For the first person, "my daughter's" names someone else: it ends what is said of "I"."""
    text = text.casefold()
    if subject is _FIRST:
        text = _NAMED.sub(" . ", text)
    marked = subject.sub(" @ ", text)
    out = set()
    for clause in re.split(r"[.,;:!?\n]|\band\b|\bbut\b", marked):
        tokens = _TOKEN.findall(clause)
        for i, token in enumerate(tokens):
            if token != "@":
                continue
            said = []
            for word in tokens[i + 1 :]:
                if word == "@":
                    break
                if word not in _SKIP:
                    said.append(word[:-1] if word.endswith("s") and len(word) > 3 else word)
                if len(said) == 2:
                    break
            if said:
                out.add(tuple(said))
    return out


def voice_slip(messages: Iterable[str], scenario: Scenario, third_person_style: bool = False) -> str | None:
    """The first message in which someone writing on the patient's behalf says in the first person what the
    facts say of the patient ("I am 84" for "My mother is 84"); None when the voice is kept."""
    voice = Voice(scenario, third_person_style)
    if voice.speaker == "self":
        return None
    about_patient = _FIRST if voice.relays else _PATIENT
    facts = set().union(*(_windows(f, about_patient) for f in scenario.facts)) if scenario.facts else set()
    for message in messages:
        if _windows(message, _FIRST) & facts:
            return message
    return None
