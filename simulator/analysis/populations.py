"""Simulated users against real ones (`simulator compare-populations SIM REAL`): the distributions and
rates that show where the simulation is not like reality, each with its interval and a two-sample test,
largest gap first. Scenarios are the unit (stats/cluster_tests.py): repeats of one simulated scenario
are not independent users, and each row's interval and p come from one and the same test.

Gaps are on one 0–1 scale so they can be ranked together: the Kolmogorov–Smirnov distance for
distributions, the absolute difference for rates, the total variation distance for stop reasons.
"""

from __future__ import annotations

__all__ = ["compare_populations"]

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import mean, median

from pydantic import Field

from simulator.analysis.rundata import RunData, load_run
from simulator.analysis.volunteer import volunteered_units
from simulator.config.simulators import simulator_level, simulator_models
from simulator.config.variants import vignette_of
from simulator.models import StrictModel
from simulator.plural import plural
from simulator.record.models import ConversationRecord, Verdict
from simulator.stats.basic import percentile
from simulator.stats.cluster_tests import (
    Clusters,
    clustered_mean,
    clustered_rate_difference,
    permutation_p,
)
from simulator.stats.rates import rate_view
from simulator.stats.twosample import chi_square, ks_statistic, ks_two_sample

PERMUTATIONS = 2000  # scenario permutations for the distribution and category tests (seeded)


class PopulationRow(StrictModel):
    """One measure compared: each side's summary with its interval, the gap, the test and its p-value."""

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


class SimulatorCloseness(StrictModel):
    """One simulated user of a run with several (`user.models`) against the real conversations."""

    level: str
    model: str
    conversations: int
    mean_gap: float  # the mean of its rows' gaps (each on the 0-1 scale): lower is closer to reality
    differing: list[str]  # measures that differ from the real ones at p < alpha
    rows: list[PopulationRow]


class PopulationComparison(StrictModel):
    simulated_run: str
    real_run: str
    alpha: float
    left_out: list[str]
    rows: list[PopulationRow]
    unit: str = (
        "scenarios are the unit: repeats of a simulated scenario are one user, not several (each imported "
        "conversation is its own); every interval and p resamples or counts scenarios"
    )
    # A run with several simulated users: each one against the real conversations, closest first.
    simulators: list[SimulatorCloseness] = Field(default=[])
    closest: str | None = None


def _describe(clusters: Clusters, confidence: float) -> str:
    values = [v for c in clusters for v in c]
    if not values:
        return "no data"
    q1, q3 = percentile(values, 25), percentile(values, 75)
    text = f"median {median(values):.3g} (IQR {q1:.3g}–{q3:.3g}); "
    found = clustered_mean(clusters, confidence)
    if found is None:
        return text + f"mean {mean(values):.3g}; n={len(values)}"
    centre, low, high = found
    scenarios = sum(1 for c in clusters if len(c))
    return text + (
        f"mean {centre:.3g} ({100 * confidence:g}% CI {low:.3g}–{high:.3g} over {plural(scenarios, 'vignette')}); "
        f"n={len(values)}"
    )


def _repeated(*sides: Sequence[Sequence[object]]) -> bool:
    """Some scenario holds more than one value: values are not independent users."""
    return any(len(c) > 1 for side in sides for c in side)


def _distribution(measure: str, unit: str, sim: Clusters, real: Clusters, confidence: float) -> PopulationRow:
    flat_sim, flat_real = [v for c in sim for v in c], [v for c in real for v in c]
    d, p = ks_two_sample(flat_sim, flat_real)
    test = "Kolmogorov–Smirnov (exact)"
    if _repeated(sim, real) and d > 0:
        p = permutation_p(sim, real, ks_statistic, PERMUTATIONS)
        test = f"Kolmogorov–Smirnov D, p permuting scenarios ({PERMUTATIONS})"
    return PopulationRow(
        measure=measure,
        kind="distribution",
        unit=unit,
        simulated=_describe(sim, confidence),
        real=_describe(real, confidence),
        gap=d,
        difference=f"KS D {d:.2f}",
        test=test,
        p=p,
        n_simulated=len(flat_sim),
        n_real=len(flat_real),
    )


def _show_rate(pairs: list[tuple[int, int]], confidence: float) -> str:
    view = rate_view(
        sum(a for a, _ in pairs), sum(b for _, b in pairs), confidence=confidence, per_scenario=pairs
    )
    if view.rate is None or view.clustered is None:
        return "0/0 n/a"
    ci = view.clustered
    scenarios = f" {ci.over}" if view.n > ci.scenarios else ""
    return f"{view.k}/{view.n} {view.rate:.1%} ({100 * ci.low:.1f}%–{100 * ci.high:.1f}%{scenarios})"


