"""The offline user: a deterministic, seeded, rule-based persona that needs no LLM.

It opens with its goal, reveals a fact only when the bot's message asks about it (by meaning: the topics of
the suite's vocabulary, text/meaning.py; every fact that answers comes out), answers "not sure" to anything
its facts do not cover, taps only the options its facts support (text/picking.py), keeps its speaker's voice
(text/voice.py: a daughter writing about her mother never says "I am 84"), and sends the sentinel once the
bot has given an outcome (the vocabulary's outcome phrases). The engine knows no domain's words: the vocabulary file holds them. It is the
default when no API key is set, and it makes deterministic tests of bots possible.

It knows in code why it revealed each fact, so its fact provenance (`fact_provenance`) is exact; and it
plays the persona styles of factor levels, with the lines of the suite's style catalogue (simulator/text/styles.py).
"""

from __future__ import annotations

__all__ = ["OfflineUser"]

import random
import re

from simulator.bots.environment import Environment
from simulator.config.languages import offline_language_problems, persona_languages
from simulator.config.scenario import Scenario
from simulator.config.styles import DEFAULT_STYLES, StyleCatalogue
from simulator.config.vocabulary import Phrases, Vocabulary
from simulator.errors import UserError
from simulator.record.models import FactProvenance
from simulator.record.parts import MediaPart, Option, PickPart, last_options
from simulator.record.transcript import Turn
from simulator.text.content import content_words, gives_outcome
from simulator.text.language import language_of
from simulator.text.meaning import answering, shared_reader
from simulator.text.picking import choose_option
from simulator.text.styles import StylePlayer
from simulator.text.voice import Voice
from simulator.text.words import CHAT_WORDS
from simulator.users.base import END, UserMessage

_STOPWORDS = CHAT_WORDS
_NO_VOCABULARY = Vocabulary()
_TERSE = re.compile(r"\b(short|terse|typo|typos|impatient|brief|few words|lowercase)\b", re.I)


