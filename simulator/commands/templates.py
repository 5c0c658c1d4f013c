"""Commented YAML for `simulator new`: the fields people gave, with a comment saying what each one is for."""

from __future__ import annotations

__all__ = ["criterion_yaml", "scenario_yaml", "suite_yaml"]

from typing import Any

import yaml


def _value(value: Any) -> str:
    """One YAML value on one line (flow style), quoted when needed."""
    return (
        yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10_000)
        .strip()
        .removesuffix("\n...")
        .strip()
    )


def _block(text: str) -> str:
    lines = [line for line in str(text).splitlines() if line.strip()] or [""]
    return ">\n" + "\n".join(f"  {line.strip()}" for line in lines)


def scenario_yaml(f: dict[str, Any]) -> str:
    facts = "\n".join(f"  - {_value(fact)}" for fact in f["facts"]) or "  []"
    expected = "\n".join(f"  {k}: {_value(v)}" for k, v in f["expected"].items())
    return (
        "# A scenario: one simulated person with a goal and facts they know (docs/content.md).\n"
        f"id: {_value(f['id'])}\n"
        "# Who is writing and how: age, situation, how they type, what they downplay or worry about.\n"
        f"persona: {_block(f['persona'])}\n"
        "# What they want from the bot, in their words.\n"
        f"goal: {_block(f['goal'])}\n"
        "# Revealed only when the bot asks (or as a real person would bring them up).\n"
        + (f"facts:\n{facts}\n" if f["facts"] else "facts: []\n")
        + "# Facts (numbered from 1) the expected outcome depends on; never revealing one is a miss that mattered.\n"
        f"key_facts: {_value(f.get('key_facts', []))}\n"
        "# What the bot should decide, compared in code with its final state.\n"
        + (f"expected:\n{expected}\n" if expected else "expected: {}\n")
        + "# The conversation stops after this many exchanges.\n"
        f"max_turns: {f['max_turns']}\n"
        "# Tags select scenarios (--tags) and switch on criteria (applies_to).\n"
        f"tags: {_value(f['tags'])}\n"
    )


def criterion_yaml(f: dict[str, Any]) -> str:
    return (
        "# A criterion: one thing an LLM judge checks in every conversation it applies to (docs/content.md).\n"
        f"id: {_value(f['id'])}\n"
        "# What the bot must do, in plain words a clinician would sign.\n"
        f"criterion: {_block(f['criterion'])}\n"
        "# What a pass and a fail look like; the judge quotes the transcript for either.\n"
        f"pass: {_value(f['pass'])}\n"
        f"fail: {_value(f['fail'])}\n"
        "# When the criterion does not apply (the judge answers not_applicable).\n"
        f"not_applicable: {_value(f['not_applicable'])}\n"
        "# Scenario tags it applies to; empty: every scenario.\n"
        f"applies_to: {_value(f['applies_to'])}\n"
        "# critical, major or minor: how reports rank a failure.\n"
        f"severity: {f['severity']}\n"
        "# A free label; `omission` feeds the errors-of-omission rate.\n"
        f"category: {f['category']}\n"
    )


def suite_yaml(f: dict[str, Any]) -> str:
    """A suite for an HTTP bot: every field commented, the judge and the simulated user of two families."""
    judge = _value(f["judge_model"]) if f["judge_model"] else "null"
    no_judge = (
        "  # null: only code checks (outcomes, tool checks) are decided; LLM criteria are recorded as not judged.\n"
        if not f["judge_model"]
        else ""
    )
    return (
        "# A suite: which scenarios, which bot, who plays the user, who judges (docs/scenarios.md).\n"
        "# Check it with `simulator validate SUITE`, run it with `simulator run SUITE`.\n"
        f"name: {_value(f['name'])}\n"
        "scenarios:\n"
        "  # Folders (or files) of scenarios, relative to this file: `simulator new scenario --out scenarios/ID.yaml`.\n"
        f"  paths: [{_value(f['scenarios'])}]\n"
        "bot:\n"
        "  # POST {conversation_id, turn, message}; the bot answers {messages: [...]} or {message: ...}, with optional\n"
        "  # handed_over, closed and state (the decision compared with each scenario's `expected`; docs/bots.md).\n"
        "  type: http\n"
        f"  url: {_value(f['url'])}\n"
        "  # Headers may name environment variables, expanded at run time and never recorded:\n"
        '  # headers: {Authorization: "Bearer ${BOT_TOKEN}"}\n'
        "  timeout_s: 30\n"
        "user:\n"
        "  # The simulated user: a model of ANOTHER family than the judge (a judge favours its own family's\n"
        "  # text), or `offline` (rule-based, no key, no cost; it only knows the words of its vocabulary).\n"
        f"  model: {_value(f['user_model'])}\n"
        "  temperature: 1.0\n"
        "judges:\n"
        "  # Criteria files, relative to this file: `simulator new criterion --out judges/ID.yaml`.\n"
        f"  paths: [{_value(f['judges'])}]\n"
        "  # The LLM judge of every criterion; temperature 0 so a verdict does not change between readings.\n"
        f"{no_judge}"
        f"  model: {judge}\n"
        "  temperature: 0.0\n"
        "# Conversations per scenario: repeats show how often the bot fails, not just whether it can.\n"
        "runs: 3\n"
        "# Conversations in flight at once (the bot and the providers must take this many).\n"
        "concurrency: 4\n"
        "seed: 0\n"
        "# Ordered outcomes, lowest first: under- and over-triage are counted from this order. Uncomment and\n"
        "# name your bot's decision (the key of its `state`) and its levels:\n"
        "# outcome:\n"
        "#   key: triage_level\n"
        "#   levels: [self_care, gp, urgent, emergency]\n"
        "#   critical: emergency\n"
    )
