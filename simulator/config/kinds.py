"""What a YAML file holds, told by its keys rather than its name: a suite, a scenario, a criterion, a golden
item, or data a suite points to (a red-team strategy pack, a vocabulary). Every loader, `validate` and the
desk's editor ask here, so a `suite-http.yaml` or a `strategies.yaml` among the scenarios is what it is, not
a broken scenario."""

from __future__ import annotations

__all__ = ["document_kind", "is_not_scenario_data"]

from typing import Any

# Data a suite points to that may sit among scenario files, by the keys only that kind has at its top level:
# `validate` checks each with its own loader, and the scenario loader never reads one as a scenario.
DATA_KINDS: dict[str, tuple[str, ...]] = {
    "redteam-pack": ("strategies",),
    "vocabulary": ("synonyms", "outcome_patterns", "languages"),
}


def is_suite_data(data: Any) -> bool:
    """Whether parsed YAML is a suite file (it names a `bot`; a scenario has a `persona`), whatever the
    file's name: a `suite-http.yaml` next to the scenarios is a suite, not a broken scenario."""
    return isinstance(data, dict) and "bot" in data and "persona" not in data


def _data_kind(data: Any) -> str | None:
    """The DATA_KINDS entry whose keys a top-level mapping has (and no scenario's `persona`), or None."""
    if not isinstance(data, dict) or "persona" in data or "scenarios" in data:
        return None
    return next((kind for kind, keys in DATA_KINDS.items() if any(k in data for k in keys)), None)


def document_kind(data: Any, default: str = "scenario") -> str:
    """What parsed YAML holds, by its keys (the first document of a list): suite, a DATA_KINDS name,
    criterion, golden (an item), scenario, or `default` when the keys say nothing."""
    if is_suite_data(data):
        return "suite"
    data_kind = _data_kind(data)
    if data_kind is not None:
        return data_kind
    first = data[0] if isinstance(data, list) and data else data
    if not isinstance(first, dict):
        return default
    for kind, key, many in (("criterion", "criterion", "criteria"), ("golden", "item_id", "items"),
                            ("scenario", "persona", "scenarios")):  # fmt: skip
        if key in first or isinstance(first.get(many), list):
            return kind
    return default


def is_not_scenario_data(data: Any) -> bool:
    """Whether a file among scenario files holds something else a suite reads (a suite, a strategy pack,
    a vocabulary): the scenario loader passes over it."""
    return is_suite_data(data) or _data_kind(data) is not None
