"""Per-criterion, per-scenario and per-tag tables of verdict counts, pass rates, flaky scenarios and pass^k."""

from __future__ import annotations

__all__ = [
    "CriterionRow",
    "PassHatK",
    "ScenarioRow",
    "TagRow",
    "VerdictCounts",
    "conversation_status",
    "criterion_rows",
    "overall_pass_rate",
    "pass_hat_k_table",
    "scenario_rows",
    "tag_rows",
]

import math
import random
from collections import Counter
from typing import Literal

from pydantic import computed_field

from simulator.analysis.rundata import RunData
from simulator.analysis.variance import Attribution, Audited, attribute_variance
from simulator.config.variants import vignette_of
from simulator.models import ResultModel as _Model
from simulator.plural import plural
from simulator.record.models import ConversationRecord, Verdict
from simulator.stats.basic import k_grid, pass_hat_k, percentile, worst_at_k
from simulator.stats.rates import RateView, rate_view
from simulator.stats.resample import draws, fsums, sums

ConversationStatus = Literal["pass", "fail", "error", "not_judged"]
SEVERITY_ORDER = ["critical", "high", "major", "medium", "moderate", "minor", "low"]


class ResultCounts(_Model):
    """Verdicts by result (pass, fail, n/a, error, not judged)."""

    passed: int = 0
    failed: int = 0
    not_applicable: int = 0
    error: int = 0
    not_judged: int = 0


