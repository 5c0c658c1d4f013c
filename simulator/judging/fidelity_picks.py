"""The fidelity audit of short decisive answers: every tap and every typed yes or no must be what the
scenario's facts say, whichever simulated user gave it (offline or LLM).

A "Yes" (tapped or typed) needs a fact or the goal that says it, and a "No" a fact that rules it out: the one
decision of what the person knows about a question (text/meaning.py `knowledge`, which a typed answer also
follows), read here from the question and the facts, never from the picker's choice, so a picker that taps by
topic overlap alone fails here, with the tap and the fact it leaned on quoted. A tapped row needs a fact or
the goal behind it; "None of these" must not pass over a row a fact supports; "Not sure" is always honest.
"""

from __future__ import annotations

__all__ = ["unsupported_answer"]

from dataclasses import dataclass

from simulator.config.scenario import Scenario
from simulator.config.vocabulary import Vocabulary
from simulator.record.models import ConversationRecord
from simulator.record.parts import Option, PickPart, last_options
from simulator.text.meaning import Knowledge, Reader, Reading, knowledge, shared_reader, support
from simulator.text.picking import negative_option, none_applies, option_text, plain, yes_no
from simulator.text.words import CHAT_WORDS

_YES_WORDS = {"yes", "y", "yeah", "yep", "yes it is", "si", "sí", "oui", "ja"}
_NO_WORDS = {"no", "nope", "n", "non", "nein", "no it isn't", "no it's not"}
_UNSURE = {"not sure", "unsure", "don't know", "i don't know", "no sé", "maybe", "no lo sé"}


@dataclass
class _Scene:
    """A scenario as the audit reads it: its facts' and goal's readings, and the facts as written."""

    reader: Reader
    facts: list[Reading]
    goal: Reading
    texts: list[str]


def _reader(vocabulary: Vocabulary | None) -> Reader:
    vocabulary = vocabulary or Vocabulary()
    stop = set(CHAT_WORDS).union(*(p.stop_words for p in vocabulary.languages.values()))
    return shared_reader(vocabulary, {w.casefold() for w in stop})


def _quoted_facts(numbers: list[int], texts: list[str]) -> str:
    return "; ".join(f"fact {n + 1} '{texts[n]}'" for n in numbers if 0 <= n < len(texts))


def _yes_no(
    said: str, answer: str, question: str, known: Knowledge, cited: list[int], texts: list[str]
) -> str:
    """Why a yes or no is not what the facts say (empty: it is), read by the one decision of what the person
    knows (text/meaning.py `knowledge`), never by the picker's choice: the facts it cites are only quoted."""
    asked = f"'{answer}' to '{question.strip()}'"
    leaned = _quoted_facts(cited or known.told, texts)
    if said in _YES_WORDS and known.answer != "yes":
        if known.no:
            return f"answered {asked} against {_quoted_facts(known.no, texts)}"
        return f"answered {asked} but no fact says so" + (f" ({leaned} does not say it)" if leaned else "")
    if said in _NO_WORDS and known.answer != "no":
        if known.yes:
            return f"answered {asked} against {_quoted_facts(known.yes, texts)}"
        return f"answered {asked} but no fact rules it out" + (f" ({leaned} does not)" if leaned else "")
    return ""


def _judge(answer: str, question: str, options: list[Option], scene: _Scene, cited: list[int]) -> str | None:
    """Why this answer is not what the facts say (None: it is)."""
    said = plain(answer)
    if said in _UNSURE:
        return None
    reader, facts, goal = scene.reader, scene.facts, scene.goal
    yes, no, _ = yes_no(options)
    if ((yes is not None and no is not None) or not options) and said in _YES_WORDS | _NO_WORDS:
        known = knowledge(reader.read(question), facts, goal)
        return _yes_no(said, answer, question, known, cited, scene.texts) or None
    if not options:
        return None  # typed text is audited word by word (FidelityAuditor.invented_in_code)
    negative = negative_option(options)
    if negative is not None and plain(negative.title) == said:
        passed = [
            o.title
            for o in options
            if o is not negative and support(reader.read(option_text(o)), facts, goal).yes
        ]
        if passed:
            return f"tapped '{answer}' although a fact supports '{passed[0]}'"
        if not none_applies(options, reader, facts):
            return f"tapped '{answer}' to '{question.strip()}' but no fact says none of them applies"
        return None
    option = next((o for o in options if plain(o.title) == said), None)
    if option is None:
        return None  # not an offered option: fidelity.valid_pick says so
    if not support(reader.read(option_text(option)), facts, goal).supported:
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
    scene = _Scene(reader, facts, reader.read(scenario.goal), list(scenario.facts))
    for position, turn in enumerate(record.turns):
        if turn.role != "user" or position == 0:
            continue
        before = record.turns[position - 1]
        if before.role != "bot":
            continue
        options = last_options(before.parts)
        picks = [p for p in turn.parts if isinstance(p, PickPart)]
        typed: list[tuple[str, list[int]]] = [(turn.text, [])] if len(turn.text.split()) <= 3 else []
        answers = [(p.title, [n - 1 for n in p.facts or []]) for p in picks] or typed
        for answer, cited in answers:
            why = _judge(answer, before.text, options, scene, cited)
            if why is not None:
                return why, answer
    return None
