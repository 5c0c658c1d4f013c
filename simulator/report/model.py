"""The report data model: one pydantic object built from a run, rendered to terminal, HTML, JSON and JUnit."""

from __future__ import annotations

__all__ = [
    "PICK_JUDGE_SET",
    "REPORT_SCHEMA_VERSION",
    "Finding",
    "Report",
    "ReportOptions",
    "Transcript",
    "TranscriptVerdict",
    "build_report",
    "full_report_model",
    "headline_rates",
]

import functools
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field, create_model

from simulator.analysis.calls import CallTotals, call_totals, limit_lines
from simulator.analysis.cost import CostLatency, PriceTable, cost_latency, load_prices
from simulator.analysis.factors import FactorsSection, factors_section
from simulator.analysis.fidelity import SimulatedUserSection, simulated_user_section
from simulator.analysis.golden import Gate, GoldenSection, golden_section
from simulator.analysis.health import RunHealth, run_health
from simulator.analysis.missing import MissingData, missing_data, moved_warning
from simulator.analysis.outcome import OutcomeMetrics, outcome_metrics
from simulator.analysis.points import PointsSummary, points_summary
from simulator.analysis.rundata import JudgeSetInfo, RunData, short_hash
from simulator.analysis.spread import RunSpread, run_spread
from simulator.analysis.tables import (
    CriterionRow,
    PassHatK,
    ScenarioRow,
    TagRow,
    conversation_status,
    criterion_rows,
    overall_pass_rate,
    pass_hat_k_table,
    scenario_rows,
    tag_rows,
)
from simulator.config.variants import vignette_of, vignettes_counted
from simulator.models import ResultModel as _Model
from simulator.models import empty_list
from simulator.plural import noun, plural
from simulator.record.compact import Sharing
from simulator.record.models import ConversationRecord, Evidence, Verdict
from simulator.record.parts import Part
from simulator.report.analyses import CORE_FINDINGS, Analysis, all_analyses, data_analyses
from simulator.report.judge_section import JudgeQuality, judge_notes, judge_quality
from simulator.stats.rates import RateView, pct

# 2: scenario-clustered intervals and missing-data bounds on every rate, under-triage incl. no decision
# (and under_triage_decided), flaky sources, worst-at-k, run-to-run spread, the missing-data section.
REPORT_SCHEMA_VERSION = 2


@dataclass
class ReportOptions:
    """What the user chose: the target failure bound, which tag is high-stakes, prices, thresholds."""

    target: float | None = None
    high_stakes_tag: str | None = None  # None: the suite's high_stakes_tag
    turn_limit_threshold: float = 0.2
    prices: PriceTable | None = None
    # The similarity gate the golden section compares with the verdict (default token_f1 >= 0.5).
    gate: Gate | None = None
    # The per-conversation transcripts (for HTML, JUnit and --json-transcripts); off, a large run's report
    # needs a fraction of the time and memory.
    transcripts: bool = True
    # At most this many passing conversations in full (spread over the scenarios); every failing, errored
    # and undecided one is always in. None: all of them. The HTML report of a large run stays readable and
    # small; the run folder keeps every conversation (`simulator show`).
    passing_transcripts: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class RunInfo(_Model):
    """Which run this is and how it was configured, in a few fields."""

    run_id: str
    path: str
    status: str
    created_at: datetime
    ended_at: datetime | None
    suite: str
    suite_file: str | None
    bot: str
    user_model: str
    judge_model: str | None
    runs: int
    scenarios: int
    conversations: int
    planned: int
    # Distinct vignettes (base scenarios): the unit of every rate; `scenarios` counts their variants too.
    vignettes: int = 0
    # What the manifest planned: its scenarios, and their distinct vignettes (the counts above are of the
    # conversations recorded, which a partial run has fewer of).
    planned_scenarios: int = 0
    planned_vignettes: int = 0

    @property
    def counted(self) -> str:
        """The header's count of the evidence, vignettes first. An equation only when it holds: `22 vignettes
        × 3 runs = 66 conversations (planned 66)`, `22 vignettes, 168 variants × 1 runs = 168 conversations
        (planned 168)`; otherwise (a partial run, a line cut short) what was recorded of what was planned:
        `17 of 66 planned conversations (22 vignettes × 3 runs); 6 of 22 vignettes reached`."""
        vignettes = self.vignettes or self.scenarios
        variants = f", {plural(self.scenarios, 'variant')}" if self.scenarios != vignettes else ""
        if self.scenarios * self.runs == self.conversations and self.planned in (0, self.conversations):
            planned = f" (planned {self.planned})" if self.planned else ""
            return f"{plural(vignettes, 'vignette')}{variants} × {plural(self.runs, 'run')} = {plural(self.conversations, 'conversation')}{planned}"
        if not self.planned:
            return f"{plural(self.conversations, 'conversation')} of {plural(vignettes, 'vignette')}{variants} (none planned)"
        of_vignettes = self.planned_vignettes or self.planned_scenarios or vignettes
        of_scenarios = self.planned_scenarios or of_vignettes
        shape = ""
        if of_scenarios * self.runs == self.planned:  # a shard plans a part of them: no shape then
            planned_variants = f", {plural(of_scenarios, 'variant')}" if of_scenarios != of_vignettes else ""
            shape = f" ({plural(of_vignettes, 'vignette')}{planned_variants} × {plural(self.runs, 'run')})"
        reached = (
            f"all {plural(of_vignettes, 'vignette')} reached"
            if vignettes == of_vignettes
            else f"{vignettes} of {plural(of_vignettes, 'vignette')} reached"
        )
        return f"{self.conversations} of {self.planned} planned conversations{shape}; {reached}"

    git_commit: str | None
    package_version: str
    judge_set: str | None
    judge_sets: list[JudgeSetInfo]
    warnings: list[str]
    # Provider requests sent (retries included) over every session, as the manifest's checkpoints counted
    # them; at least: with what killed sessions' finished conversations recorded after their last checkpoint.
    provider_calls: int = 0
    provider_calls_at_least: int = 0
    # Sessions killed (kill -9, a crash): their calls are counted only up to their last checkpoint.
    killed_sessions: int = 0
    # Per provider: the rate its calls were paced to and where it came from (`analysis.calls.limit_lines`).
    provider_limits: list[str] = Field(default_factory=empty_list)


