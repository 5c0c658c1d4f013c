"""What a fact, a question or an option is about: the offline patient answers by meaning, not by shared words.

A text is read once into a `Reading`: the vocabulary's topics it names (exact terms, longest first, so
"blood sugar" is `glucose` and never `bleed`; a term belongs to one topic only, so a synonym cannot cross
topics), its qualities (topics the vocabulary marks as saying how, not what: `pain` for "sore", `onset` for
"since"), the content words no topic covers, which of those are said not to be there ("no fever", "my
breathing is ok": negation within a clause), whether it is a blanket negative ("no other symptoms") and
whether a question asks about alternatives ("... or ..."). A fact may declare its topics (`topic:` in the
scenario) when this guess is wrong.

A fact answers a question when they share what they are about (a topic or an uncovered word; a quality
only when the question names nothing more specific). Every fact that does comes out. A "Yes" needs a fact
that says it (all the question's topics, unless the question offers alternatives); a "No" a fact that
rules it out, or no fact on the subject at all (a scenario's facts are everything the person has); a fact
on the subject that neither says nor rules out leaves the person unsure. The same reading decides which
option a patient taps (text/picking.py) and audits the taps of any simulated user (judging/fidelity.py).
"""

from __future__ import annotations

__all__ = ["Knowledge", "Reader", "Reading", "answering", "knowledge", "shared_reader", "support"]

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from simulator.config.vocabulary import Vocabulary
from simulator.text.words import CHAT_WORDS

_WORD = re.compile(r"(?:[^\W_]|')+")
_CLAUSE = re.compile(r"[.,;:!?\n]+|\s(?:but|pero|mais|aber)\s", re.I)
# Words that say what follows in their clause is not there. "can't", "won't" are left out: "can't lift his
# arm", "won't wake" state a symptom; "no" before "puedo"/"can" is the same inability.
_NEGATORS = frozenset(
    [
        "no",
        "not",
        "never",
        "without",
        "none",
        "nothing",
        "neither",
        "nor",
        "don't",
        "doesn't",
        "didn't",
        "hasn't",
        "haven't",
        "hadn't",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "dont",
        "doesnt",
        "didnt",
        "hasnt",
        "havent",
        "isnt",
        "arent",
        "wasnt",
        "denies",
        "nunca",
        "sin",
        "ningún",
        "ninguna",
        "nada",
        "pas",
        "jamais",
        "sans",
        "kein",
        "keine",
        "nicht",
    ]
)
_INABILITY = frozenset(["can", "could", "able", "puedo", "puede", "puedes", "podía"])
# After a negator, words that make it a lack of knowledge, not a denial: "I don't know whether I am pregnant",
# "not sure if", "no idea": what follows in the clause is unknown to the person, neither said nor ruled out.
_KNOWING = frozenset(["know", "sure", "certain", "idea", "sé", "sabe", "sabemos", "seguro", "segura"])
_UNKNOWING = frozenset(["unsure", "unknown", "uncertain"])
# Words that put a text in the person's past ("have you ever had this before?", "a previous ectopic", "I have
# never fainted"): a question about a past occurrence is answered only by a fact about the past.
_PAST = frozenset(["before", "ever", "previous", "previously", "history", "past", "again", "never", "antes"])
# Words that say the thing named in their clause is as it should be ("my breathing is ok").
_NORMAL = frozenset(["ok", "okay", "fine", "normal", "alright", "bien", "normal"])
_OTHER = frozenset(
    [
        "other",
        "else",
        "further",
        "more",
        "another",
        "otherwise",
        "otro",
        "otra",
        "otros",
        "otras",
        "más",
        "autre",
        "autres",
    ]
)
# A stated age ("he is 74", "a 2-year-old") is about `age` whatever the vocabulary calls it.
_AGE = re.compile(
    r"\b(is|am|are|i'm|he's|she's|aged?)\s+\d{1,3}(?![.,]?\d)(?!\s*(out of|/|%|mg|kg|degrees|°|minutes?|hours?|"
    r"days?|weeks?|times?))\b|\b\d{1,3}[- ](years?|yrs?|months?)[- ]old\b",
    re.I,
)
_SUFFIXES = ("ing", "ed", "er", "es", "s", "e", "ly")


