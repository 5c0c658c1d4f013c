"""Simulated users against real ones (`simulator compare-populations SIM REAL`): the distributions and
rates that show where the simulation is not like reality, each with its interval and a two-sample test,
largest gap first.

Gaps are on one 0–1 scale so they can be ranked together: the Kolmogorov–Smirnov distance for
distributions, the absolute difference for rates, the total variation distance for stop reasons.
"""

from __future__ import annotations

__all__ = ["PopulationComparison", "PopulationRow", "compare_populations"]

import math
from collections import Counter
from pathlib import Path
from statistics import mean, median, stdev

from pydantic import BaseModel, ConfigDict

from simulator.analysis.rundata import RunData, load_run
from simulator.analysis.stats import percentile, wilson_interval, z_for_confidence
from simulator.analysis.twosample import (
    chi_square,
    fisher_exact,
    ks_two_sample,
    mann_whitney,
    newcombe_difference,
)
from simulator.analysis.volunteer import volunteered_units
from simulator.record.models import ConversationRecord


class PopulationRow(BaseModel):
    """One measure compared: each side's summary with its interval, the gap, the test and its p-value."""

    model_config = ConfigDict(extra="forbid")

    measure: str
    kind: str  # distribution, rate, categories
    unit: str
    simulated: str
    real: str
    gap: float
    difference: str = ""
    test: str
    p: float
    n_simulated: int
    n_real: int


class PopulationComparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    simulated_run: str
    real_run: str
    alpha: float
    left_out: list[str]
    rows: list[PopulationRow]


def _describe(values: list[float]) -> str:
    if not values:
        return "no data"
    centre = mean(values)
    half = (
        z_for_confidence(0.95) * stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    )
    q1, q3 = percentile(values, 25), percentile(values, 75)
    return (
        f"median {median(values):.3g} (IQR {q1:.3g}–{q3:.3g}); mean {centre:.3g} "
        f"(95% CI {centre - half:.3g}–{centre + half:.3g}); n={len(values)}"
    )


def _distribution(measure: str, unit: str, sim: list[float], real: list[float]) -> PopulationRow:
    d, ks_p = ks_two_sample(sim, real)
    _, mw_p = mann_whitney(sim, real)
    return PopulationRow(
        measure=measure,
        kind="distribution",
        unit=unit,
        simulated=_describe(sim),
        real=_describe(real),
        gap=d,
        difference=f"KS D {d:.2f}; Mann–Whitney p {mw_p:.3g}",
        test="Kolmogorov–Smirnov (exact)",
        p=ks_p,
        n_simulated=len(sim),
        n_real=len(real),
    )


def _rate(measure: str, unit: str, k1: int, n1: int, k2: int, n2: int) -> PopulationRow:
    def show(k: int, n: int) -> str:
        if n == 0:
            return "0/0 n/a"
        ci = wilson_interval(k, n)
        return f"{k}/{n} {k / n:.1%} ({ci.percent()})"

    diff = newcombe_difference(k1, n1, k2, n2)
    gap = abs(k1 / n1 - k2 / n2) if n1 and n2 else 0.0
    return PopulationRow(
        measure=measure,
        kind="rate",
        unit=unit,
        simulated=show(k1, n1),
        real=show(k2, n2),
        gap=gap,
        difference=f"sim − real {((k1 / n1 if n1 else 0) - (k2 / n2 if n2 else 0)):+.1%} (95% CI {diff.low:+.1%} to {diff.high:+.1%})",
        test="Fisher exact",
        p=fisher_exact(k1, n1 - k1, k2, n2 - k2),
        n_simulated=n1,
        n_real=n2,
    )


