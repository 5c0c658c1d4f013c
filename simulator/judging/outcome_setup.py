"""The suite's outcome reader, built for a judge stage: its sources, the level phrases (the suite's or the
vocabulary's), the outcome judge on the judges' connection, and what of it joins the judge set's hash."""

from __future__ import annotations

__all__ = ["outcome_hash_payload", "phrase_reader", "suite_outcome_reader"]

from typing import Any

from simulator.config.suite import Suite
from simulator.config.vocabulary import Vocabulary, load_vocabulary
from simulator.errors import UserError
from simulator.judging.outcome_judge import OutcomeJudge
from simulator.judging.outcome_reader import OutcomeReader, make_outcome_reader
from simulator.providers.hub import ModelHub


def outcome_hash_payload(suite: Suite) -> dict[str, Any] | None:
    """What decides the outcome, for the judge set's hash: None for the bot's state alone (the default)."""
    config = suite.outcome
    if config is None or config.default_source:
        return None
    payload = config.model_dump(mode="json", include={"source", "messages", "tool", "judge"})
    if config.red_flags:  # only when set: suites without red flags keep the hash they had
        payload["red_flags"] = [config.red_flags, config.red_flags_ignore]
    vocabulary = _vocabulary(suite)
    if "messages" in config.sources and vocabulary is not None:
        payload["vocabulary"] = vocabulary.model_dump(include={"outcome_levels", "outcome_ignore"})
    if vocabulary is not None and vocabulary.red_flags and not config.red_flags:
        payload["vocabulary_red_flags"] = vocabulary.model_dump(include={"red_flags", "red_flags_ignore"})
    if "judge" in config.sources:
        payload["judge_model"] = _outcome_judge_model(suite)
    return payload


def _vocabulary(suite: Suite) -> Vocabulary | None:
    return load_vocabulary(suite.resolve(suite.user.vocabulary)) if suite.user.vocabulary else None


def _outcome_judge_model(suite: Suite) -> str:
    """The outcome judge's model: `outcome.judge.model`, else the suite's (first) judge model."""
    config = suite.outcome
    own = config.judge.model if config is not None and config.judge is not None else None
    model = own or next(iter(suite.judges.judge_models()), None)
    if model is None:
        raise UserError(
            "outcome source `judge` needs a model: set outcome.judge.model or judges.model in the suite "
            "(or pass --judge-model)"
        )
    return model


def suite_outcome_reader(suite: Suite, hub: ModelHub) -> OutcomeReader | None:
    """The suite's outcome reader: its sources, phrases (the suite's or the vocabulary's) and, for the
    `judge` source, a classifier on the judges' connection."""
    config = suite.outcome
    if config is None:
        return None
    judge = None
    if "judge" in config.sources:
        spec = _outcome_judge_model(suite)
        client, bare = hub.for_role("judge").client(spec)
        own = config.judge
        judge = OutcomeJudge(
            client,
            spec,
            bare,
            list(config.levels),
            instructions=own.instructions if own is not None else None,
            temperature=suite.judges.temperature,
            max_tokens=suite.judges.max_tokens,
        )
    return phrase_reader(suite, judge)


def phrase_reader(suite: Suite, judge: OutcomeJudge | None = None) -> OutcomeReader | None:
    """The reader with the suite's level phrases checked (the suite's, else the vocabulary's): what
    `validate` and preflight try, with no judge model needed."""
    config = suite.outcome
    if config is None:
        return None
    where = f"{suite.user.vocabulary}: outcome_levels" if suite.user.vocabulary else "outcome_levels"
    return make_outcome_reader(config, _vocabulary(suite), judge, where)