def stem(word: str) -> str:
    """A word without its common English ending ("bleeding" -> "bleed"), kept when that leaves < 3 letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class Reading:
    """What one text is about (see the module docstring)."""

    topics: frozenset[str] = frozenset()  # the vocabulary's topics it names (or the fact declares)
    qualities: frozenset[str] = frozenset()  # topics that say how, not what ("pain", "onset")
    words: frozenset[str] = frozenset()  # stemmed content words no topic covers
    negated: frozenset[str] = frozenset()  # topics, qualities or words said not to be there
    blanket_no: bool = False  # "no other symptoms", "nothing else"
    alternatives: bool = False  # asks about one thing or another ("lips or tongue")
    unknown: frozenset[str] = frozenset()  # topics, qualities or words the person says it does not know
    past: bool = False  # about a past occurrence ("ever ... before", "previous", "never")

    @property
    def about(self) -> frozenset[str]:
        """What it is about, most specific first: its topics and uncovered words."""
        return self.topics | self.words


@dataclass
class Support:
    """How the facts bear on a question or an option: facts (indices) that say yes, that rule it out, that
    touch its subject without deciding it; `goal` when the person's goal says yes."""

    yes: list[int] = field(default_factory=list)
    no: list[int] = field(default_factory=list)
    partial: list[int] = field(default_factory=list)
    goal: bool = False
    score: float = 0.0

    @property
    def supported(self) -> bool:
        return bool(self.yes) or self.goal


_READINGS_KEPT = 4096  # texts a reader remembers the reading of (then it starts again)
_READERS_KEPT = 64  # readers `shared_reader` keeps, each for one vocabulary and stop list


_READERS: dict[tuple[object, ...], Reader] = {}


def shared_reader(vocabulary: Vocabulary, stop: Iterable[str] = CHAT_WORDS) -> Reader:
    """The Reader of this vocabulary and stop list, made once a process (by their content): building one
    stems every term of the vocabulary, and the offline user and the fidelity audit made one for every
    conversation (about a tenth of the test suite's offline-user CPU)."""
    stops = frozenset(stop)
    key = (
        tuple((topic, tuple(terms)) for topic, terms in vocabulary.topics.items()),
        tuple(vocabulary.qualities),
        tuple((word, tuple(others)) for word, others in vocabulary.synonyms.items()),
        stops,
    )
    reader = _READERS.get(key)
    if reader is None:
        if len(_READERS) >= _READERS_KEPT:
            _READERS.clear()
        reader = _READERS[key] = Reader(vocabulary, stops)
    return reader