# The advice of the finding "judge set X of N": a command-line flag (the review desk offers its own choice).
PICK_JUDGE_SET = "pick another with --judge-set HASH"


class Finding(_Model):
    """One headline for the summary: a bug (high-stakes failure), a warning, or information."""

    level: Literal["bug", "warning", "info"]
    title: str
    detail: str = ""
    # The conversations to read for it (the summary links each to its transcript).
    conversations: list[str] = Field(default_factory=empty_list)


class TranscriptTurn(_Model):
    index: int
    role: str
    # The text view (text parts and picks' titles); `parts` is the whole turn (record/parts.py).
    messages: list[str]
    parts: list[Part] = Field(default_factory=empty_list)
    latency_s: float | None = None


class TranscriptVerdict(_Model):
    criterion_id: str
    kind: str
    result: str
    severity: str | None = None
    category: str | None = None
    reasoning: str = ""
    evidence: list[Evidence] = Field(default=[])
    evidence_verified: bool | None = None


class TranscriptsLeftOut(_Model):
    """Passing conversations not carried in full by this report (every failing or undecided one is)."""

    passing_shown: int
    passing_left_out: int
    per_scenario: int  # the first passing repeats of each scenario are kept, up to this many
    how_to_see: str  # the command that prints any conversation from the run folder


class Transcript(_Model):
    """One conversation as the transcript viewer shows it, with every verdict and its evidence."""

    id: str
    scenario_id: str
    repeat: int
    tags: list[str]
    stop_reason: str
    status: str
    final_state: dict[str, Any] | None
    # What the bot's tools left in the environment at the end (docs/environment.md); None without one.
    environment_state: dict[str, Any] | None = None
    error: str | None
    character_breaks: int
    fidelity_failures: list[str] = Field(default=[])
    turns: list[TranscriptTurn]
    verdicts: list[TranscriptVerdict]


