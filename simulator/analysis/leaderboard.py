"""The leaderboard of a matrix run: one row per cell, paired tests against a baseline, and the cells that
cannot be told apart from the best grouped together, so nobody crowns a winner on noise.

Every interval goes through `cell_interval`, the one place to change how a cell's rate is bounded.
"""

from __future__ import annotations

__all__ = ["CellRow", "Leaderboard", "build_leaderboard", "cell_interval"]

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from simulator.analysis.compare import RunComparison, compare_loaded
from simulator.analysis.cost import PriceTable, cost_latency, load_prices
from simulator.analysis.outcome import actual_outcome
from simulator.analysis.rundata import RunData, load_run
from simulator.analysis.tables import conversation_status
from simulator.config.variants import vignette_of
from simulator.errors import UserError
from simulator.models import ResultModel as _Model
from simulator.record.index import MatrixIndex, read_index
from simulator.stats.multiple import HOLM_TEXT, holm
from simulator.stats.rates import RateView, rate_view

LEADERBOARD_SCHEMA_VERSION = 2  # 2: vignette-clustered intervals and tests (clustered_p_value decides)
QUALITY = "conversation passes"
INTERVAL_TEXT = (
    "95% interval over vignettes, as in the report (RateView.interval): vignette-clustered when a cell pools "
    "several conversations of a vignette, since they are not independent, else Wilson; "
    "k/n counts conversations)"
)
Tally = dict[str, tuple[int, int]]  # scenario id -> (successes or failures counted, conversations)


def cell_interval(
    k: int, n: int, by_scenario: Tally, *, counts: Literal["successes", "failures"], errored: int = 0
) -> RateView:
    """A cell's rate with both intervals: Wilson over conversations, and vignette-clustered (repeats of one
    scenario are not independent; the leaderboard shows this one); `errored` conversations left out of n
    give its worst and best case."""
    return rate_view(k, n, counts=counts, per_scenario=list(by_scenario.values()), errored=errored)


class CellRow(_Model):
    """One cell: its quality with intervals, the critical outcome rates, cost and latency per conversation."""

    cell: str
    bot_variant: str
    user_variant: str | None
    bot: str
    user_model: str
    path: str
    status: str
    conversations: int
    errors: int
    quality: RateView  # conversations that passed every criterion, errors left out
    critical_sensitivity: RateView | None  # critical-level conversations escalated to it
    under_triage: RateView | None
    cost_per_conversation: float | None
    conversation_latency_s: float | None  # median duration of a whole conversation
    bot_latency_s: float | None  # median bot reply
    baseline: bool
    group: Literal["tied for best", "below best", "no data"]
    vs_best_p: float | None  # Holm-adjusted clustered McNemar p (over scenarios) against the best cell


class PairedRow(_Model):
    """One critical metric of one cell against the baseline, on the same (scenario, repeat) pairs."""

    cell: str
    metric: str
    pairs: int
    only_baseline: int  # baseline passed, this cell failed
    only_cell: int
    diff: float
    diff_low: float  # bootstrap over scenarios (compare's clustered interval)
    diff_high: float
    p_value: float  # McNemar over conversations, for reference
    clustered_p_value: float  # clustered McNemar over scenarios: Holm-adjusted into p_holm, decides `change`
    p_holm: float
    change: Literal["better", "worse", "no significant change"]
    flips: list[str]  # conversation ids whose result differs (first 10)
    flips_total: int


class UserSensitivity(_Model):
    """How one bot variant's quality moves with the simulated-user model."""

    bot_variant: str
    scores: dict[str, RateView]  # by user variant
    spread: float | None  # highest minus lowest rate, as a fraction


class Leaderboard(_Model):
    """Everything `simulator report MATRIX` shows; renderers only format it."""

    schema_version: int = LEADERBOARD_SCHEMA_VERSION
    kind: Literal["simulator.leaderboard"] = "simulator.leaderboard"
    generated_at: datetime
    matrix_id: str
    path: str
    baseline: str
    best: str | None
    alpha: float
    quality_metric: str
    interval: str
    correction: str
    tie_rule: str
    currency: str
    cells: list[CellRow]
    comparisons: list[PairedRow]
    user_sensitivity: list[UserSensitivity]
    notes: list[str]


