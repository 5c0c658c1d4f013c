"""Compare two runs of the same scenarios: tested at the scenario level (clustered McNemar and the exact sign
test over scenarios), with the conversation-level McNemar beside it, a difference interval that resamples
scenarios like the decision, and flipped cases.

Repeats of a scenario are correlated, so the decision (better / worse / no significant change) is taken
with scenarios as the unit; the conversation-level p-value is shown for reference only.
"""

from __future__ import annotations

__all__ = ["Flip", "PairedMetric", "RunComparison", "compare_loaded", "compare_runs", "config_differences"]

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from simulator.analysis.golden import Gate, golden_items, golden_section
from simulator.analysis.golden_compare import GoldenComparison, golden_comparison
from simulator.analysis.outcome import actual_outcome, outcome_source
from simulator.analysis.rundata import RunData, load_run, short_hash
from simulator.analysis.tables import conversation_status
from simulator.config.variants import vignette_of
from simulator.errors import UserError
from simulator.models import StrictModel as _Model
from simulator.models import empty_list
from simulator.plural import plural
from simulator.record.index import is_matrix, matrix_not_one_run
from simulator.record.models import Verdict
from simulator.record.selection import by_item
from simulator.stats.basic import mcnemar_exact, paired_bootstrap
from simulator.stats.clustered import (
    clustered_mcnemar,
    clustered_paired_bootstrap,
    detectable_difference,
    scenarios_to_reach,
)
from simulator.stats.rates import RateView, rate_view

COMPARISON_SCHEMA_VERSION = 2  # 2: scenario-level tests decide `change`; p_value is per conversation
_VOLATILE = ("run_id", "created_at", "ended_at", "status", "counts", "sessions", "judge_sets", "planned")


class Flip(_Model):
    """A conversation whose result changed between A and B, with both sides' reasoning and evidence."""

    conversation_id: str
    direction: Literal["regression", "improvement"]
    a_result: str
    b_result: str
    a_reasoning: str = ""
    b_reasoning: str = ""
    a_evidence: list[str] = Field(default_factory=empty_list)
    b_evidence: list[str] = Field(default_factory=empty_list)


class PairedMetric(_Model):
    """One pass/fail measure on the conversations both runs judged: who got which right, and is it chance?"""

    name: str
    critical: bool
    pairs: int
    excluded: int
    both_pass: int
    both_fail: int
    only_a: int  # A passed, B failed: a regression of B
    only_b: int  # B passed, A failed: an improvement
    a_rate: RateView
    b_rate: RateView
    p_value: float  # McNemar exact over conversations (repeats as independent): for reference only
    diff: float
    # 95% bootstrap interval of `diff` resampling scenarios (all repeats together), like the decision.
    diff_low: float
    diff_high: float
    change: Literal["better", "worse", "no significant change", "no pairs"]
    flips: list[Flip]
    scenarios: int = 0
    scenarios_worse: int = 0
    scenarios_better: int = 0
    clustered_p_value: float = 1.0  # clustered McNemar over scenarios: decides `change`
    sign_p_value: float = 1.0  # exact sign test over the scenarios whose pass rate changed
    detectable: float | None = None
    power_note: str = ""
    # Set when the difference interval excludes 0 but the scenario-level test did not decide a change.
    interval_note: str = ""


class ScenarioDelta(_Model):
    """One scenario's conversation pass rate in A and in B."""

    scenario_id: str
    a: RateView
    b: RateView
    diff: float | None


class ConfigDifference(_Model):
    key: str
    a: str
    b: str


class RunComparison(_Model):
    """Everything `simulator compare` prints; B is the candidate, A the baseline."""

    schema_version: int = COMPARISON_SCHEMA_VERSION
    a: str
    b: str
    alpha: float
    matched: int
    vignettes: int = 0  # distinct vignettes of the matched conversations: the unit of every test
    only_in_a: list[str]
    only_in_b: list[str]
    config_differences: list[ConfigDifference]
    metrics: list[PairedMetric]
    scenarios: list[ScenarioDelta]
    scenario_diff: float | None
    scenario_diff_low: float | None
    scenario_diff_high: float | None
    regressions: list[str]
    # Critical metrics with nothing, or less than half, to compare (errored or unjudged on a side): a
    # regression there could not be seen, so `--fail-on-regression` cannot pass on them (undecidable).
    undecided: list[str] = Field(default_factory=empty_list)
    # Present when both runs hold golden items: scorers side by side, intents at zero.
    golden: GoldenComparison | None = None
    # The outcome sources each run's outcome figures rest on (A, B); empty without outcome levels.
    outcome_source: list[list[str]] = Field(default_factory=empty_list)
    # Said when A and B are one folder (a typo, or two judge sets of one run): never a silent comparison.
    same_folder: str | None = None


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: str(value)}


