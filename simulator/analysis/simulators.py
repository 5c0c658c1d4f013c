"""Several simulated users (`user.models`): every key rate per simulator, the range across them, which bot
failures are robust (seen under every simulator) and which appear under one only, and a clustered test of
whether the simulators differ. A failure under one simulator only is "likely simulator-induced" when that
test finds the bot fails more under that simulator than under each other one (Holm, α = 0.05); otherwise
it is "no evidence either way" (an intermittent bot flaw often fails under one simulator by chance).

The unit is the conversation for rates (judged conversations: errors and not-judged left out), the
scenario for the attribution (a scenario fails under a simulator when any of its repeats failed there), and
the pair (the same scenario and repeat under two simulators) for the test: a clustered McNemar test over
base scenarios (stats/clustered.py), Holm-adjusted over the pairs of simulators (stats/multiple.py).
"""

from __future__ import annotations

__all__ = ["SimulatorsSection", "induced_by", "pair_tests", "simulators_section"]

import dataclasses
import itertools
from collections import defaultdict
from typing import Literal

from simulator.analysis.outcome import outcome_metrics
from simulator.analysis.rundata import RunData
from simulator.analysis.tables import conversation_status
from simulator.config.simulators import simulator_level, simulator_models, without_simulator
from simulator.config.variants import vignette_of
from simulator.models import ResultModel
from simulator.stats.clustered import clustered_mcnemar
from simulator.stats.evidence import ALPHA
from simulator.stats.multiple import holm
from simulator.stats.rates import RateView, rate_view

AttributionKind = Literal["robust", "one simulator", "one simulator, no evidence", "some simulators"]


class SimulatorRow(ResultModel):
    """One simulated user's key rates (unit: conversations)."""

    level: str
    model: str
    conversations: int
    failed: RateView  # judged conversations with a failed gating verdict
    under_triage: RateView | None
    critical_sensitivity: RateView | None


class MetricRange(ResultModel):
    """A key rate's range across the simulators: lowest and highest, and who gave each."""

    metric: str
    low: float
    high: float
    lowest: str
    highest: str

    @property
    def spread(self) -> float:
        return self.high - self.low


class ScenarioAttribution(ResultModel):
    """A scenario the bot failed under at least one simulator, and under which."""

    scenario: str  # the scenario id without its simulator level
    failed_under: list[str]
    passed_under: list[str]  # simulators under which every judged repeat passed
    attribution: AttributionKind
    # For a failure under one simulator only, labelled likely simulator-induced: the largest Holm p of
    # the clustered tests finding that the bot fails more under that simulator than under each other one.
    p_value: float | None = None


class SimulatorTest(ResultModel):
    """Clustered McNemar over the pairs (scenario, repeat) judged under both simulators."""

    a: str
    b: str
    pairs: int
    only_a_failed: int
    only_b_failed: int
    scenarios: int  # clusters (base scenarios) in the test
    p: float
    p_holm: float


class SimulatorsSection(ResultModel):
    simulators: list[SimulatorRow]
    ranges: list[MetricRange]
    scenarios: list[ScenarioAttribution]
    tests: list[SimulatorTest]
    robust: int
    one_simulator: int


def _statuses(run: RunData) -> dict[str, str]:
    grouped = run.verdicts_by_conversation()
    return {r.id: conversation_status(r, grouped.get(r.id, [])) for r in run.conversations}


def _row(run: RunData, level: str, model: str, status: dict[str, str]) -> SimulatorRow:
    mine = [r for r in run.conversations if simulator_level(r.scenario_id) == level]
    ids = {r.id for r in mine}
    subset = dataclasses.replace(
        run,
        conversations=mine,
        verdicts=[v for v in run.verdicts if v.conversation_id in ids],
        cache={},
    )
    per_scenario: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in mine:
        if status[record.id] in ("pass", "fail"):
            cell = per_scenario[vignette_of(record.scenario_id)]
            cell[0] += int(status[record.id] == "fail")
            cell[1] += 1
    k, n = sum(c[0] for c in per_scenario.values()), sum(c[1] for c in per_scenario.values())
    metrics = outcome_metrics(subset)
    return SimulatorRow(
        level=level,
        model=model,
        conversations=len(mine),
        failed=rate_view(k, n, per_scenario=[(a, b) for a, b in per_scenario.values()]),
        under_triage=metrics.under_triage if metrics else None,
        critical_sensitivity=metrics.critical_sensitivity if metrics else None,
    )


def _ranges(rows: list[SimulatorRow]) -> list[MetricRange]:
    out = []
    for metric, get in (
        ("failed conversations", lambda r: r.failed),
        ("under-triage", lambda r: r.under_triage),
        ("critical sensitivity", lambda r: r.critical_sensitivity),
    ):
        values = [(get(r).rate, r.level) for r in rows if get(r) is not None and get(r).rate is not None]
        if len(values) < 2:
            continue
        (low, lowest), (high, highest) = min(values), max(values)
        out.append(MetricRange(metric=metric, low=low, high=high, lowest=lowest, highest=highest))
    return out


