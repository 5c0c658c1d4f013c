"""JSON schemas of the user-facing file formats, for editor completion and validation."""

from __future__ import annotations

__all__ = ["json_schema"]

import importlib
from typing import Any

from simulator.errors import UserError

MODELS = {
    "scenario": "simulator.config.scenario:Scenario",
    "suite": "simulator.config.suite:Suite",
    "criterion": "simulator.judging.criteria:Criterion",
    "golden": "simulator.config.golden:GoldenItem",
    "hazards": "simulator.safety.hazards:HazardLog",
}


def json_schema(kind: str) -> dict[str, Any]:
    module_name, _, name = MODELS[kind].partition(":")
    try:
        model = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"no schema for '{kind}' in this version") from exc
    schema: dict[str, Any] = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema.setdefault("title", name)
    return schema