def _describe(run: RunData) -> dict[str, str]:
    manifest = run.manifest.model_dump(mode="json", exclude=set(_VOLATILE))
    prompts = manifest.pop("prompts", {}) or {}
    manifest.pop("scenarios", None)
    flat = _flatten(manifest)
    for name, prompt in prompts.items():
        flat[f"prompts.{name}.hash"] = (
            str(prompt.get("hash", "")) if isinstance(prompt, dict) else str(prompt)
        )
    for entry in run.manifest.scenarios:
        if entry.sha256:
            flat[f"scenario_files.{entry.id}"] = short_hash(entry.sha256)
    flat["judge_set"] = short_hash(run.judge_set)
    if run.outcome is not None:  # what the outcome figures rest on (docs/outcome-sources.md)
        flat["outcome_source"] = ", ".join(outcome_source(run))
    return flat


def config_differences(a: RunData, b: RunData) -> list[ConfigDifference]:
    """Every configuration key whose value differs (model, temperature, prompts, files, judge set...)."""
    left, right = _describe(a), _describe(b)
    diffs = []
    for key in sorted(set(left) | set(right)):
        if key in ("suite_file", "suite.name") or left.get(key) == right.get(key):
            continue
        diffs.append(
            ConfigDifference(key=key, a=left.get(key, "(absent)")[:120], b=right.get(key, "(absent)")[:120])
        )
    return diffs


def _check_same_scenarios(a: RunData, b: RunData) -> None:
    left = set(a.scenario_order)
    right = set(b.scenario_order)
    if left == right:
        return
    only_a, only_b = sorted(left - right), sorted(right - left)
    raise UserError(
        "cannot compare: the runs cover different scenario sets, so a difference could come from the test "
        f"rather than the bot (only in A: {', '.join(only_a) or 'none'}; only in B: {', '.join(only_b) or 'none'}). "
        "Run both with the same suite and tags; add new scenarios in a separate step."
    )


def _quotes(verdict: Verdict | None) -> list[str]:
    return [ev.quote + ("" if ev.found else " (NOT FOUND)") for ev in verdict.evidence] if verdict else []


def _paired(
    name: str,
    critical: bool,
    pairs: list[tuple[str, int | None, int | None]],
    alpha: float,
    details: dict[str, tuple[Verdict | None, Verdict | None]],
    results: Mapping[str, tuple[str, str]],
    scenario_of: Mapping[str, str],
) -> PairedMetric:
    usable = [(cid, x, y) for cid, x, y in pairs if x is not None and y is not None]
    scenario_level = _scenario_level(
        [(scenario_of.get(cid, cid), x or 0, y or 0) for cid, x, y in usable], alpha
    )
    a_scores = [int(x or 0) for _, x, _ in usable]
    b_scores = [int(y or 0) for _, _, y in usable]
    only_a = sum(1 for x, y in zip(a_scores, b_scores, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a_scores, b_scores, strict=True) if y and not x)
    p_value = mcnemar_exact(only_a, only_b)
    if usable:
        # The interval resamples scenarios, as the clustered McNemar test that decides `change` counts them.
        by_scenario: dict[str, list[float]] = {}
        for (cid, _, _), x, y in zip(usable, a_scores, b_scores, strict=True):
            by_scenario.setdefault(scenario_of.get(cid, cid), []).append(float(y - x))
        diff = (sum(b_scores) - sum(a_scores)) / len(usable)
        low, high = clustered_paired_bootstrap(list(by_scenario.values()))
    else:
        diff = low = high = 0.0
    change: Literal["better", "worse", "no significant change", "no pairs"] = "no significant change"
    if not usable:
        change = "no pairs"  # nothing judged on both sides: no evidence either way, not "no change"
    elif scenario_level["clustered_p_value"] < alpha and only_a != only_b:
        change = "worse" if only_a > only_b else "better"
    note = ""
    if change == "no significant change" and (low > 0 or high < 0):
        note = (
            f"the interval excludes 0 but {scenario_level['scenarios']} vignettes do not establish a change "
            f"(clustered McNemar p={scenario_level['clustered_p_value']:.3g} ≥ α={alpha:g}): it describes these "
            "vignettes, not the bot in general"
        )
    return PairedMetric(
        interval_note=note,
        name=name,
        critical=critical,
        pairs=len(usable),
        excluded=len(pairs) - len(usable),
        both_pass=sum(1 for x, y in zip(a_scores, b_scores, strict=True) if x and y),
        both_fail=sum(1 for x, y in zip(a_scores, b_scores, strict=True) if not x and not y),
        only_a=only_a,
        only_b=only_b,
        a_rate=_side_rate(usable, a_scores, scenario_of),
        b_rate=_side_rate(usable, b_scores, scenario_of),
        p_value=p_value,
        diff=diff,
        diff_low=low,
        diff_high=high,
        change=change,
        flips=_flips(usable, details, results),
        **scenario_level,
    )


