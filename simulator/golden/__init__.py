"""Golden sets: single-turn items with a reference answer and assertions, scored without an LLM judge."""

from __future__ import annotations

import importlib
from typing import Any

# Public name -> module; imported on first use so `simulator --help` does not pay for the package.
_EXPORTS = {
    "CompareReport": "compare",
    "compare_runs": "compare",
    "GoldenItem": "items",
    "GoldenSet": "items",
    "load_items": "items",
    "GoldenReport": "report",
    "build_report": "report",
    "GoldenRun": "runner",
    "RunOptions": "runner",
    "load_run": "runner",
    "run_golden": "runner",
    "Gate": "scoring",
    "ItemResult": "scoring",
    "score_reply": "scoring",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'simulator.golden' has no attribute {name!r}")
    return getattr(importlib.import_module(f"simulator.golden.{_EXPORTS[name]}"), name)
