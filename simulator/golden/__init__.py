"""Golden sets: single-turn items with a reference answer and assertions, scored without an LLM judge."""

from __future__ import annotations

from simulator.golden.compare import CompareReport, compare_runs
from simulator.golden.items import GoldenItem, GoldenSet, load_items
from simulator.golden.report import GoldenReport, build_report
from simulator.golden.runner import GoldenRun, RunOptions, load_run, run_golden
from simulator.golden.scoring import Gate, ItemResult, score_reply

__all__ = [
    "CompareReport",
    "Gate",
    "GoldenItem",
    "GoldenReport",
    "GoldenRun",
    "GoldenSet",
    "ItemResult",
    "RunOptions",
    "build_report",
    "compare_runs",
    "load_items",
    "load_run",
    "run_golden",
    "score_reply",
]