def _tallies(run: RunData) -> tuple[dict[str, tuple[int, int, Tally]], Counter[str]]:
    """Per metric: (k, n, per-scenario tally) for quality, critical sensitivity and under-triage, and the
    conversations each metric left out as errored."""
    grouped = run.verdicts_by_conversation()
    out: dict[str, tuple[int, int, Tally]] = {}
    errored: Counter[str] = Counter()

    def add(metric: str, scenario: str, hit: bool) -> None:
        k, n, tally = out.get(metric, (0, 0, {}))
        sk, sn = tally.get(scenario, (0, 0))
        tally[scenario] = (sk + hit, sn + 1)
        out[metric] = (k + hit, n + 1, tally)

    config = run.outcome
    rank = {level: i for i, level in enumerate(config.levels)} if config else {}
    critical = (config.critical or config.levels[-1]) if config else None
    for record in run.conversations:
        status = conversation_status(record, grouped.get(record.id, []))
        if status in ("pass", "fail"):
            add("quality", vignette_of(record.scenario_id), status == "pass")
        errored["quality"] += status == "error"
        if config is None or critical is None:
            continue
        expected = run.expected.get(record.scenario_id, {}).get(config.key)
        actual = actual_outcome(run, record)
        if expected in rank and actual == "error":
            errored["under"] += 1
            errored["critical"] += rank[expected] >= rank[critical]
        if expected not in rank or actual == "error":
            continue
        add("under", vignette_of(record.scenario_id), actual in rank and rank[actual] < rank[expected])
        if rank[expected] >= rank[critical]:
            add(
                "critical", vignette_of(record.scenario_id), actual in rank and rank[actual] >= rank[critical]
            )
    return out, errored


def _rate(
    tallies: tuple[dict[str, tuple[int, int, Tally]], Counter[str]],
    metric: str,
    counts: Literal["successes", "failures"],
) -> RateView | None:
    counted, errored = tallies
    if metric not in counted and not errored[metric]:
        return None
    k, n, tally = counted.get(metric, (0, 0, {}))
    return cell_interval(k, n, tally, counts=counts, errored=errored[metric])


def _row(cell_id: str, index: MatrixIndex, run: RunData, prices: PriceTable) -> CellRow:
    entry = index.cell(cell_id)
    tallies = _tallies(run)
    cost = cost_latency(run, prices)
    latency = {stat.name: stat.median_s for stat in cost.latency}
    n = len(run.conversations)
    quality = _rate(tallies, "quality", "successes") or cell_interval(0, 0, {}, counts="successes")
    return CellRow(
        cell=cell_id,
        bot_variant=entry.bot_variant,
        user_variant=entry.user_variant,
        bot=entry.bot,
        user_model=run.manifest.models.user,
        path=str(run.path),
        status=run.manifest.status,
        conversations=n,
        errors=sum(1 for r in run.conversations if r.stop_reason == "error"),
        quality=quality,
        critical_sensitivity=_rate(tallies, "critical", "successes"),
        under_triage=_rate(tallies, "under", "failures"),
        cost_per_conversation=cost.total_cost / n if cost.total_cost is not None and n else None,
        conversation_latency_s=latency.get("whole conversation"),
        bot_latency_s=latency.get("bot reply (per turn)"),
        baseline=cell_id == index.baseline,
        group="no data" if quality.n == 0 else "below best",
        vs_best_p=None,
    )


def _paired_rows(baseline: str, comparisons: dict[str, RunComparison], alpha: float) -> list[PairedRow]:
    """Critical metrics (and conversation passes) of every cell against the baseline, Holm-adjusted."""
    raw = []
    for cell, comparison in comparisons.items():
        for metric in comparison.metrics:
            if (metric.critical or metric.name == QUALITY) and metric.pairs:
                raw.append((cell, metric))
    adjusted = holm([m.clustered_p_value for _, m in raw])
    rows = []
    for (cell, metric), p_holm in zip(raw, adjusted, strict=True):
        change: Literal["better", "worse", "no significant change"] = "no significant change"
        if p_holm < alpha and metric.only_a != metric.only_b:
            change = "worse" if metric.only_a > metric.only_b else "better"
        rows.append(
            PairedRow(
                **metric.model_dump(
                    include={"pairs", "diff", "diff_low", "diff_high", "p_value", "clustered_p_value"}
                ),
                cell=cell,
                metric=metric.name,
                only_baseline=metric.only_a,
                only_cell=metric.only_b,
                p_holm=p_holm,
                change=change,
                flips=[f.conversation_id for f in metric.flips[:10]],
                flips_total=len(metric.flips),
            )
        )
    return rows