class Reader:
    """Reads texts into topics with one vocabulary: its `topics` and `qualities`, and its older `synonyms`
    (each canonical word a topic). Words of a language's `stop` list say nothing about a topic."""

    def __init__(self, vocabulary: Vocabulary, stop: Iterable[str] = CHAT_WORDS) -> None:
        self._stop = frozenset(stop)
        self._qualities = frozenset(q.casefold() for q in vocabulary.qualities)
        # term (stemmed words) -> topic; the longest term at a place wins.
        self._terms: dict[tuple[str, ...], str] = {}
        groups = {**{k: [k, *v] for k, v in vocabulary.synonyms.items()}, **vocabulary.topics}
        for topic, terms in groups.items():
            for term in [topic, *terms]:
                key = tuple(stem(w) for w in _WORD.findall(term.casefold()))
                if key:
                    self._terms.setdefault(key, topic.casefold())
        self._longest = max((len(k) for k in self._terms), default=1)
        self._readings: dict[tuple[str, tuple[str, ...] | None], Reading] = {}

    def read(self, text: str, declared: Sequence[str] | None = None) -> Reading:
        """What `text` is about; `declared` topics (a fact's `topic:`) replace the guess ("no X": ruled out).
        Remembered: a scenario's facts and goal are read again by every conversation of it, and a Reading is
        immutable."""
        key = (text, tuple(declared) if declared else None)
        reading = self._readings.get(key)
        if reading is None:
            if len(self._readings) >= _READINGS_KEPT:
                self._readings.clear()
            reading = self._readings[key] = self._read(text, declared)
        return reading

    def _read(self, text: str, declared: Sequence[str] | None) -> Reading:
        if declared:
            return self._declared(text, declared)
        topics: set[str] = set()
        qualities: set[str] = set()
        words: set[str] = set()
        negated: set[str] = set()
        unknown: set[str] = set()
        blanket = False
        for clause in _CLAUSE.split(text.casefold()):
            raw = _WORD.findall(clause)
            found, negative = self._clause(raw)
            for name, state in found:
                kind = qualities if name in self._qualities else topics
                word = name.startswith("~")
                if word:
                    kind, name = words, name[1:]
                kind.add(name)
                if state == "unknown":
                    unknown.add(name)
                # "my breathing is ok" rules out a breathing problem; "she can walk on it fine" says she walks
                elif state == "no" or (negative and not word):
                    negated.add(name)
            has_topic = any(not n.startswith("~") for n, _ in found)
            # "no other symptoms", "nothing else", "otherwise I feel fine": nothing beyond what was said.
            if (self._negation_at(raw) is not None or negative) and _OTHER & set(raw) and not has_topic:
                blanket = True
        if _AGE.search(text):
            topics.add("age")
        folded = text.casefold()
        return Reading(
            frozenset(topics),
            frozenset(qualities),
            frozenset(words),
            frozenset(negated),
            blanket,
            alternatives=bool(re.search(r"\b(or|o|ou|oder)\b", folded)),
            unknown=frozenset(unknown),
            past=bool(_PAST & set(_WORD.findall(folded))),
        )

    def _declared(self, text: str, declared: Sequence[str]) -> Reading:
        topics: set[str] = set()
        qualities: set[str] = set()
        negated: set[str] = set()
        for entry in declared:
            name = entry.casefold().strip()
            ruled_out = name.startswith("no ")
            name = name[3:].strip() if ruled_out else name
            (qualities if name in self._qualities else topics).add(name)
            if ruled_out:
                negated.add(name)
        guessed = self.read(text)
        return Reading(
            frozenset(topics),
            frozenset(qualities),
            frozenset(),
            frozenset(negated),
            guessed.blanket_no,
            past=guessed.past,
        )

    @staticmethod
    def _negation_at(raw: list[str]) -> tuple[int, bool] | None:
        """Where a negation starts in a clause's words (None: nowhere), and whether it is a lack of knowledge
        ("don't know whether", "not sure if", "unsure") rather than a denial."""
        for i, word in enumerate(raw):
            if word in _UNKNOWING:
                return i, True
            if word in _NEGATORS:
                after = raw[i + 1] if i + 1 < len(raw) else ""
                before = raw[i - 1] if i else ""
                if after in _INABILITY or before in _INABILITY:
                    continue  # "no puedo respirar", "can not breathe": an inability, a symptom
                return i, after in _KNOWING
        return None

    def _clause(self, raw: list[str]) -> tuple[list[tuple[str, str]], bool]:
        """(topic or ~word, "no" / "unknown" / "") found in one clause, and whether the whole clause says all
        is normal."""
        negation = self._negation_at(raw)
        start, unknowing = negation if negation is not None else (len(raw), False)
        stems = [stem(w) for w in raw]
        found: list[tuple[str, str]] = []
        i = 0
        while i < len(raw):
            state = ("unknown" if unknowing else "no") if start < i else ""
            for size in range(min(self._longest, len(raw) - i), 0, -1):
                if size == 1 and raw[i] in self._stop:
                    continue  # a common word ("go", "when") never names a topic on its own
                topic = self._terms.get(tuple(stems[i : i + size])) or self._terms.get(
                    tuple(raw[i : i + size])
                )
                if topic is not None:
                    found.append((topic, state))
                    i += size
                    break
            else:
                word = raw[i]
                if self._content(word) and not (unknowing and word in _KNOWING):
                    found.append(("~" + stems[i], state))
                i += 1
        normal = bool(_NORMAL & set(raw)) and negation is None
        return found, normal

    def _content(self, word: str) -> bool:
        """Whether a word no topic covers says what a text is about (not a common, negating or time word)."""
        plain = word not in self._stop and word not in _NEGATORS and word not in _UNKNOWING
        return plain and word not in _PAST and len(word) > 1 and not word.isdigit()


def _shared(question: Reading, fact: Reading) -> frozenset[str]:
    """What a fact and a question are both about (qualities only when the question names nothing else)."""
    shared = question.about & fact.about
    if not shared and not question.about:
        shared = question.qualities & fact.qualities
    return shared


def _weights(facts: Sequence[Reading]) -> dict[str, float]:
    """A topic or word named by many facts ("pain") says little about which fact is asked for."""
    counts: dict[str, int] = {}
    for fact in facts:
        for name in fact.about | fact.qualities:
            counts[name] = counts.get(name, 0) + 1
    return {name: 1.0 / n for name, n in counts.items()}