def _rate(
    measure: str, unit: str, sim: list[tuple[int, int]], real: list[tuple[int, int]], confidence: float
) -> PopulationRow:
    """Two rates from per-scenario (k, n): the clustered Newcombe interval and its own p (cluster_tests)."""
    k1, n1 = sum(k for k, _ in sim), sum(n for _, n in sim)
    k2, n2 = sum(k for k, _ in real), sum(n for _, n in real)
    low, high, p = clustered_rate_difference(sim, real, confidence)
    diff = (k1 / n1 if n1 else 0.0) - (k2 / n2 if n2 else 0.0)
    return PopulationRow(
        measure=measure,
        kind="rate",
        unit=unit,
        simulated=_show_rate(sim, confidence),
        real=_show_rate(real, confidence),
        gap=abs(diff) if n1 and n2 else 0.0,
        difference=f"sim − real {diff:+.1%} ({100 * confidence:g}% CI {low:+.1%} to {high:+.1%})",
        test="Newcombe difference, vignette-clustered; p from the same interval",
        p=p,
        n_simulated=n1,
        n_real=n2,
    )


def _tvd(reasons: list[str]) -> Callable[[list[float], list[float]], float]:
    def statistic(x: list[float], y: list[float]) -> float:
        a, b = Counter(x), Counter(y)
        return 0.5 * sum(abs(a[i] / max(1, len(x)) - b[i] / max(1, len(y))) for i in range(len(reasons)))

    return statistic


def _stop_reasons(sim: list[list[str]], real: list[list[str]]) -> PopulationRow:
    """Stop reasons per conversation, clustered by scenario: chi-square when every scenario ran once,
    otherwise the total variation distance with p by permuting scenarios."""
    a: Counter[str] = Counter(r for c in sim for r in c)
    b: Counter[str] = Counter(r for c in real for r in c)
    n_sim, n_real = sum(a.values()), sum(b.values())
    reasons = sorted(a.keys() | b.keys())
    code = {r: float(i) for i, r in enumerate(reasons)}
    tvd = _tvd(reasons)([code[r] for c in sim for r in c], [code[r] for c in real for r in c])
    if _repeated(sim, real) and tvd > 0:
        encoded = [[code[r] for r in c] for c in sim], [[code[r] for r in c] for c in real]
        p = permutation_p(*encoded, _tvd(reasons), PERMUTATIONS)
        test, difference = (
            f"total variation, p permuting scenarios ({PERMUTATIONS})",
            f"total variation {tvd:.2f}",
        )
    else:
        stat, dof, p = chi_square([[a[r] for r in reasons], [b[r] for r in reasons]])
        test, difference = (
            "chi-square (Pearson)",
            f"chi-square {stat:.2f} on {dof} df; total variation {tvd:.2f}",
        )

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
        simulated=show(a, n_sim),
        real=show(b, n_real),
        gap=tvd,
        difference=difference,
        test=test,
        p=p,
        n_simulated=n_sim,
        n_real=n_real,
    )


def _failures(verdicts: list[Verdict], ids: set[str] | None = None) -> dict[str, dict[str, list[int]]]:
    """Per criterion, (failures, decided) per scenario: pass and fail verdicts only (of the conversations
    `ids`, when given)."""
    counts: dict[str, dict[str, list[int]]] = {}
    for v in verdicts:
        if ids is not None and v.conversation_id not in ids:
            continue
        if v.result in ("pass", "fail") and v.kind != "metric":
            cell = counts.setdefault(v.criterion_id, {}).setdefault(vignette_of(v.scenario_id), [0, 0])
            cell[0] += v.result == "fail"
            cell[1] += 1
    return counts


def _user_lengths(record: ConversationRecord) -> list[float]:
    return [float(len(m.split())) for t in record.turns if t.role == "user" for m in t.messages]


def _by_scenario(records: list[ConversationRecord]) -> dict[str, list[ConversationRecord]]:
    """Conversations grouped by scenario: the unit of every test (an imported user is its own scenario)."""
    groups: dict[str, list[ConversationRecord]] = {}
    for record in records:
        groups.setdefault(vignette_of(record.scenario_id), []).append(record)
    return groups