class Report(_Model):
    """Everything a report shows; renderers only format it. `schema_version` changes on breaking changes."""

    # The registered analyses' data sit after the declared fields, as extra fields (report/analyses.py).
    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=True)

    schema_version: int = REPORT_SCHEMA_VERSION
    kind: Literal["simulator.report"] = "simulator.report"
    generated_at: datetime
    run: RunInfo
    target: float | None
    high_stakes_tag: str | None
    findings: list[Finding]
    overall: RateView
    # What `overall` covers, in words: its unit, what it left out, and whether some criteria went unjudged.
    overall_covers: str = ""
    outcome: OutcomeMetrics | None
    omissions: list[CriterionRow]
    criteria: list[CriterionRow]
    scenarios: list[ScenarioRow]
    tags: list[TagRow]
    pass_hat_k: list[PassHatK]
    health: RunHealth
    cost: CostLatency
    missing: MissingData
    spread: list[RunSpread]
    transcripts: list[Transcript] = Field(default=[])
    # Set when passing transcripts were sampled (`ReportOptions.passing_transcripts`): what was left out.
    transcripts_left_out: TranscriptsLeftOut | None = None
    # Present when the run holds golden items: item verdicts, per-intent table, gate, threshold sweep.
    golden: GoldenSection | None = None
    # Judge stability (samples), jury agreement and corrected failure rates (labels); None when none apply.
    judge_quality: JudgeQuality | None = None
    # Signed rubric points: mean score overall, by tag, by category; None without points criteria.
    points: PointsSummary | None = None
    # The simulated user's fidelity, fact provenance and attribution of bot failures (None: not audited).
    simulated_user: SimulatedUserSection | None = None
    # A factorial run: per factor level, critical metrics and odds ratios vs the reference level.
    factors: FactorsSection | None = None
    # After these, each registered analysis's data under its key, in its order (report/analyses.py): the
    # red-team section, behavioural relations, held-out split, several simulated users, length and verdict...

    def analysis(self, key: str) -> Any:
        """A registered analysis's data by its key (None, or its default, when the run had none)."""
        extra = self.__pydantic_extra__ or {}
        return extra.get(key)


def _run_info(run: RunData) -> RunInfo:
    manifest = run.manifest
    calls = call_totals(run)
    suite = manifest.suite
    return RunInfo(
        run_id=manifest.run_id,
        path=str(run.path),
        status=manifest.status,
        created_at=manifest.created_at,
        ended_at=manifest.ended_at,
        suite=suite.name if suite is not None else manifest.kind,
        suite_file=manifest.suite_file,
        bot=manifest.models.bot,
        user_model=manifest.models.user,
        judge_model=(manifest.judge_set.model or ", ".join(manifest.judge_set.models) or None)
        if manifest.judge_set
        else manifest.models.judge,
        runs=run.runs,
        scenarios=len({r.scenario_id for r in run.conversations}),
        vignettes=len({vignette_of(r.scenario_id) for r in run.conversations}),
        conversations=len(run.conversations),
        planned=manifest.planned,
        planned_scenarios=len(manifest.scenarios),
        planned_vignettes=len({vignette_of(s.id) for s in manifest.scenarios}),
        git_commit=manifest.git_commit,
        package_version=manifest.package_version,
        judge_set=run.judge_set,
        judge_sets=run.judge_sets,
        warnings=[*run.warnings, *_killed_warning(calls)],
        provider_calls=calls.counted,
        provider_calls_at_least=calls.at_least,
        killed_sessions=calls.killed_sessions,
        provider_limits=limit_lines(manifest),
    )


def _killed_warning(calls: CallTotals) -> list[str]:
    killed = calls.killed_sessions
    if not killed:
        return []
    return [
        f"provider call counts are incomplete: {plural(killed, 'session')} of this run "
        f"{'were' if killed != 1 else 'was'} killed (kill -9 or a crash) and counted calls only up to "
        f"{'their' if killed != 1 else 'its'} last checkpoint (every 5 s): {calls.counted} counted, at least "
        f"{calls.at_least} made; conversations and verdicts are complete"
    ]