def _stop_reasons(sim: list[ConversationRecord], real: list[ConversationRecord]) -> PopulationRow:
    a: Counter[str] = Counter(r.stop_reason for r in sim)
    b: Counter[str] = Counter(r.stop_reason for r in real)
    reasons = sorted(a.keys() | b.keys())
    tvd = 0.5 * sum(abs(a[r] / max(1, len(sim)) - b[r] / max(1, len(real))) for r in reasons)
    stat, dof, p = chi_square([[a[r] for r in reasons], [b[r] for r in reasons]])

    def show(counts: Counter[str], n: int) -> str:
        return (
            "; ".join(f"{r} {counts[r]}/{n} {counts[r] / n:.0%}" for r in reasons if counts[r])
            if n
            else "no data"
        )

    return PopulationRow(
        measure="stop reasons",
        kind="categories",
        unit="conversations",
        simulated=show(a, len(sim)),
        real=show(b, len(real)),
        gap=tvd,
        difference=f"total variation {tvd:.2f}; chi-square {stat:.2f} on {dof} df",
        test="chi-square (Pearson)",
        p=p,
        n_simulated=len(sim),
        n_real=len(real),
    )


def _failures(run: RunData) -> dict[str, tuple[int, int]]:
    """(failures, decided) per criterion: pass and fail verdicts only."""
    counts: dict[str, list[int]] = {}
    for v in run.verdicts:
        if v.result in ("pass", "fail") and v.kind != "metric":
            row = counts.setdefault(v.criterion_id, [0, 0])
            row[0] += v.result == "fail"
            row[1] += 1
    return {k: (f, n) for k, (f, n) in counts.items()}


def _user_lengths(records: list[ConversationRecord]) -> list[float]:
    return [len(m.split()) for r in records for t in r.turns if t.role == "user" for m in t.messages]


def compare_populations(sim_path: Path, real_path: Path, alpha: float = 0.05) -> PopulationComparison:
    """Every measure on both runs (errored conversations left out), largest gap first."""
    sim_run, real_run = load_run(sim_path), load_run(real_path)
    sim = [r for r in sim_run.conversations if r.stop_reason != "error"]
    real = [r for r in real_run.conversations if r.stop_reason != "error"]
    sim_volunteered = [float(volunteered_units(r.turns)) for r in sim]
    real_volunteered = [float(volunteered_units(r.turns)) for r in real]
    rows = [
        _distribution(
            "turns per conversation",
            "turns (user and bot)",
            [len(r.turns) for r in sim],
            [len(r.turns) for r in real],
        ),
        _distribution(
            "user message length", "words per user message", _user_lengths(sim), _user_lengths(real)
        ),
        _distribution("information volunteered", "units per conversation", sim_volunteered, real_volunteered),
        _rate(
            "users who volunteer before being asked",
            "conversations",
            sum(v > 0 for v in sim_volunteered),
            len(sim),
            sum(v > 0 for v in real_volunteered),
            len(real),
        ),
        _stop_reasons(sim, real),
    ]
    sim_fail, real_fail = _failures(sim_run), _failures(real_run)
    for criterion in sorted(sim_fail.keys() & real_fail.keys()):
        (k1, n1), (k2, n2) = sim_fail[criterion], real_fail[criterion]
        rows.append(
            _rate(f"failure rate: {criterion}", "conversations with a pass/fail verdict", k1, n1, k2, n2)
        )
    rows.sort(key=lambda r: (-r.gap, r.p))
    left_out = [
        f"{name}: {n} errored conversations"
        for name, n in (
            ("simulated", len(sim_run.conversations) - len(sim)),
            ("real", len(real_run.conversations) - len(real)),
        )
        if n
    ]
    only = sorted(sim_fail.keys() ^ real_fail.keys())
    if only:
        left_out.append(f"criteria judged on one side only (no comparison): {', '.join(only)}")
    left_out.append(
        "failure rates count pass and fail verdicts; not applicable, errors and not judged are left out"
    )
    return PopulationComparison(
        simulated_run=str(sim_path), real_run=str(real_path), alpha=alpha, left_out=left_out, rows=rows
    )