def _verdict(question: Reading, fact: Reading) -> str | None:
    """What one fact says of a question: "yes", "no", "unknown" (the person says it does not know), "related"
    (on the subject and worth telling, yet no answer to what was asked: the present for a question about a
    past occurrence), "partial" (on the subject, deciding nothing, not an answer), None (off the subject)."""
    shared = _shared(question, fact)
    if not shared:
        return None
    named = shared & (question.topics | question.qualities)
    if question.topics and not question.alternatives and not named and len(shared) < 2:
        return None  # the question names a topic: one word alone ("blue" inhaler, "blue" lips) is no answer
    if shared & fact.unknown:
        return "unknown"  # "I don't know whether I am pregnant"
    said = shared - fact.negated
    if (shared & fact.negated and not question.alternatives) or not said:
        verdict = "no"  # "my neck is not stiff", "the spots don't fade": the thing asked is ruled out
    elif question.alternatives or len(question.topics) < 2 or question.topics <= fact.topics:
        verdict = "yes"
    else:
        return "partial"  # "blood in the vomit?" of a fact about vomiting alone
    # "Have you ever had X before?" is not answered by X now: only a fact about the past says yes or no.
    return "related" if question.past and not fact.past else verdict


_TOLD = ("yes", "no", "unknown", "related")


@dataclass
class Knowledge:
    """What this person knows about one question, the one home of that decision for a typed answer, a tap
    and the audit of both: `told` the facts that answer it (the best first: what a typed answer says), the
    facts among them that say yes, rule it out, or say the person does not know; `goal` when the goal says
    yes. `answer` is "yes" or "no" only when facts decide it and none says otherwise, else "unsure"."""

    told: list[int] = field(default_factory=list)
    yes: list[int] = field(default_factory=list)
    no: list[int] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)
    goal: bool = False

    @property
    def answer(self) -> str:
        if self.yes and not (self.no or self.unknown):
            return "yes"
        if self.no and not (self.yes or self.unknown):
            return "no"
        if self.goal and not (self.yes or self.no or self.unknown):
            return "yes"
        return "unsure"


def knowledge(question: Reading, facts: Sequence[Reading], goal: Reading | None = None) -> Knowledge:
    """What the facts (and the goal) say of a question. A fact sharing only words no topic covers must share
    enough of them (a word many facts share counts less); a fact on the subject that decides nothing
    ("vomiting" for "blood in the vomit?") is not an answer. No fact on the subject: a blanket negative ("No
    other symptoms") rules it out; without one the person is unsure (a scenario's facts are what it was
    written with, not all that is true of the person)."""
    weights = _weights(facts)
    scored = []
    out = Knowledge()
    touched = False
    for index, fact in enumerate(facts):
        verdict = _verdict(question, fact)
        touched = touched or verdict is not None
        if verdict not in _TOLD:
            continue
        shared = _shared(question, fact)
        score = sum(weights.get(name, 1.0) for name in shared)
        if shared & (fact.topics | fact.qualities) or score >= 0.5:
            scored.append((-score, index))
            {"yes": out.yes, "no": out.no, "unknown": out.unknown}.get(verdict, []).append(index)
    out.told = [index for _, index in sorted(scored)]
    if not touched and question.about:  # "No other symptoms": what no fact names is ruled out
        out.told = out.no = [i for i, f in enumerate(facts) if f.blanket_no]
    # The goal says yes by a topic it names, never by a word ("is the parcel damaged?" is not answered by
    # "where is my parcel"), and never of the past.
    out.goal = goal is not None and bool(question.topics & goal.about) and _verdict(question, goal) == "yes"
    return out


def answering(question: Reading, facts: Sequence[Reading], skip: set[int] | None = None) -> list[int]:
    """Every fact (index) not in `skip` that answers the question, the best first (`knowledge().told`)."""
    return [index for index in knowledge(question, facts).told if not (skip and index in skip)]


def support(question: Reading, facts: Sequence[Reading], goal: Reading | None = None) -> Support:
    """How the facts (and the goal) bear on a row of a menu: the facts that say it, rule it out or touch its
    subject, and a score. The goal says what the conversation is about: it supports a row by a word it
    shares ("Cough or cold" for "antibiotics for a cold")."""
    out = Support()
    weights = _weights(facts)
    told = knowledge(question, facts).told
    for index, fact in enumerate(facts):
        verdict = _verdict(question, fact)
        if verdict == "yes" and index in told:
            out.yes.append(index)
            out.score += sum(weights.get(name, 1.0) for name in _shared(question, fact) - fact.negated)
        elif verdict == "no":
            out.no.append(index)
        elif verdict is not None:
            out.partial.append(index)
    if goal is not None and question.about & goal.about and _verdict(question, goal) == "yes":
        out.goal = True
        out.score += 0.5
    return out