def _transcripts(run: RunData, passing: int | None) -> tuple[list[Transcript], TranscriptsLeftOut | None]:
    """The transcripts to carry, and what was left out when passing ones were sampled: the first
    `passing // scenarios` (at least one) passing repeats of each scenario, so every scenario shows one."""
    grouped = run.verdicts_by_conversation()
    fidelity: dict[str, list[Any]] = {}
    for verdict in run.fidelity:
        fidelity.setdefault(verdict.conversation_id, []).append(verdict)
    scenarios = {record.scenario_id for record in run.conversations}
    quota = None if passing is None else max(1, passing // max(1, len(scenarios)))
    kept: Counter[str] = Counter()
    left_out = 0
    out = []
    # The 10^5 turns' parts read here share their equal field sets (record/compact.py).
    sharing = Sharing(())
    for record in run.conversations:
        verdicts = grouped.get(record.id, [])
        status = conversation_status(record, verdicts)
        if status == "pass" and quota is not None:
            if kept[record.scenario_id] >= quota:
                left_out += 1
                continue
            kept[record.scenario_id] += 1
        out.append(_transcript(record, status, verdicts, fidelity.get(record.id, []), sharing))
    if not left_out:
        return out, None
    how = f"simulator show {run.path} --scenario ID --repeat N"
    return out, TranscriptsLeftOut(
        passing_shown=sum(kept.values()), passing_left_out=left_out, per_scenario=quota or 0, how_to_see=how
    )


_TURN_FIELDS = {"index", "role", "messages", "parts", "latency_s"}
_VERDICT_FIELDS = {
    "criterion_id",
    "kind",
    "result",
    "severity",
    "category",
    "reasoning",
    "evidence",
    "evidence_verified",
}


def _transcript(
    record: ConversationRecord,
    status: Any,
    verdicts: list[Verdict],
    fidelity: list[Verdict],
    sharing: Sharing | None = None,
) -> Transcript:
    """One conversation as the viewer shows it: its turns, its verdicts and its fidelity verdicts."""
    shown = verdicts + fidelity  # fidelity verdicts are shown, never counted
    share = sharing or Sharing(())
    return Transcript(
        id=record.id,
        scenario_id=record.scenario_id,
        repeat=record.repeat,
        tags=list(record.tags),
        stop_reason=record.stop_reason,
        status=status,
        final_state=record.final_state,
        environment_state=record.environment_state,
        error=f"{record.error.source} {record.error.kind}: {record.error.message}" if record.error else None,
        character_breaks=len(record.character_breaks),
        fidelity_failures=sorted(v.criterion_id for v in fidelity if v.result == "fail"),
        # Already validated when read: model_construct skips validating 10^5 turns a second time.
        # One field set for all (`_fields_set`, never changed): 0.5-0.7 KB less per turn and verdict.
        turns=[
            TranscriptTurn.model_construct(
                _TURN_FIELDS,
                index=t.index,
                role=t.role,
                messages=list(t.messages),
                parts=list(share(t.parts)),
                latency_s=t.latency_s if t.role == "bot" else None,
            )
            for t in record.turns
        ],
        verdicts=[
            TranscriptVerdict.model_construct(
                _VERDICT_FIELDS,
                criterion_id=v.criterion_id,
                kind=v.kind,
                result=v.result,
                severity=v.severity,
                category=v.category,
                reasoning=v.reasoning,
                evidence=list(v.evidence),
                evidence_verified=v.evidence_verified,
            )
            for v in sorted(shown, key=lambda v: v.criterion_id)
        ],
    )


def _golden_findings(golden: GoldenSection | None) -> list[Finding]:
    """A golden intent where no item passed is a bug report: one finding per row of zeros."""
    if golden is None:
        return []
    return [
        Finding(
            level="bug",
            title=f"golden intent {row.intent}: 0 of {row.failed} items pass",
            detail="a row of zeros in the per-intent table; read its failing items",
        )
        for row in golden.intents
        if row.all_failed
    ]


def _scenario_bugs(report: Report) -> list[Finding]:
    """A high-stakes scenario that failed any run is a bug report: one finding per such scenario."""
    return [
        Finding(
            level="bug",
            title=f"{row.id} failed {row.statuses['fail']} of {plural(row.conversations, 'run')} ({report.high_stakes_tag})",
            detail="failing: " + ", ".join(row.failing_criteria) + f"; repeats {row.failed_repeats}",
            conversations=[f"{row.id}#{repeat}" for repeat in row.failed_repeats],
        )
        for row in report.scenarios
        if row.bug
    ]


def _finding(level: Literal["bug", "warning", "info"], title: str, detail: str = "") -> Finding:
    return Finding(level=level, title=title, detail=detail)


def _undecided_words(outcome: OutcomeMetrics) -> str:
    """The under-triaged conversations with no usable decision, each under its matrix column's name (a
    value that is not a level is `other` there, so it is never called "no decision" here)."""
    lowest = outcome.levels[0]
    kinds = [c.kind for c in outcome.cases if not c.red_flag_quote and c.expected != lowest]
    counted = [
        (kinds.count("no_decision"), "no decision"),
        (kinds.count("other"), "a value that is not a level (other)"),
    ]
    return " and ".join(f"{n} with {words}" for n, words in counted if n)


def _outcome_findings(outcome: OutcomeMetrics | None) -> list[Finding]:
    """Critical cases not escalated (a bug), under-triage, no decision and over-triage (warnings)."""
    found: list[Finding] = []
    if outcome is None:
        return found
    sens = outcome.critical_sensitivity
    rank = {level: i for i, level in enumerate(outcome.levels)}
    missed = [
        c.conversation_id
        for c in outcome.cases
        if c.kind != "error"
        and not c.red_flag_quote  # held to a red-flag floor: its own finding below
        and rank[c.expected] >= rank[outcome.critical]
        and rank.get(c.actual, -1) < rank[outcome.critical]
    ]
    if sens.n and sens.k < sens.n:
        found.append(
            Finding(
                level="bug",
                title=(
                    f"{sens.n - sens.k} of {plural(sens.n, f'{outcome.critical} conversation')} "
                    f"{noun(sens.n - sens.k, 'was', 'were')} not escalated"
                ),
                detail=f"{outcome.critical} sensitivity {sens.text}",
                conversations=missed,
            )
        )
    undecided = outcome.under_triage.k - outcome.under_triage_decided.k
    for name, value in (("under-triage", outcome.under_triage), ("no decision", outcome.no_decision)):
        if value.k:
            detail = ""
            if name == "under-triage" and undecided:
                detail = f"incl. {_undecided_words(outcome)} on a case that needed one"
            kinds = ("under", "no_decision", "other") if name == "under-triage" else ("no_decision", "other")
            ids = [c.conversation_id for c in outcome.cases if c.kind in kinds and not c.red_flag_quote]
            found.append(
                Finding(level="warning", title=f"{name}: {value.text}", detail=detail, conversations=ids)
            )
        elif value.needs_more_runs:
            found.append(
                _finding(
                    "info",
                    f"{name}: none in {plural(value.n, 'conversation')}, {value.text}",
                    value.needs_more_runs,
                )
            )
    if outcome.over_triage.k:
        found.append(Finding(level="warning", title=f"over-triage: {outcome.over_triage.text}"))
    floor = outcome.red_flag_under_triage
    if floor is not None and floor.k:
        found.append(
            Finding(
                level="warning",
                title=f"under-triage against the patient's red flags: {floor.text}",
                detail="conversations without a scenario whose bot advised below the level the patient's own "
                "words call for (a floor: it cannot show over-triage)",
                conversations=[c.conversation_id for c in outcome.cases if c.red_flag_quote],
            )
        )
    return found


def _health_findings(health: RunHealth) -> list[Finding]:
    """Warnings on the run's health: turn limits, errors, unverified evidence, missing conversations."""
    found: list[Finding] = []
    if health.turn_limit_finding:
        found.append(
            _finding(
                "warning",
                f"turn limit reached in {health.turn_limit.text}",
                "above "
                + pct(health.turn_limit_threshold, 0)
                + ": the bot or the simulated user may be looping, or max_turns is too low",
            )
        )
    for label, value in (
        ("conversation errors", health.conversation_errors),
        ("judge errors", health.judge_errors),
    ):
        if value.k:
            found.append(
                _finding("warning", f"{label}: {value.text}", "counted apart, never as pass or fail")
            )
    if health.unverified.k:
        found.append(
            _finding(
                "warning",
                f"unverified evidence: {health.unverified.text}",
                "a quote was not found in the transcript; read those verdicts",
            )
        )
    if health.missing:
        found.append(
            _finding(
                "warning",
                f"{health.missing} of {health.planned} planned conversations are missing",
                f"run status {health.status}; finish it with simulator run --resume",
            )
        )
    return found


def _findings(report: Report, options: ReportOptions) -> list[Finding]:
    found: list[Finding] = _golden_findings(report.golden)
    found += _scenario_bugs(report)
    found += _outcome_findings(report.outcome)
    flaky = [row.id for row in report.scenarios if row.flaky]
    if flaky:
        title = f"flaky (mixed outcomes): {vignettes_counted(flaky)}"
        found.append(_finding("warning", title, ", ".join(flaky)))
    found += _flaky_sources(report)
    found += [
        Finding(level="warning", title=w, detail="see the missing-data section")
        for w in report.missing.warnings
    ]
    found += _health_findings(report.health)
    found += [Finding(level="warning", title=w) for w in report.run.warnings]
    unpriced = sorted({m for role in report.cost.roles for m in role.unpriced})
    if unpriced:
        found.append(_finding("info", "no price for " + ", ".join(unpriced), "add them to the price table"))
    return found


_SOURCE_TEXT = {
    "bot": (
        "flaky bot",
        "the bot varies, not the simulated user: transcripts identical up to a bot turn, then a different "
        "bot answer to the same conversation so far",
    ),
    "reworded": (
        "answer differs with the user's wording",
        "the simulated user told the same facts in other words or typos (fidelity checks passed) and the "
        "bot's answer then differed: either it is not robust to rewording or typos, or it varies on its own; "
        "these transcripts differ from a user turn, so they cannot tell which (not a flaky bot: that needs "
        "transcripts identical up to the differing bot answer)",
    ),
    "simulation": (
        "flaky simulation",
        "the simulated user varied on evidence (a failed fidelity check, or different facts volunteered): "
        "fix the persona or user",
    ),
    "judge": ("flaky judge", "identical transcripts, different verdicts: tighten the rubric"),
    "undetermined": (
        "flaky, source not established",
        "the simulated user told a fact in some repeats and not in others, but the failing repeats did not "
        "miss it more often than chance allows (one-sided Fisher test, α = 0.05): no evidence either way "
        "whether the bot or the simulated user varied; run more repeats",
    ),
    "unaudited": (
        "flaky, source unknown",
        "the simulated user's words differed and nothing audited it (no fact provenance, no fidelity "
        "verdicts): run the fidelity audit (docs/fidelity.md) to tell the bot from the simulation",
    ),
}


def _flaky_sources(report: Report) -> list[Finding]:
    """One finding per source of variation (bot, the user's wording, simulated user, judge, unaudited),
    counting vignettes (variants said apart) and naming the scenarios.

    The simulation is blamed only on evidence, the bot only on identical histories (analysis/variance.py)."""
    found = []
    for source, (title, detail) in _SOURCE_TEXT.items():
        rows = [row for row in report.scenarios if row.flaky_source and source in row.flaky_source.sources]
        if rows:
            named = [row.id for row in rows]
            found.append(
                _finding("warning", f"{title}: {vignettes_counted(named)} ({', '.join(named)})", detail)
            )
    return found


def _simulator_findings(report: Report) -> list[Finding]:
    """Headlines about the simulated user: how often it failed fidelity, and bot failures it shares."""
    section = report.simulated_user
    if section is None:
        return []
    found = []
    if section.faulted.k:
        found.append(
            _finding(
                "warning",
                f"simulated user failed fidelity in {section.faulted.text} of the conversations",
                "read the simulated user section before trusting those conversations",
            )
        )
    if section.bot_failures_faulted:
        found.append(
            _finding(
                "warning",
                f"{section.bot_failures_faulted} of {len(section.attribution)} failed conversations "
                "also had a simulator fidelity failure",
                "those failures may be the simulated patient's, not the bot's",
            )
        )
    return found


@functools.cache
def full_report_model() -> type[Report]:
    """`Report` with every registered analysis as a declared field, unknown fields an error: the model a
    stored JSON report is validated against and the JSON schema is generated from."""
    fields: dict[str, Any] = {a.key: (a.annotation, a.default) for a in data_analyses() if a.key is not None}
    config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)
    model: type[Report] = create_model(
        "Report", __base__=Report, __doc__=Report.__doc__, __module__=__name__, **fields
    )
    model.model_config = {**model.model_config, **config}
    model.model_rebuild(force=True)
    return model


