"""Judge hygiene (seed 001): warn when the judge shares a model family with the bot or the simulated user.

A judge tends to favour text written by its own model family (self-enhancement bias); a judge from
another family is the cheap mitigation. Families are read from the provider and the model name.
"""

from __future__ import annotations

__all__ = ["model_family", "same_family_warnings"]

import re

_OPENAI_NAMES = re.compile(r"^(gpt|chatgpt|o\d+|text-davinci|davinci)([-.:_]|$)")
_WORD = re.compile(r"[a-z]+")


def model_family(spec: str | None) -> str | None:
    """`anthropic:claude-sonnet-4-5` -> "claude"; `openai:gpt-4.1-mini` / `openai:o3` -> "gpt";
    `local:smollm2` -> "smollm"; `openai:llama-3.1-8b` (a compatible server) -> "llama".
    None for no model (offline user, a python or http bot)."""
    if not spec or spec in ("offline", "auto"):
        return None
    provider, _, name = spec.partition(":")
    name = name.strip().lower().rsplit("/", 1)[-1]
    if provider == "anthropic" or "claude" in name:
        return "claude"
    if _OPENAI_NAMES.match(name):
        return "gpt"
    word = _WORD.match(name)
    return word.group(0) if word else name or provider


def same_family_warnings(judge_model: str | None, others: dict[str, str | None]) -> list[str]:
    """One warning per role (`bot`, `simulated user`) whose model is of the judge's family."""
    family = model_family(judge_model)
    if family is None:
        return []
    return [
        f"the judge model {judge_model} is of the same family ({family}) as the {role} ({spec}): "
        "judges favour their own family's text (self-enhancement bias); prefer a judge from another family"
        for role, spec in others.items()
        if model_family(spec) == family
    ]