def _group(rows: list[CellRow], runs: dict[str, RunData], alpha: float) -> str | None:
    """Mark the best cell and every cell a paired test (Holm over the cells) cannot tell apart from it."""
    scored = [r for r in rows if r.quality.n and r.quality.rate is not None]
    if not scored:
        return None
    best = max(scored, key=lambda r: (r.quality.rate or 0.0, -r.quality.n))
    others = [r for r in scored if r.cell != best.cell]
    p_values = []
    for row in others:
        metric = compare_loaded(runs[best.cell], runs[row.cell], alpha).metrics[0]
        assert metric.name == QUALITY
        p_values.append(metric.clustered_p_value)  # scenarios as the unit, as compare decides
    best.group = "tied for best"
    for row, p_holm in zip(others, holm(p_values), strict=True):
        row.vs_best_p = p_holm
        row.group = "tied for best" if p_holm >= alpha else "below best"
    return best.cell


def _user_sensitivity(rows: list[CellRow]) -> list[UserSensitivity]:
    if not any(r.user_variant for r in rows):
        return []
    out = []
    for bot in dict.fromkeys(r.bot_variant for r in rows):
        scores = {r.user_variant or "": r.quality for r in rows if r.bot_variant == bot}
        rates = [v.rate for v in scores.values() if v.rate is not None]
        out.append(
            UserSensitivity(
                bot_variant=bot, scores=scores, spread=max(rates) - min(rates) if len(rates) > 1 else None
            )
        )
    return out


def build_leaderboard(
    path: Path, baseline: str | None = None, alpha: float = 0.05, prices: PriceTable | None = None
) -> Leaderboard:
    """Read a matrix run folder and rank its cells; `baseline` overrides the suite's baseline cell."""
    index = read_index(path)
    if baseline is not None:
        index.cell(baseline)  # a UserError listing the cells when it is not one
        index.baseline = baseline
    prices = prices or load_prices()
    runs = {cell.id: load_run(path / cell.folder) for cell in index.cells}
    rows = [_row(cell.id, index, runs[cell.id], prices) for cell in index.cells]
    try:
        comparisons = {
            cell: compare_loaded(runs[index.baseline], run, alpha)
            for cell, run in runs.items()
            if cell != index.baseline
        }
        best = _group(rows, runs, alpha)
    except UserError as exc:
        raise UserError(f"{path}: the cells cannot be compared: {exc}") from None
    paired = _paired_rows(index.baseline, comparisons, alpha)
    notes = [
        f"cell {r.cell} is {r.status}: finish it with simulator run --resume {path}"
        for r in rows
        if r.status != "complete"
    ]
    rows.sort(key=lambda r: (r.group != "tied for best", -(r.quality.rate or 0.0), r.cell))
    return Leaderboard(
        generated_at=datetime.now(UTC),
        matrix_id=index.matrix_id,
        path=str(path),
        baseline=index.baseline,
        best=best,
        alpha=alpha,
        quality_metric="conversations that passed every criterion (errors and unjudged conversations left out)",
        interval=INTERVAL_TEXT,
        correction=HOLM_TEXT.format(m=len(paired), alpha=alpha),
        tie_rule=(
            "tied for best: the best cell, and every cell whose paired clustered McNemar test over vignettes against it "
            f"(Holm-adjusted over {max(0, len([r for r in rows if r.quality.n]) - 1)} tests) has p ≥ {alpha:g}"
        ),
        currency=prices.currency,
        cells=rows,
        comparisons=paired,
        user_sensitivity=_user_sensitivity(rows),
        notes=notes,
    )