def _side_rate(
    usable: list[tuple[str, int, int]], scores: list[int], cluster_of: Mapping[str, str]
) -> RateView:
    """One side's pass rate over the paired conversations, clustered over vignettes like the report's."""
    per: dict[str, list[int]] = {}
    for (cid, _, _), score in zip(usable, scores, strict=True):
        cell = per.setdefault(cluster_of.get(cid, cid), [0, 0])
        cell[0] += score
        cell[1] += 1
    counts = [(k, n) for k, n in per.values()]
    return rate_view(sum(scores), len(scores), counts="successes", per_scenario=counts)


def _flips(
    usable: list[tuple[str, int, int]],
    details: dict[str, tuple[Verdict | None, Verdict | None]],
    results: Mapping[str, tuple[str, str]],
) -> list[Flip]:
    """The pairs whose result changed between A and B, regressions first, each with both sides' reasons."""
    flips = []
    for cid, x, y in usable:
        if x == y:
            continue
        va, vb = details.get(cid, (None, None))
        ra, rb = results.get(cid, ("pass" if x else "fail", "pass" if y else "fail"))
        flips.append(
            Flip(
                conversation_id=cid,
                direction="regression" if x else "improvement",
                a_result=ra,
                b_result=rb,
                a_reasoning=va.reasoning if va else "",
                b_reasoning=vb.reasoning if vb else "",
                a_evidence=_quotes(va),
                b_evidence=_quotes(vb),
            )
        )
    flips.sort(key=lambda f: (f.direction != "regression", f.conversation_id))
    return flips


def _scenario_level(triples: list[tuple[str, int, int]], alpha: float) -> dict[str, Any]:
    """The scenario-level tests of one metric, and whether the case set is too small to show a change."""
    cells: dict[str, list[int]] = {}
    for scenario, x, y in triples:
        cell = cells.setdefault(scenario, [0, 0, 0])  # only A passed, only B passed, pairs
        cell[0] += int(x == 1 and y == 0)
        cell[1] += int(y == 1 and x == 0)
        cell[2] += 1
    diffs = [(c - b) / n for b, c, n in cells.values()]
    worse, better = sum(d < 0 for d in diffs), sum(d > 0 for d in diffs)
    need_mcnemar, need_sign = scenarios_to_reach(alpha)
    detectable, observed = detectable_difference(diffs, alpha)
    g = len(cells)
    if g < need_mcnemar:
        note = (
            f"too few vignettes: {g} cannot show any difference at α={alpha:g}; at least {need_mcnemar} "
            f"must change in the same direction ({need_sign} for the exact sign test)"
        )
    else:
        spread = "observed" if observed else "assumed 0.5"
        note = (
            f"{plural(g, 'vignette')} can detect a mean change of about {100 * detectable:.0f} points in per-vignette "
            f"pass rate (80% power, {spread} vignette SD); smaller changes would likely be missed"
        )
    return {
        "scenarios": g,
        "scenarios_worse": worse,
        "scenarios_better": better,
        "clustered_p_value": clustered_mcnemar([(b, c) for b, c, _ in cells.values()]),
        "sign_p_value": mcnemar_exact(worse, better),
        "detectable": detectable if g >= need_mcnemar else None,
        "power_note": note,
    }


def _score(result: str | None) -> int | None:
    return {"pass": 1, "fail": 0}.get(result or "")


def _outcome_metrics(
    a: RunData, b: RunData, shared: list[str], alpha: float, scenario_of: Mapping[str, str]
) -> list[PairedMetric]:
    config = a.outcome
    if config is None or b.outcome is None or b.outcome.levels != config.levels:
        return []
    levels = config.levels
    rank = {level: i for i, level in enumerate(levels)}
    critical = config.critical or levels[-1]
    a_rec = {r.id: r for r in a.conversations}
    b_rec = {r.id: r for r in b.conversations}
    under, escalated = [], []
    results: dict[str, tuple[str, str]] = {}
    for cid in shared:
        expected = a.expected.get(a_rec[cid].scenario_id, {}).get(config.key)
        if expected not in rank:
            continue
        acts = [actual_outcome(run, rec[cid]) for run, rec in ((a, a_rec), (b, b_rec))]
        results[cid] = (acts[0], acts[1])
        # No usable decision on a case expected above the lowest level counts as under-triage (as in reports).
        scores = [
            None if x == "error" else int(not (rank[x] < rank[expected] if x in rank else rank[expected] > 0))
            for x in acts
        ]
        under.append((cid, scores[0], scores[1]))
        if rank[expected] >= rank[critical]:
            esc = [None if x == "error" else int(x in rank and rank[x] >= rank[critical]) for x in acts]
            escalated.append((cid, esc[0], esc[1]))
    return [
        _paired(f"outcome: {critical} escalated", True, escalated, alpha, {}, results, scenario_of),
        _paired("outcome: not under-triaged", True, under, alpha, {}, results, scenario_of),
    ]