def _built(analysis: Analysis, run: RunData, options: ReportOptions) -> Any:
    value = analysis.build(run, options) if analysis.build is not None else None
    return analysis.default if value is None else value


def _all_findings(report: Report, options: ReportOptions) -> list[Finding]:
    """The core headlines (annotated by the analyses that read them), then each registered analysis's and
    the judges' notes, in their declared order: the summary lists them in this order, bugs first."""
    analyses = all_analyses()
    core = _findings(report, options)
    for analysis in analyses:
        if analysis.annotate is not None:
            core = analysis.annotate(core, report)
    parts: list[tuple[int, list[Finding]]] = [
        (CORE_FINDINGS, core),
        (CORE_FINDINGS + 5, _simulator_findings(report)),
    ]
    parts += [(a.findings_order, a.findings(report)) for a in analyses if a.findings is not None]
    notes = [Finding(level=lv, title=t, detail=d) for lv, t, d in judge_notes(report.judge_quality)]
    parts.append((CORE_FINDINGS + 50, notes))
    return [finding for _, found in sorted(parts, key=lambda part: part[0]) for finding in found]


def headline_rates(report: Report) -> list[tuple[str, RateView]]:
    """The rates that pool repeats of scenarios: outcome rates, overall pass rate, criterion failure rates."""
    rows: list[tuple[str, RateView]] = []
    outcome = report.outcome
    if outcome is not None:
        rows += [
            (f"{outcome.critical} sensitivity", outcome.critical_sensitivity),
            ("under-triage incl. no decision", outcome.under_triage),
            ("over-triage", outcome.over_triage),
            ("no decision", outcome.no_decision),
        ]
    rows.append(("pass rate (conversations)", report.overall))
    rows += [(f"{row.id} failure rate", row.fail_rate) for row in report.criteria if row.fail_rate.n]
    return rows