def _measures(
    sim: dict[str, list[ConversationRecord]], real: dict[str, list[ConversationRecord]], confidence: float
) -> list[PopulationRow]:
    """The transcript measures (turns, message length, volunteering, stop reasons), scenarios as the unit."""

    def clusters(
        side: dict[str, list[ConversationRecord]], of: Callable[[ConversationRecord], list[float]]
    ) -> list[list[float]]:
        return [[v for r in group for v in of(r)] for group in side.values()]

    def turns(r: ConversationRecord) -> list[float]:
        return [float(len(r.turns))]

    def volunteered(r: ConversationRecord) -> list[float]:
        return [float(volunteered_units(r.turns))]

    def any_volunteered(side: dict[str, list[ConversationRecord]]) -> list[tuple[int, int]]:
        return [(sum(volunteered_units(r.turns) > 0 for r in g), len(g)) for g in side.values()]

    return [
        _distribution("turns per conversation", "turns (user and bot)", clusters(sim, turns), clusters(real, turns), confidence),
        _distribution(
            "user message length", "words per user message", clusters(sim, _user_lengths), clusters(real, _user_lengths),
            confidence,
        ),
        _distribution(
            "information volunteered", "units per conversation", clusters(sim, volunteered), clusters(real, volunteered),
            confidence,
        ),
        _rate(
            "users who volunteer before being asked", "conversations", any_volunteered(sim), any_volunteered(real),
            confidence,
        ),
        _stop_reasons(
            [[r.stop_reason for r in g] for g in sim.values()], [[r.stop_reason for r in g] for g in real.values()]
        ),
    ]  # fmt: skip


def _rows(
    sim: list[ConversationRecord],
    real: list[ConversationRecord],
    sim_fail: dict[str, dict[str, list[int]]],
    real_fail: dict[str, dict[str, list[int]]],
    confidence: float,
) -> list[PopulationRow]:
    """Every measure on both sides, scenarios as the unit, largest gap first."""
    rows = _measures(_by_scenario(sim), _by_scenario(real), confidence)
    for criterion in sorted(sim_fail.keys() & real_fail.keys()):
        a = [(k, n) for k, n in sim_fail[criterion].values()]
        b = [(k, n) for k, n in real_fail[criterion].values()]
        rows.append(
            _rate(f"failure rate: {criterion}", "conversations with a pass/fail verdict", a, b, confidence)
        )
    rows.sort(key=lambda r: (-r.gap, r.p))
    return rows


def _simulators(
    sim_run: RunData,
    sim: list[ConversationRecord],
    real: list[ConversationRecord],
    real_fail: dict[str, dict[str, list[int]]],
    alpha: float,
) -> list[SimulatorCloseness]:
    """Each simulated user of a several-user run against the real conversations, closest first: the
    lowest mean gap over the measures (each on the 0-1 scale), then the fewest that differ."""
    models = simulator_models(sim_run.manifest.suite) if sim_run.manifest.suite is not None else {}
    out = []
    for level, model in models.items():
        mine = [r for r in sim if simulator_level(r.scenario_id) == level]
        if not mine:
            continue
        fail = _failures(sim_run.verdicts, {r.id for r in mine})
        rows = _rows(mine, real, fail, real_fail, 1.0 - alpha)
        out.append(
            SimulatorCloseness(
                level=level,
                model=model,
                conversations=len(mine),
                mean_gap=mean(r.gap for r in rows),
                differing=[r.measure for r in rows if r.p < alpha],
                rows=rows,
            )
        )
    return sorted(out, key=lambda s: (s.mean_gap, len(s.differing)))


def compare_populations(sim_path: Path, real_path: Path, alpha: float = 0.05) -> PopulationComparison:
    """Every measure on both runs (errored conversations left out), largest gap first; with several
    simulated users, each one against the real conversations too, and the closest named."""
    sim_run, real_run = load_run(sim_path), load_run(real_path)
    sim = [r for r in sim_run.conversations if r.stop_reason != "error"]
    real = [r for r in real_run.conversations if r.stop_reason != "error"]
    sim_fail, real_fail = _failures(sim_run.verdicts), _failures(real_run.verdicts)
    rows = _rows(sim, real, sim_fail, real_fail, 1.0 - alpha)
    simulators = _simulators(sim_run, sim, real, real_fail, alpha)
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
        simulated_run=str(sim_path),
        real_run=str(real_path),
        alpha=alpha,
        left_out=left_out,
        rows=rows,
        simulators=simulators,
        closest=simulators[0].level if simulators else None,
    )