def _golden_metrics(
    a: RunData, b: RunData, alpha: float, gate: Gate | None
) -> tuple[GoldenComparison | None, list[PairedMetric]]:
    """The golden table, and the paired test on item verdicts (pass^k over each item's samples) when the
    runs sampled items more than once (with one sample it is the conversation test)."""
    section_a, section_b = golden_section(a, gate), golden_section(b, gate)
    if section_a is None or section_b is None:
        return None, []
    paired: list[PairedMetric] = []
    if a.runs > 1 or b.runs > 1:
        items_b = {item.item_id: item for item in golden_items(b)}
        shared = [(item, items_b[item.item_id]) for item in golden_items(a) if item.item_id in items_b]
        pairs = [(x.item_id, _score(x.verdict), _score(y.verdict)) for x, y in shared]
        results = {x.item_id: (x.verdict, y.verdict) for x, y in shared}
        own = {x.item_id: x.item_id for x, _ in shared}  # an item is its own scenario: its own cluster
        paired.append(_paired("golden items (pass^k)", False, pairs, alpha, {}, results, own))
    return golden_comparison(section_a, section_b), paired


def compare_runs(
    a_path: Path,
    b_path: Path,
    alpha: float = 0.05,
    judge_set_a: str | None = None,
    judge_set_b: str | None = None,
    gate: Gate | None = None,
) -> RunComparison:
    """Compare run B (candidate) with run A (baseline); refuse when their scenario sets differ."""
    for path in (a_path, b_path):
        if is_matrix(path):
            raise matrix_not_one_run(path, "compare")
    found = compare_loaded(load_run(a_path, judge_set_a), load_run(b_path, judge_set_b), alpha, gate)
    if a_path.resolve() != b_path.resolve():
        return found
    same = (
        " and judge set: every difference is 0 by construction; name two different runs"
        if judge_set_a == judge_set_b
        else ": the same conversations, judged by two judge sets"
    )
    return found.model_copy(update={"same_folder": "A and B are the same folder" + same})


def _status_metric(
    a: RunData, b: RunData, shared: list[str], alpha: float, scenario_of: Mapping[str, str]
) -> tuple[PairedMetric, Mapping[str, str], Mapping[str, str]]:
    """The paired test on whole-conversation results, and each run's status per conversation."""
    a_status = {
        r.id: conversation_status(r, a.verdicts_by_conversation().get(r.id, [])) for r in a.conversations
    }
    b_grouped = b.verdicts_by_conversation()
    b_status = {r.id: conversation_status(r, b_grouped.get(r.id, [])) for r in b.conversations}
    metric = _paired(
        "conversation passes",
        False,
        [(cid, _score(a_status[cid]), _score(b_status[cid])) for cid in shared],
        alpha,
        {},
        {cid: (a_status[cid], b_status[cid]) for cid in shared},
        scenario_of,
    )
    return metric, a_status, b_status


def _criterion_metrics(
    a: RunData, b: RunData, shared: list[str], alpha: float, scenario_of: Mapping[str, str]
) -> list[PairedMetric]:
    """One paired test per criterion judged in both runs (text metrics excluded)."""
    a_verdicts, b_verdicts = by_item(a.verdicts), by_item(b.verdicts)
    # Text metrics are scores that gate nothing: no pass/fail to pair.
    scored = {v.criterion_id for v in [*a.verdicts, *b.verdicts] if v.kind == "metric"}
    criteria = sorted(({c for _, c in a_verdicts} & {c for _, c in b_verdicts}) - scored)
    severity = {v.criterion_id: v.severity for v in [*a.verdicts, *b.verdicts]}
    metrics = []
    for criterion in criteria:
        pairs, details, results = [], {}, {}
        for cid in shared:
            va, vb = a_verdicts.get((cid, criterion)), b_verdicts.get((cid, criterion))
            if va is None and vb is None:
                continue
            pairs.append((cid, _score(va.result if va else None), _score(vb.result if vb else None)))
            details[cid] = (va, vb)
            results[cid] = (va.result if va else "missing", vb.result if vb else "missing")
        critical = severity.get(criterion) == "critical" or criterion.startswith("outcome.")
        metrics.append(_paired(criterion, critical, pairs, alpha, details, results, scenario_of))
    return metrics