def _overall_covers(run: RunData) -> str:
    """The overall pass rate in words: a conversation passes when none of its judged checks failed, so a
    conversation whose LLM criteria were all `not_judged` counts on its code checks alone; say so."""
    grouped = run.verdicts_by_conversation()
    statuses = [
        (conversation_status(r, grouped.get(r.id, [])), grouped.get(r.id, [])) for r in run.conversations
    ]
    counted = [verdicts for status, verdicts in statuses if status in ("pass", "fail")]
    errored = sum(status == "error" for status, _ in statuses)
    unjudged = sum(status == "not_judged" for status, _ in statuses)
    partial = sum(any(v.result == "not_judged" for v in verdicts) for verdicts in counted)
    text = (
        f"conversations with no failed check, of {len(counted)} with a pass or fail verdict "
        f"(left out: {errored} errored, {unjudged} with nothing judged)"
    )
    if partial:
        text += (
            f"; {partial} of the {len(counted)} had criteria not judged (no judge model, or the judge failed), "
            "so it covers only the checks that were judged"
        )
    return text


def build_report(run: RunData, options: ReportOptions | None = None) -> Report:
    """Compute every metric of a run into one Report."""
    options = options or ReportOptions()
    suite = run.manifest.suite
    high_stakes = options.high_stakes_tag or (suite.high_stakes_tag if suite is not None else None)
    prices = options.prices or load_prices()
    criteria = criterion_rows(run, options.target)
    transcripts, left_out = (
        _transcripts(run, options.passing_transcripts) if options.transcripts else ([], None)
    )
    report = Report(
        generated_at=datetime.now(UTC),
        run=_run_info(run),
        target=options.target,
        high_stakes_tag=high_stakes,
        findings=[],
        overall=overall_pass_rate(run, options.target),
        outcome=outcome_metrics(run, options.target),
        omissions=[row for row in criteria if row.category == "omission"],
        criteria=criteria,
        scenarios=scenario_rows(run, high_stakes),
        tags=tag_rows(run, high_stakes),
        pass_hat_k=pass_hat_k_table(run),
        health=run_health(run, options.turn_limit_threshold),
        cost=cost_latency(run, prices),
        missing=missing_data(run),
        spread=run_spread(run),
        transcripts=transcripts,
        transcripts_left_out=left_out,
        golden=golden_section(run, options.gate),
        judge_quality=judge_quality(run),
        points=points_summary(run),
        simulated_user=simulated_user_section(run),
        factors=factors_section(run),
        **{a.key: _built(a, run, options) for a in data_analyses() if a.key is not None},
    )
    report.missing.warnings += moved_warning(headline_rates(report))
    report.findings = _all_findings(report, options)
    report.overall_covers = _overall_covers(run)
    if run.judge_set is None:
        report.findings.insert(0, Finding(level="warning", title="no verdicts: this run was not judged"))
    elif len(run.judge_sets) > 1:
        report.findings.append(
            Finding(
                level="info",
                title=f"judge set {short_hash(run.judge_set)} of {len(run.judge_sets)}",
                detail=PICK_JUDGE_SET,
            )
        )
    return report
