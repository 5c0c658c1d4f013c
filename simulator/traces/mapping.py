"""The mapping file for plain transcripts: which field holds what (a small YAML file, every key optional)."""

from __future__ import annotations

__all__ = ["Mapping", "load_mapping"]

from pathlib import Path

from pydantic import Field

from simulator.config.yamlfile import load_model_file
from simulator.models import StrictModel


def _roles() -> dict[str, list[str]]:
    return {
        "user": ["user", "human", "patient", "customer", "caller"],
        "assistant": ["assistant", "bot", "ai", "agent", "model"],
        "system": ["system", "developer"],
        "tool": ["tool", "function"],
    }


class Mapping(StrictModel):
    """Field names in a JSONL or CSV transcript. A JSONL line with `messages` is one conversation; any
    other line (and every CSV row) is one message, grouped by `conversation`."""

    conversation: str = "conversation_id"
    messages: str = "messages"
    role: str = "role"
    text: str = "content"
    time: str = "timestamp"
    model: str = "model"
    tags: str = "tags"
    stop_reason: str = "stop_reason"
    # Either the name of a field holding an object, or {key: field} for flat fields (CSV columns).
    expected: str | dict[str, str] = "expected"
    final_state: str | dict[str, str] = "final_state"
    # Source role names for each of our roles (case-insensitive).
    roles: dict[str, list[str]] = Field(default_factory=_roles)

    def role_of(self, value: object) -> str | None:
        text = str(value or "").strip().lower()
        return next((ours for ours, names in self.roles.items() if text in (n.lower() for n in names)), None)


def load_mapping(path: Path | None) -> Mapping:
    """The mapping in `path`, or the defaults; a bad file is one UserError naming file, line and field."""
    if path is None:
        return Mapping()
    return load_model_file(
        path,
        Mapping,
        title="invalid mapping file",
        missing=f"--mapping {path}: no such file; pass a YAML file of field names",
    )