def _rate_of(status: Mapping[str, str], ids: list[str]) -> RateView:
    passed = sum(1 for i in ids if status.get(i) == "pass")
    judged = sum(1 for i in ids if status.get(i) in ("pass", "fail"))
    return rate_view(passed, judged, counts="successes")


def _scenario_deltas(
    order: list[str],
    shared: list[str],
    scenario_of: Mapping[str, str],
    a_status: Mapping[str, str],
    b_status: Mapping[str, str],
) -> tuple[list[ScenarioDelta], list[float], list[float]]:
    """Per-scenario pass rates in A and B, and the paired rates of the scenarios judged in both."""
    scenarios = []
    a_pairs, b_pairs = [], []
    for scenario in order:
        ids = [cid for cid in shared if scenario_of[cid] == scenario]
        ra, rb = _rate_of(a_status, ids), _rate_of(b_status, ids)
        diff = None if ra.rate is None or rb.rate is None else rb.rate - ra.rate
        if diff is not None:
            a_pairs.append(ra.rate or 0.0)
            b_pairs.append(rb.rate or 0.0)
        scenarios.append(ScenarioDelta(scenario_id=scenario, a=ra, b=rb, diff=diff))
    return scenarios, a_pairs, b_pairs


def _regressions(metrics: list[PairedMetric]) -> list[str]:
    """One line per critical metric that got significantly worse."""
    return [
        f"{m.name}: {m.only_a} regressions vs {m.only_b} improvements in {m.pairs} pairs; "
        f"{m.scenarios_worse} of {plural(m.scenarios, 'vignette')} worse (clustered McNemar p={m.clustered_p_value:.3g})"
        for m in metrics
        if m.critical and m.change == "worse"
    ]


def _undecided(metrics: list[PairedMetric]) -> list[str]:
    """One line per critical metric compared on nothing, or on fewer than half its conversations."""
    return [
        f"{m.name}: {m.pairs} of {plural(m.pairs + m.excluded, 'conversation')} compared ({m.excluded} with an error "
        "or no verdict on a side): a regression there could not be seen"
        for m in metrics
        if m.critical and (m.pairs == 0 or m.excluded > m.pairs)
    ]


def compare_loaded(a: RunData, b: RunData, alpha: float = 0.05, gate: Gate | None = None) -> RunComparison:
    """`compare_runs` on runs already loaded (the leaderboard compares many cells with one baseline)."""
    a_path, b_path = a.path, b.path
    _check_same_scenarios(a, b)
    a_ids, b_ids = {r.id for r in a.conversations}, {r.id for r in b.conversations}
    shared = [r.id for r in a.conversations if r.id in b_ids]
    scenario_of = {r.id: r.scenario_id for r in a.conversations}
    cluster_of = {r.id: vignette_of(r.scenario_id) for r in a.conversations}  # the unit of every test
    status_metric, a_status, b_status = _status_metric(a, b, shared, alpha, cluster_of)
    metrics = [status_metric]
    metrics += _outcome_metrics(a, b, shared, alpha, cluster_of)
    golden, golden_paired = _golden_metrics(a, b, alpha, gate)
    metrics += golden_paired
    metrics += _criterion_metrics(a, b, shared, alpha, cluster_of)
    scenarios, a_pairs, b_pairs = _scenario_deltas(a.scenario_order, shared, scenario_of, a_status, b_status)
    overall = paired_bootstrap(a_pairs, b_pairs) if a_pairs else None
    return RunComparison(
        a=str(a_path),
        b=str(b_path),
        alpha=alpha,
        matched=len(shared),
        vignettes=len({cluster_of[c] for c in shared}),
        only_in_a=sorted(a_ids - b_ids),
        only_in_b=sorted(b_ids - a_ids),
        config_differences=config_differences(a, b),
        metrics=metrics,
        scenarios=scenarios,
        scenario_diff=(sum(b_pairs) - sum(a_pairs)) / len(a_pairs) if a_pairs else None,
        scenario_diff_low=overall.low if overall else None,
        scenario_diff_high=overall.high if overall else None,
        regressions=_regressions(metrics),
        undecided=_undecided(metrics),
        golden=golden,
        outcome_source=[outcome_source(a), outcome_source(b)] if a.outcome is not None else [],
    )