def induced_by(level: str, levels: list[str], tests: list[SimulatorTest]) -> float | None:
    """The test behind "likely simulator-induced" for a failure seen under `level` only: the clustered
    McNemar test (Holm over the pairs of simulators) must find that the bot fails more under `level`
    than under each other simulator. Returns the largest Holm p of those pairs when every one is below
    ALPHA, else None. So an intermittent bot flaw that fails alike under every simulator is labelled
    simulator-induced only when that test errs, at most ALPHA of the time (tests/test_verdict_words.py)."""
    worst = 0.0
    for other in levels:
        if other == level:
            continue
        test = next((t for t in tests if {t.a, t.b} == {level, other}), None)
        if test is None:
            return None
        own, theirs = (
            (test.only_a_failed, test.only_b_failed)
            if test.a == level
            else (test.only_b_failed, test.only_a_failed)
        )
        if test.p_holm >= ALPHA or own <= theirs:
            return None
        worst = max(worst, test.p_holm)
    return worst


def _attributions(
    run: RunData, levels: list[str], status: dict[str, str], tests: list[SimulatorTest]
) -> list[ScenarioAttribution]:
    failed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    judged: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in run.conversations:
        level = simulator_level(record.scenario_id)
        if level is None or status[record.id] not in ("pass", "fail"):
            continue
        scenario = without_simulator(record.scenario_id)
        judged[scenario][level] += 1
        if status[record.id] == "fail":
            failed[scenario][level] += 1
    out = []
    for scenario in sorted(failed):
        under = [lv for lv in levels if failed[scenario].get(lv)]
        passed = [lv for lv in levels if judged[scenario].get(lv) and not failed[scenario].get(lv)]
        p = None
        kind: AttributionKind = "robust" if len(under) == len(levels) else "some simulators"
        if len(under) == 1:
            p = induced_by(under[0], levels, tests)
            kind = "one simulator" if p is not None else "one simulator, no evidence"
        out.append(
            ScenarioAttribution(
                scenario=scenario, failed_under=under, passed_under=passed, attribution=kind, p_value=p
            )
        )
    return out


def _tests(run: RunData, levels: list[str], status: dict[str, str]) -> list[SimulatorTest]:
    by_pair: dict[tuple[str, int], dict[str, bool]] = defaultdict(dict)
    for record in run.conversations:
        level = simulator_level(record.scenario_id)
        if level is not None and status[record.id] in ("pass", "fail"):
            by_pair[(without_simulator(record.scenario_id), record.repeat)][level] = (
                status[record.id] == "fail"
            )
    return pair_tests(by_pair, levels)


def pair_tests(by_pair: dict[tuple[str, int], dict[str, bool]], levels: list[str]) -> list[SimulatorTest]:
    """The clustered McNemar test of each pair of simulators, from {(scenario, repeat): {level: failed}},
    clustered by vignette and Holm-adjusted over the pairs."""
    tests = []
    for a, b in itertools.combinations(levels, 2):
        clusters: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        pairs = 0
        for (scenario, _), fails in by_pair.items():
            if a not in fails or b not in fails:
                continue
            pairs += 1
            cell = clusters[vignette_of(scenario)]
            cell[0] += int(fails[a] and not fails[b])
            cell[1] += int(fails[b] and not fails[a])
        only_a, only_b = sum(c[0] for c in clusters.values()), sum(c[1] for c in clusters.values())
        p = clustered_mcnemar([(x, y) for x, y in clusters.values()])
        tests.append(SimulatorTest(a=a, b=b, pairs=pairs, only_a_failed=only_a, only_b_failed=only_b,
                                   scenarios=len(clusters), p=p, p_holm=p))  # fmt: skip
    for test, adjusted in zip(tests, holm([t.p for t in tests]), strict=True):
        test.p_holm = adjusted
    return tests


def simulators_section(run: RunData) -> SimulatorsSection | None:
    """The per-simulator section of a run whose suite names several user models, else None."""
    models = simulator_models(run.manifest.suite) if run.manifest.suite is not None else {}
    if not models:
        return None
    status = _statuses(run)
    levels = list(models)
    rows = [_row(run, level, model, status) for level, model in models.items()]
    tests = _tests(run, levels, status)
    scenarios = _attributions(run, levels, status, tests)
    return SimulatorsSection(
        simulators=rows,
        ranges=_ranges(rows),
        scenarios=scenarios,
        tests=tests,
        robust=sum(s.attribution == "robust" for s in scenarios),
        one_simulator=sum(s.attribution == "one simulator" for s in scenarios),
    )
