"""The fidelity audit of short decisive answers: every tap and every typed yes or no must be what the
scenario's facts say, whichever simulated user gave it (offline or LLM).

A "Yes" (tapped or typed) needs a fact or the goal that says it; a "No" must not contradict a fact that says
yes; a tapped row needs a fact or the goal behind it; "None of these" must not pass over a row a fact
supports; "Not sure" is always honest. Read by meaning, with the same reading the offline user taps by
(users/meaning.py), so the audit and the patient agree on what a fact is about.
"""

from __future__ import annotations

__all__ = ["unsupported_answer"]

from simulator.config.scenario import Scenario
from simulator.config.vocabulary import Vocabulary
from simulator.record.models import ConversationRecord
from simulator.record.parts import Option, PickPart, last_options
from simulator.users.meaning import Reader, Reading, support
from simulator.users.picking import negative_option, option_text, plain, yes_no
from simulator.users.words import CHAT_WORDS

_YES_WORDS = {"yes", "y", "yeah", "yep", "yes it is", "si", "sí", "oui", "ja"}
_NO_WORDS = {"no", "nope", "n", "non", "nein", "no it isn't", "no it's not"}
_UNSURE = {"not sure", "unsure", "don't know", "i don't know", "no sé", "maybe", "no lo sé"}


def _reader(vocabulary: Vocabulary | None) -> Reader:
    vocabulary = vocabulary or Vocabulary()
    stop = set(CHAT_WORDS).union(*(p.stop_words for p in vocabulary.languages.values()))
    return Reader(vocabulary, {w.casefold() for w in stop})


def _facts_said(numbers: list[int]) -> str:
    return ", ".join(str(n + 1) for n in numbers)


def _judge(
    answer: str, question: str, options: list[Option], reader: Reader, facts: list[Reading], goal: Reading
) -> str | None:
    """Why this answer is not what the facts say (None: it is)."""
    said = plain(answer)
    if said in _UNSURE:
        return None
    yes, no, _ = yes_no(options)
    asked = (yes is not None and no is not None) or not options
    if said in _YES_WORDS and asked:
        found = support(reader.read(question), facts, goal)
        if not found.supported:
            return f"answered '{answer}' to '{question.strip()}' but no fact says so"
        return None
    if said in _NO_WORDS and asked:
        found = support(reader.read(question), facts, goal)
        if found.yes and not found.no:
            return f"answered '{answer}' to '{question.strip()}' against fact {_facts_said(found.yes)}"
        return None
    if not options:
        return None  # typed text is audited word by word (FidelityAuditor.invented_in_code)
    negative = negative_option(options)
    if negative is not None and plain(negative.title) == said:
        passed = [
            o.title
            for o in options
            if o is not negative and support(reader.read(option_text(o)), facts, goal, menu=True).yes
        ]
        if passed:
            return f"tapped '{answer}' although a fact supports '{passed[0]}'"
        return None
    option = next((o for o in options if plain(o.title) == said), None)
    if option is None:
        return None  # not an offered option: fidelity.valid_pick says so
    if not support(reader.read(option_text(option)), facts, goal, menu=True).supported:
        return f"tapped '{answer}' but no fact supports it"
    return None


def unsupported_answer(
    record: ConversationRecord, scenario: Scenario, vocabulary: Vocabulary | None
) -> tuple[str, str] | None:
    """The first tap or typed yes/no the scenario's facts do not support: (why, the quote); None if none."""
    reader = _reader(vocabulary)
    facts = [
        reader.read(fact, scenario.fact_topics.get(number)) for number, fact in enumerate(scenario.facts, 1)
    ]
    goal = reader.read(scenario.goal)
    for position, turn in enumerate(record.turns):
        if turn.role != "user" or position == 0:
            continue
        before = record.turns[position - 1]
        if before.role != "bot":
            continue
        options = last_options(before.parts)
        picks = [p for p in turn.parts if isinstance(p, PickPart)]
        answers = [p.title for p in picks] or ([turn.text] if len(turn.text.split()) <= 3 else [])
        for answer in answers:
            why = _judge(answer, before.text, options, reader, facts, goal)
            if why is not None:
                return why, answer
    return None
