"""What a YAML file holds, told by its keys rather than its name: a suite, a scenario, a criterion or a
golden item. Every loader and the desk's editor ask here, so a `suite-http.yaml` among the scenarios is a
suite, not a broken scenario."""

from __future__ import annotations

__all__ = ["document_kind", "is_suite_data"]

from typing import Any


def is_suite_data(data: Any) -> bool:
    """Whether parsed YAML is a suite file (it names a `bot`; a scenario has a `persona`), whatever the
    file's name: a `suite-http.yaml` next to the scenarios is a suite, not a broken scenario."""
    return isinstance(data, dict) and "bot" in data and "persona" not in data


def document_kind(data: Any, default: str = "scenario") -> str:
    """What parsed YAML holds, by its keys (the first document of a list): suite, criterion, golden (an
    item), scenario, or `default` when the keys say nothing."""
    if is_suite_data(data):
        return "suite"
    first = data[0] if isinstance(data, list) and data else data
    if not isinstance(first, dict):
        return default
    for kind, key, many in (("criterion", "criterion", "criteria"), ("golden", "item_id", "items"),
                            ("scenario", "persona", "scenarios")):  # fmt: skip
        if key in first or isinstance(first.get(many), list):
            return kind
    return default