class VerdictCounts(ResultCounts):
    """Verdicts by result; `not_judged` includes conversations the criterion applies to with no verdict."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> int:
        """All verdicts counted, whatever their result."""
        return self.passed + self.failed + self.not_applicable + self.error + self.not_judged

    def add(self, result: str) -> None:
        """Count one verdict result."""
        field = {"pass": "passed", "fail": "failed"}.get(result, result)
        setattr(self, field, getattr(self, field) + 1)

    def fail_rate(
        self, target: float | None = None, per_scenario: list[tuple[int, int]] | None = None
    ) -> RateView:
        """Failures among the verdicts that were pass or fail (errors and n.a. are never in it; errors give
        the worst/best-case bounds)."""
        return rate_view(
            self.failed,
            self.passed + self.failed,
            target=target,
            per_scenario=per_scenario,
            errored=self.error,
        )


class CriterionRow(_Model):
    """One criterion (LLM judge, code check or metric) across the whole run."""

    id: str
    kind: str
    severity: str | None
    category: str | None
    counts: VerdictCounts
    fail_rate: RateView
    unverified_evidence: int
    judge_models: list[str]


class ScenarioRow(_Model):
    """One scenario across its repeats: conversation outcomes, pass rate, flaky and bug flags."""

    id: str
    tags: list[str]
    conversations: int
    statuses: dict[str, int]
    pass_rate: RateView
    counts: VerdictCounts
    flaky: bool
    bug: bool
    failing_criteria: list[str]
    failed_repeats: list[int]
    flaky_source: Attribution | None = None


class TagRow(_Model):
    """All scenarios with one tag: conversation outcomes and verdict counts."""

    tag: str
    scenarios: int
    conversations: int
    statuses: dict[str, int]
    pass_rate: RateView
    counts: VerdictCounts
    high_stakes: bool


class PassHatK(_Model):
    """pass^k: the chance k fresh runs of a scenario all pass, averaged over scenarios with >= k runs; its
    interval is bootstrapped over their vignettes (a vignette's variants are resampled together)."""

    k: int
    value: float
    scenarios: int  # scenario ids, variants included
    all_passed: int
    low: float
    high: float
    worst_at_k: float | None = None
    worst_scenarios: int = 0
    vignettes: int = 0  # the distinct vignettes of `scenarios`: the unit of the interval
    worst_vignettes: int = 0

    def over(self, worst: bool = False) -> str:
        """`over 12 vignettes`, with `(30 variants)` when the scenarios are variants of fewer vignettes."""
        vignettes, scenarios = (
            (self.worst_vignettes, self.worst_scenarios) if worst else (self.vignettes, self.scenarios)
        )
        variants = f" ({plural(scenarios, 'variant')})" if scenarios != vignettes else ""
        return f"over {plural(vignettes, 'vignette')}{variants}"


def _gating(verdicts: list[Verdict]) -> list[Verdict]:
    """Verdicts that decide pass/fail: text metrics are recorded but gate nothing."""
    return [v for v in verdicts if v.kind != "metric"]


def conversation_status(record: ConversationRecord, verdicts: list[Verdict]) -> ConversationStatus:
    """fail if any verdict failed; error if the conversation or a judge errored; pass if something passed."""
    results = {v.result for v in _gating(verdicts)}
    if "fail" in results:
        return "fail"
    if record.stop_reason == "error" or "error" in results:
        return "error"
    return "pass" if "pass" in results else "not_judged"


def criterion_verdicts(run: RunData) -> dict[str, dict[str, str]]:
    """criterion id -> conversation id -> result, filling gaps where the criterion applies to the scenario.

    Computed once per loaded run; callers read it and never modify it."""
    if "criterion_verdicts" in run.cache:
        cached: dict[str, dict[str, str]] = run.cache["criterion_verdicts"]
        return cached
    table: dict[str, dict[str, str]] = {}
    scenarios_of: dict[str, set[str]] = {}
    for verdict in run.verdicts:
        table.setdefault(verdict.criterion_id, {})[verdict.conversation_id] = verdict.result
        scenarios_of.setdefault(verdict.criterion_id, set()).add(verdict.scenario_id)
    for criterion, results in table.items():
        for record in run.conversations:
            if record.scenario_id in scenarios_of[criterion] and record.id not in results:
                results[record.id] = "error" if record.stop_reason == "error" else "not_judged"
    run.cache["criterion_verdicts"] = table
    return table


def _severity_rank(severity: str | None) -> int:
    return SEVERITY_ORDER.index(severity) if severity in SEVERITY_ORDER else len(SEVERITY_ORDER)


def criterion_rows(run: RunData, target: float | None = None) -> list[CriterionRow]:
    """One row per criterion, most severe first, outcome checks before the rest."""
    meta: dict[str, Verdict] = {}
    unverified: Counter[str] = Counter()
    models: dict[str, set[str]] = {}
    for verdict in run.verdicts:
        meta.setdefault(verdict.criterion_id, verdict)
        unverified[verdict.criterion_id] += int(verdict.evidence_verified is False)
        if verdict.judge_model:
            models.setdefault(verdict.criterion_id, set()).add(verdict.judge_model)
    rows = []
    scenario_of = {record.id: vignette_of(record.scenario_id) for record in run.conversations}
    for criterion, results in criterion_verdicts(run).items():
        counts = VerdictCounts()
        cells: dict[str, list[int]] = {}
        for conversation_id, result in results.items():
            counts.add(result)
            if result in ("pass", "fail"):
                cell = cells.setdefault(scenario_of.get(conversation_id, conversation_id), [0, 0])
                cell[0] += int(result == "fail")
                cell[1] += 1
        first = meta[criterion]
        rows.append(
            CriterionRow(
                id=criterion,
                kind=first.kind,
                severity=first.severity,
                category=first.category,
                counts=counts,
                fail_rate=counts.fail_rate(target, [(k, n) for k, n in cells.values()]),
                unverified_evidence=unverified[criterion],
                judge_models=sorted(models.get(criterion, set())),
            )
        )
    rows.sort(key=lambda r: (not r.id.startswith("outcome."), _severity_rank(r.severity), r.id))
    return rows


def _statuses(run: RunData) -> dict[str, ConversationStatus]:
    """Each conversation's status, computed once per loaded run."""
    if "statuses" not in run.cache:
        grouped = run.verdicts_by_conversation()
        run.cache["statuses"] = {
            r.id: conversation_status(r, grouped.get(r.id, [])) for r in run.conversations
        }
    statuses: dict[str, ConversationStatus] = run.cache["statuses"]
    return statuses


def overall_pass_rate(run: RunData, target: float | None = None) -> RateView:
    """Conversations that passed among those that passed or failed, with the scenario-clustered interval and
    the bounds had each errored conversation failed or passed."""
    statuses = _statuses(run)
    cells: dict[str, list[int]] = {}
    errored = 0
    for record in run.conversations:
        status = statuses[record.id]
        errored += int(status == "error")
        if status in ("pass", "fail"):
            cell = cells.setdefault(vignette_of(record.scenario_id), [0, 0])
            cell[0] += int(status == "pass")
            cell[1] += 1
    pairs = [(k, n) for k, n in cells.values()]
    k, n = sum(k for k, _ in pairs), sum(n for _, n in pairs)
    return rate_view(k, n, counts="successes", target=target, per_scenario=pairs, errored=errored)


def _verdict_counts(table: dict[str, dict[str, str]], conversation_ids: set[str]) -> VerdictCounts:
    counts = VerdictCounts()
    for results in table.values():
        for conversation_id, result in results.items():
            if conversation_id in conversation_ids:
                counts.add(result)
    return counts


def _status_counts(statuses: list[ConversationStatus]) -> dict[str, int]:
    counter = Counter(statuses)
    return {key: counter[key] for key in ("pass", "fail", "error", "not_judged")}


def _counts_by_scenario(run: RunData, table: dict[str, dict[str, str]]) -> dict[str, VerdictCounts]:
    """Verdict counts of every criterion, per scenario, in one pass over the table."""
    scenario_of = {record.id: record.scenario_id for record in run.conversations}
    out: dict[str, VerdictCounts] = {}
    for results in table.values():
        for conversation_id, result in results.items():
            out.setdefault(scenario_of.get(conversation_id, ""), VerdictCounts()).add(result)
    return out


def _pass_rate(counts: dict[str, int], per_scenario: list[tuple[int, int]] | None = None) -> RateView:
    """Conversations passing of those passed or failed (errors left out and counted)."""
    return rate_view(
        counts["pass"], counts["pass"] + counts["fail"], counts="successes", per_scenario=per_scenario,
        errored=counts["error"],
    )  # fmt: skip


def _audited(run: RunData) -> Audited:
    """Conversations the fidelity audit judged, and those it failed: the evidence a simulation varied."""
    fidelity = [v for v in run.fidelity if v.result in ("pass", "fail")]
    return Audited(
        audited=frozenset(v.conversation_id for v in fidelity),
        faulted=frozenset(v.conversation_id for v in fidelity if v.result == "fail"),
    )


def scenario_rows(run: RunData, high_stakes_tag: str | None = None) -> list[ScenarioRow]:
    """One row per scenario in suite order, with its pass rate across repeats and flaky/bug flags."""
    statuses = _statuses(run)
    table = criterion_verdicts(run)
    counts_of = _counts_by_scenario(run, table)
    failing: dict[str, Counter[str]] = {}
    for verdict in _gating(run.verdicts):
        if verdict.result == "fail":
            failing.setdefault(verdict.scenario_id, Counter())[verdict.criterion_id] += 1
    rows = []
    audit = _audited(run)
    by_scenario: dict[str, list[ConversationRecord]] = {}
    for record in run.conversations:
        by_scenario.setdefault(record.scenario_id, []).append(record)
    for scenario_id in run.scenario_order:
        records = by_scenario.get(scenario_id, [])
        if not records:
            continue
        mine = [statuses[r.id] for r in records]
        counts = _status_counts(mine)
        tags = list(records[0].tags)
        flaky = counts["pass"] > 0 and counts["fail"] > 0
        source = None
        if flaky:
            source = attribute_variance(
                [r for r in records if statuses[r.id] == "fail"],
                [r for r in records if statuses[r.id] == "pass"],
                audit,
            )
        rows.append(
            ScenarioRow(
                id=scenario_id,
                tags=tags,
                conversations=len(records),
                statuses=counts,
                pass_rate=_pass_rate(counts),
                counts=counts_of.get(scenario_id, VerdictCounts()),
                flaky=flaky,
                bug=high_stakes_tag is not None and high_stakes_tag in tags and counts["fail"] > 0,
                failing_criteria=[
                    f"{c} ({k}/{len(records)})"
                    for c, k in sorted(failing.get(scenario_id, Counter()).items())
                ],
                failed_repeats=sorted(r.repeat for r in records if statuses[r.id] == "fail"),
                flaky_source=source,
            )
        )
    return rows


def tag_rows(run: RunData, high_stakes_tag: str | None = None) -> list[TagRow]:
    """One row per tag, alphabetical, with the high-stakes tag first."""
    statuses = _statuses(run)
    table = criterion_verdicts(run)
    by_tag: dict[str, list[ConversationRecord]] = {}
    for record in run.conversations:
        for tag in record.tags:
            by_tag.setdefault(tag, []).append(record)
    rows = []
    for tag in sorted(by_tag, key=lambda t: (t != high_stakes_tag, t)):
        records = by_tag[tag]
        counts = _status_counts([statuses[r.id] for r in records])
        cells: dict[str, list[int]] = {}
        for record in records:
            if statuses[record.id] in ("pass", "fail"):
                cell = cells.setdefault(vignette_of(record.scenario_id), [0, 0])
                cell[0] += int(statuses[record.id] == "pass")
                cell[1] += 1
        rows.append(
            TagRow(
                tag=tag,
                scenarios=len({vignette_of(r.scenario_id) for r in records}),
                conversations=len(records),
                statuses=counts,
                pass_rate=_pass_rate(counts, [(k, n) for k, n in cells.values()]),
                counts=_verdict_counts(table, {r.id for r in records}),
                high_stakes=tag == high_stakes_tag,
            )
        )
    return rows


def _conversation_scores(run: RunData) -> dict[str, float]:
    """Each judged conversation's score for worst-at-k: the share of its pass/fail verdicts that passed."""
    tallies: dict[str, list[int]] = {}
    for verdict in _gating(run.verdicts):
        if verdict.result in ("pass", "fail"):
            cell = tallies.setdefault(verdict.conversation_id, [0, 0])
            cell[0] += int(verdict.result == "pass")
            cell[1] += 1
    return {cid: passed / total for cid, (passed, total) in tallies.items()}


def pass_hat_k_table(run: RunData, iters: int = 2000, seed: int = 0) -> list[PassHatK]:
    """pass^k and worst-at-k for k = 1, 2, 4, ... up to the runs (and the runs themselves), with a bootstrap
    interval of pass^k over vignettes. Each value is computed once per scenario, so a k costs O(scenarios)
    per resample and the whole table O(repeats) per scenario and k."""
    statuses = _statuses(run)
    scores = _conversation_scores(run)
    per_scenario: dict[str, list[int]] = {}
    scored: dict[str, list[float]] = {}
    for record in run.conversations:
        status = statuses[record.id]
        if status in ("pass", "fail"):
            per_scenario.setdefault(record.scenario_id, []).append(int(status == "pass"))
        if record.stop_reason != "error" and record.id in scores:
            scored.setdefault(record.scenario_id, []).append(scores[record.id])
    pairs = {sid: (len(v), sum(v)) for sid, v in per_scenario.items()}
    rows = []
    rng = random.Random(seed)
    for k in k_grid(run.runs):
        eligible = {sid: pair for sid, pair in pairs.items() if pair[0] >= k}
        if not eligible:
            break
        by_vignette: dict[str, list[float]] = {}
        for sid, pair in eligible.items():
            by_vignette.setdefault(vignette_of(sid), []).append(pass_hat_k([pair], k))
        values = [value for group in by_vignette.values() for value in group]
        worst = {sid: worst_at_k(v, k) for sid, v in scored.items() if len(v) >= k}
        rows.append(
            PassHatK(
                k=k,
                value=math.fsum(values) / len(values),
                scenarios=len(eligible),
                vignettes=len(by_vignette),
                all_passed=sum(1 for n, c in eligible.values() if c == n),
                **_interval(_resampled_means(rng, list(by_vignette.values()), iters)),
                worst_at_k=math.fsum(worst.values()) / len(worst) if worst else None,
                worst_scenarios=len(worst),
                worst_vignettes=len({vignette_of(sid) for sid in worst}),
            )
        )
    return rows


def _interval(means: list[float]) -> dict[str, float]:
    means = sorted(means)
    return {"low": percentile(means, 2.5), "high": percentile(means, 97.5)}


def _resampled_means(rng: random.Random, groups: list[list[float]], iters: int) -> list[float]:
    """The mean of each bootstrap sample over vignettes: each draws as many vignettes as there are, with all
    their scenarios' values (with no variants, one value a vignette: the plain bootstrap over scenarios).
    The samples of `rng.choices(groups, k=len(groups))`, drawn in bulk; each mean is fsum / count."""
    sizes = [len(group) for group in groups]
    means = []
    for rows in draws(rng, len(groups), len(groups), iters):
        means += [total / size for total, size in zip(fsums(groups, rows), sums(sizes, rows), strict=True)]
    return means
