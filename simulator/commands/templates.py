"""Commented YAML for `simulator new`: the fields people gave, with a comment saying what each one is for."""

from __future__ import annotations

__all__ = ["criterion_yaml", "scenario_yaml"]

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