class OfflineUser:
    """A rule-based persona for one conversation, deterministic for (seed, scenario, repeat)."""

    def __init__(
        self,
        scenario: Scenario,
        seed: int = 0,
        repeat: int = 0,
        volunteer_share: float = 0.3,
        vocabulary: Vocabulary | None = None,
        styles: StyleCatalogue = DEFAULT_STYLES,
    ) -> None:
        self._scenario = scenario
        self._vocabulary = vocabulary or _NO_VOCABULARY
        # Variants of one base scenario share its random draws (greeting, what is volunteered), so a variant
        # and its reference differ only by the factor level: paired comparisons (relations, factors).
        draws = scenario.base or scenario.id
        self._rng = random.Random(f"{seed}:{draws}:{repeat}")
        self._terse = bool(_TERSE.search(scenario.persona))
        # The languages this person writes in (config/languages.py): the first, then those it switches to.
        languages = persona_languages(scenario)
        self._english = languages[0] == "en"
        self._speaks = [self._vocabulary.phrases(code) for code in languages]
        if None in self._speaks:  # validate and run refuse such a suite first (engine/roles.py)
            problems = offline_language_problems([scenario], self._vocabulary, None)
            raise UserError(f"scenario {scenario.id}: the offline user cannot speak its language", problems)
        # Each language's own common words say nothing about which fact is asked for (English: CHAT_WORDS).
        self._stop = _STOPWORDS.union(*([w.casefold() for w in p.stop_words] for p in self._speaks if p))
        self._revealed: set[int] = set()
        # fact index -> (user turn position, asking bot turn position or None, the question quoted)
        self._why: dict[int, tuple[int, int | None, str | None]] = {}
        self._nudges = 0
        self._env: Environment | None = None  # set by the loop when the suite gives the person tools
        self._styles = StylePlayer(scenario.styles, random.Random(f"{seed}:{draws}:{repeat}:style"), styles)
        self._voice = Voice(scenario, self._styles.third_person)
        # What each fact and the goal are about, read once (a fact's declared `topic` replaces the guess).
        self._reader = shared_reader(self._vocabulary, self._stop)
        self._facts = [
            self._reader.read(fact, scenario.fact_topics.get(number))
            for number, fact in enumerate(scenario.facts, start=1)
        ]
        self._goal = self._reader.read(scenario.goal)
        self._media_sent: set[int] = set()
        # A real person sometimes volunteers their first fact (seeded), never more than the persona allows.
        shared = bool(scenario.facts) and self._rng.random() < volunteer_share
        self._volunteer = min(len(scenario.facts), scenario.volunteers if shared else 0)
        # A style that sets how many facts the person volunteers makes that exact, not sometimes none.
        if any((style := styles.get(name)) and style.volunteers is not None for name in scenario.styles):
            self._volunteer = min(len(scenario.facts), scenario.volunteers)

    def _style(self, text: str) -> str:
        text = text.strip()
        if self._terse:
            text = text.lower().rstrip(".")
        return self._styles.message(text)

    def _say_facts(self, indices: list[int], turn: int, asked: int | None, question: str | None) -> str:
        for index in indices:
            self._revealed.add(index)
            self._why[index] = (turn, asked, question)
        return " ".join(self._styles.fact(self._as_said(self._scenario.facts[i])) for i in indices)

    def _as_said(self, fact: str) -> str:
        """A fact in the speaker's voice (text/voice.py); a fact in another language (a code-switcher's
        Spanish fact) is said as written."""
        english = self._english and (len(self._speaks) == 1 or language_of(fact) in (None, "en"))
        return self._voice.fact(fact, english)

    def _words(self, text: str) -> set[str]:
        return content_words(text, self._vocabulary, self._stop)

    def _phrases(self, turns: list[Turn]) -> Phrases:
        """The phrases of the language the next user message is in: `writes_in`, and in turn each language
        a code-switching person `switches_to` (user message 1 in the first, 2 in the next, ...)."""
        said = sum(1 for t in turns if t.role == "user")
        phrases = self._speaks[said % len(self._speaks)]
        assert phrases is not None  # refused in __init__
        return phrases

    def _opening(self) -> str:
        phrases = self._phrases([])
        goal = self._scenario.goal.strip().rstrip(".")
        goal = self._voice.goal(goal, self._english)
        speaker = "|".join(re.escape(w) for w in phrases.speaker_words) or "(?!)"
        if not re.match(rf"^({speaker})\b", goal, re.I):
            goal = f"{phrases.want_to} " + goal[0].lower() + goal[1:]
        # A code-switcher greets in the language it switches into ("hola, I want to..."), as people do.
        greeting = self._rng.choice(self._speaks[-1].greetings if self._speaks[-1] else phrases.greetings)
        text = " ".join([greeting + goal + ".", *self._styles.opening_lines()])
        if self._volunteer:
            text += " " + self._say_facts(list(range(self._volunteer)), 0, None, None)
        return self._style(text)

    def fact_provenance(self, turns: list[Turn]) -> list[FactProvenance]:
        """Exact provenance: each fact elicited (with the bot turn that asked), volunteered, or missed.

        Only reveals whose user turn is in `turns` count (a message the conversation never kept is missed).
        """
        key = {n - 1 for n in self._scenario.key_facts}
        out = []
        for index, text in enumerate(self._scenario.facts):
            why = self._why.get(index)
            if why is None or why[0] >= len(turns):
                out.append(FactProvenance(fact=index, text=text, status="missed", key=index in key))
                continue
            turn, asked, question = why
            out.append(
                FactProvenance(
                    fact=index,
                    text=text,
                    status="volunteered" if asked is None else "elicited",
                    user_turn=turn,
                    asked_turn=asked,
                    question=question,
                    quote=turns[turn].text or None,
                    verified=True,
                    key=index in key,
                )
            )
        return out

    def _matching_facts(self, question: str) -> list[int]:
        """Every fact not yet told that answers the question, by what they are about (text/meaning.py)."""
        return answering(self._reader.read(question), self._facts, skip=self._revealed)

    def _tap(self, turns: list[Turn], options: list[Option], question: str) -> UserMessage | None:
        """Tap the option this person's facts support (text/picking.py); a fact it tells counts as elicited
        and the pick records it. None: no option is supported and none says so; the person types instead."""
        choice = choose_option(options, question, self._reader, self._facts, self._goal)
        if choice.option is None:
            return None
        told = [i for i in choice.facts if i not in self._revealed]
        for index in told:
            self._revealed.add(index)
            self._why[index] = (len(turns), len(turns) - 1, question)
        pick = PickPart(
            id=choice.option.id,
            title=choice.option.title,
            facts=[i + 1 for i in choice.facts],
            basis=choice.basis,
        )
        return UserMessage(text=choice.option.title, pick=pick, model="offline")

    def _media_for(self, question: str) -> list[MediaPart]:
        """The photos and voice notes (`media` of the scenario) this question is about, each sent once."""
        asked = self._reader.read(question)
        out = []
        for index, item in enumerate(self._scenario.media):
            if index in self._media_sent:
                continue
            about = self._reader.read(" ".join(item.topic)) if item.topic else None
            if about is None or not (asked.about | asked.qualities) & (about.about | about.qualities):
                continue
            self._media_sent.add(index)
            out.append(
                MediaPart(
                    kind=item.kind,
                    caption=item.caption,
                    description=item.description,
                    transcript=item.transcript,
                    content_type="image/jpeg" if item.kind == "image" else "audio/ogg",
                )
            )
        return out

    def use_environment(self, environment: Environment) -> None:
        """The person's own tools (thermometer, rash): used when the bot asks for what they read."""
        self._env = environment if environment.spec.user_tools else None

    def _use_tools(self, question: str) -> str | None:
        """When the bot's question asks for what a user tool reads (its `asked_by` phrases, else the words
        of its name and description), read it and say the value; None when no tool is asked for."""
        if self._env is None:
            return None
        asked = self._words(question)
        said = []
        for name, tool in self._env.spec.user_tools.items():
            if tool.asked_by:
                wanted = any(phrase.casefold() in question.casefold() for phrase in tool.asked_by)
            else:
                wanted = bool(asked & self._words(f"{name.replace('_', ' ')} {tool.description}"))
            if not wanted:
                continue
            part = self._env.call(name, {}, side="user")
            ok = part.error is None
            said.append(tool.say.replace("{value}", str(part.result)) if ok else tool.unavailable)
        return " ".join(said) if said else None

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        if not turns:
            return UserMessage(text=self._opening(), model="offline")
        last_turn = next((t for t in reversed(turns) if t.role == "bot"), None)
        last_bot = last_turn.text if last_turn is not None else ""
        options = last_options(last_turn.parts) if last_turn is not None else []
        if options and self._scenario.buttons == "tap" and not gives_outcome(last_bot, self._vocabulary):
            tapped = self._tap(turns, options, last_bot)
            if tapped is not None:
                return tapped
        if gives_outcome(last_bot, self._vocabulary):
            instead = self._styles.instead_of_end(last_bot)
            if instead is None:
                return UserMessage(text=END, done=True, model="offline")
            return UserMessage(text=self._style(instead), model="offline")
        if "?" in last_bot:
            questions = (
                " ".join(s for s in re.split(r"(?<=[?.!])\s+", last_bot) if s.endswith("?")) or last_bot
            )
            reading = self._use_tools(questions)
            if reading is not None:
                return UserMessage(text=self._style(reading), model="offline")
            matched = self._matching_facts(questions)
            if matched:
                said = [self._say_facts([i], len(turns), len(turns) - 1, questions) for i in matched]
            else:
                said = [self._rng.choice(self._phrases(turns).dont_know)]
            extra = self._styles.mid_line(sum(1 for t in turns if t.role == "user") + 1)
            media = self._media_for(questions)
            if not self._styles.bursts or len(said) + bool(extra) < 2:
                text = " ".join([*said, extra] if extra else said)
                return UserMessage(text=self._style(text), media=media, model="offline")
            burst = [self._style(m) for m in ([*said, extra] if extra else said)]  # one message a fact
            return UserMessage(text="\n".join(burst), burst=burst, media=media, model="offline")
        if self._nudges >= 2:
            return UserMessage(text=END, done=True, model="offline")  # clearly not going to get an answer
        self._nudges += 1
        nudge = self._rng.choice(self._phrases(turns).nudges)
        return UserMessage(text=self._style(nudge), model="offline")
