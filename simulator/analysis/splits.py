"""Tuned set against held-out set: the key rates side by side, and a gap the intervals cannot explain.

A bot tuned on the scenarios its builders can read may do better there than on scenarios they cannot (the
sealed held-out set, record/seal.py). Each key rate is computed on each set with its scenario-clustered
interval; when the two intervals do not overlap, the gap is flagged as likely overfitting to the visible set.
"""

from __future__ import annotations

__all__ = ["SplitSection", "split_section"]

import dataclasses

from simulator.analysis.outcome import outcome_metrics
from simulator.analysis.rundata import RunData
from simulator.analysis.tables import overall_pass_rate
from simulator.models import StrictModel as _Model
from simulator.record.seal import HELD_OUT
from simulator.stats.rates import RateView


class SplitRow(_Model):
    metric: str
    tuned: RateView
    held_out: RateView
    gap: bool  # the clustered intervals do not overlap


class SplitSection(_Model):
    tuned_scenarios: int
    held_out_scenarios: int
    sealed: bool
    rows: list[SplitRow]
    note: str = (
        "Key rates on the scenarios the bot's builders can read (tuned) and on the sealed held-out ones; "
        "GAP: the two 95% intervals (clustered over vignettes) do not overlap, likely overfitting to the visible set."
    )


def _subset(run: RunData, keep: set[str]) -> RunData:
    conversations = [r for r in run.conversations if r.id in keep]
    return dataclasses.replace(
        run,
        conversations=conversations,
        verdicts=[v for v in run.verdicts if v.conversation_id in keep],
        fidelity=[v for v in run.fidelity if v.conversation_id in keep],
        scenario_order=[s for s in run.scenario_order if any(r.scenario_id == s for r in conversations)],
        cache={},
    )


def _interval(rate: RateView) -> tuple[float, float] | None:
    return None if rate.rate is None else rate.interval


def _apart(a: RateView, b: RateView) -> bool:
    ia, ib = _interval(a), _interval(b)
    return ia is not None and ib is not None and (ia[1] < ib[0] or ib[1] < ia[0])


def split_section(run: RunData) -> SplitSection | None:
    """Tuned against held-out, or None when the run holds no held-out scenario."""
    held = {r.id for r in run.conversations if HELD_OUT in r.tags}
    if not held:
        return None
    tuned_ids = {r.id for r in run.conversations} - held
    tuned, held_out = _subset(run, tuned_ids), _subset(run, held)
    pairs = [("pass rate (conversations)", overall_pass_rate(tuned), overall_pass_rate(held_out))]
    if run.outcome is not None:
        a, b = outcome_metrics(tuned), outcome_metrics(held_out)
        if a is not None and b is not None:
            pairs += [
                ("under-triage (conversations)", a.under_triage, b.under_triage),
                (f"{a.critical} sensitivity (conversations)", a.critical_sensitivity, b.critical_sensitivity),
            ]
    return SplitSection(
        tuned_scenarios=len({r.scenario_id for r in tuned.conversations}),
        held_out_scenarios=len({r.scenario_id for r in held_out.conversations}),
        sealed=not run.manifest.unsealed,
        rows=[SplitRow(metric=m, tuned=t, held_out=h, gap=_apart(t, h)) for m, t, h in pairs],
    )
