"""Judging through the API: a stored run judged again (changed criteria or judge model), two runs' bots
judged side by side, the judge set a live collector uses, and golden items scored without a judge."""

from __future__ import annotations

__all__ = [
    "GoldenOptions",
    "JudgeStage",
    "RejudgeOptions",
    "common_conversations",
    "judge_pairs",
    "judge_run",
    "make_judge_stage",
    "pairwise_criterion",
    "prepare_rejudge",
    "render_transcript_block",
    "run_golden",
    "stored_suite",
]

from simulator.engine.golden import GoldenOptions, run_golden
from simulator.engine.pairwise import common_conversations, judge_pairs, pairwise_criterion
from simulator.engine.rejudge import RejudgeOptions, prepare_rejudge, stored_suite
from simulator.engine.runner import judge_run
from simulator.judging.prompt import render_transcript_block
from simulator.judging.stage import JudgeStage, make_judge_stage
