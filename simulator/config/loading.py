"""Load the scenarios a suite names: scenario files and golden-item files alike (a golden item becomes a
one-turn scenario), every problem in every file reported at once."""

from __future__ import annotations

__all__ = ["by_tags", "load_scenarios"]

from pathlib import Path

from simulator.config.documents import collect_documents
from simulator.config.golden import GOLDEN_DOCUMENTS, GoldenItem, golden_scenario
from simulator.config.scenario import SCENARIO_DOCUMENTS, Scenario, scenario_files
from simulator.errors import UserError, did_you_mean, hint_then, option_forms


def load_scenarios(paths: list[Path], tags: list[str] | None = None) -> list[Scenario]:
    """Load and validate every scenario (golden items become one-turn scenarios); raise one UserError
    listing every problem in every file."""
    documents, problems = collect_documents(scenario_files(paths), [GOLDEN_DOCUMENTS, SCENARIO_DOCUMENTS])
    if problems:
        raise UserError(SCENARIO_DOCUMENTS.error_title, problems)
    scenarios = [golden_scenario(d) if isinstance(d, GoldenItem) else d for d in documents]
    if not scenarios:
        raise UserError(f"no scenarios found in {', '.join(map(str, paths))}; add .yaml scenario files")
    return by_tags(scenarios, tags) if tags else scenarios


def by_tags(scenarios: list[Scenario], tags: list[str]) -> list[Scenario]:
    """The scenarios with any of `tags`; none is a UserError with a did-you-mean (`run` and `validate`)."""
    known = sorted({tag for s in scenarios for tag in s.tags})
    kept = [s for s in scenarios if set(s.tags) & set(tags)]
    if not kept:
        guesses = [guess for tag in tags if (guess := did_you_mean(tag, known))]
        raise UserError(
            f"no scenario has any of the tags {tags}; {hint_then(next(iter(guesses), None))}check the suite's tag filter and "
            f"{option_forms('tags')} "
            f"(the scenarios' tags: {', '.join(known) or 'none'})"
        )
    return kept
