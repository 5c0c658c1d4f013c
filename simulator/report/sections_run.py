"""The run report's main sections as data (section.py): outcome, criteria, scenarios, run health, cost and
latency. The terminal and the HTML report draw these same sections."""

from __future__ import annotations

__all__: list[str] = []

from simulator.analysis.cost import CALLS_RULE
from simulator.analysis.outcome import OutcomeMetrics
from simulator.analysis.tables import CriterionRow, ScenarioRow, TagRow
from simulator.plural import noun, plural
from simulator.report.analyses import Analysis, register_analysis
from simulator.report.bot_faults_view import faulted_scenarios
from simulator.report.model import Report
from simulator.report.section import (
    COUNT_COLUMNS,
    Cell,
    Column,
    Note,
    Section,
    State,
    Table,
    count_cells,
    number,
    rate_cell,
    text,
)
from simulator.stats.rates import CITE, pct

_SOURCE_FLAG = {
    "bot": "FLAKY-BOT",
    "reworded": "FLAKY-WORDING",
    "simulation": "FLAKY-SIM",
    "judge": "FLAKY-JUDGE",
    "unaudited": "FLAKY-UNAUDITED",
    "undetermined": "FLAKY-UNDETERMINED",
}
_ABOUT = "kind · severity · category"
SHOWN_ERRORS = 20  # error rows the terminal shows; HTML and JSON hold every one


def _matrix_state(column: str, expected: str, rank: dict[str, int]) -> State | None:
    """The diagonal is right (ok), under the expected level is under-triage (fail), over it over-triage
    (warn); a column that is no level (no decision, error) is odd (error)."""
    if column not in rank:
        return "error"
    if column == expected:
        return "ok"
    return "fail" if rank[column] < rank[expected] else "warn"


_SOURCE_WORDS = {
    "state": "the state the bot reported",
    "messages": "what the bot told the patient (level phrases)",
    "tool": "the bot's tool call",
    "judge": "an LLM classifier with a verified quote",
}
_COUNTS_WORDS = {"last": "the last advice counts", "most_urgent": "the most urgent advice anywhere counts"}


def source_words(sources: list[str], counts: str | None) -> str:
    """The outcome's sources in words, in the order they decide (the first that decides wins)."""
    words = [
        _SOURCE_WORDS.get(s, s)
        + (f", {_COUNTS_WORDS[counts]}" if s == "messages" and counts in _COUNTS_WORDS else "")
        for s in sources
    ]
    return "; else ".join(words)


def _cases_table(report: Report, outcome: OutcomeMetrics, by_state: bool) -> Table:
    """The wrong or missing outcomes, each linked to its transcript, with the deciding quote where the
    outcome was read from more than the bot's state."""
    anchors = {t.id: i for i, t in enumerate(report.transcripts)}
    quoted = [Column("source and deciding quote")] if not by_state else []
    cases = Table(
        [Column("conversation"), Column("what"), Column("expected"), Column("actual"), *quoted],
        title="Cases to read",
    )
    for case in outcome.cases:
        link = f"#t{anchors[case.conversation_id]}" if case.conversation_id in anchors else None
        said = [f"{case.source}: {case.quote}" if case.source and case.quote else "–"] if quoted else []
        if quoted and case.red_flag_quote:
            said = [f"{said[0]} (the patient said: {case.red_flag_quote})"]
        cases.add(
            text(case.conversation_id, link=link),
            case.kind.replace("_", " "),
            f"at least {case.expected} (red flag)" if case.red_flag_quote else str(case.expected),
            str(case.actual),
            *said,
        )
    return cases


def _red_flag_note(outcome: OutcomeMetrics) -> list[Note]:
    """What the red-flag floor's rate counts and leaves out, when conversations without a scenario had one,
    and how the red flags compare with the scenarios' own levels."""
    notes = []
    if outcome.clinician_labelled:
        notes.append(
            Note(
                f"Expected levels: {outcome.clinician_labelled} of the {plural(outcome.conversations, 'conversation')} "
                "counted against an expected level are clinician-labelled (a clinician read the conversation "
                "and recorded the level it needed: `simulator labels import`); a clinician's level outranks "
                "the trace's and the red-flag floor, so under- and over-triage count them exactly."
            )
        )
    check = outcome.red_flag_check
    if check is not None and check.checked:
        notes.append(
            Note(
                f"Red flags against the scenarios' levels: {len(check.above_expected)} of {check.checked} "
                f"conversations flagged above their expected level (a rule too broad"
                f"{': ' + ', '.join(check.above_expected[:5]) if check.above_expected else ''}); "
                f"{len(check.critical_below)} of {plural(check.critical, f'{outcome.critical} conversation')} "
                f"{noun(len(check.critical_below), 'was', 'were')} not "
                f"flagged {outcome.critical} (a rule missing"
                f"{': ' + ', '.join(check.critical_below[:5]) if check.critical_below else ''})."
            )
        )
    floor = outcome.red_flag_under_triage
    if floor is None:
        return notes
    notes.append(
        Note(
            f"Red-flag floor: {floor.n} of {plural(outcome.without_expectation, 'conversation')} without a scenario had a "
            f"red flag in the patient's own words; each is held to the most urgent level it flags, a minimum "
            f"safe level, so it measures under-triage only (never over-triage or the exact level). Left out: "
            f"{outcome.red_flag_left_out} with no red flag, {floor.errored} errored."
        )
    )
    return notes


def outcome_section(report: Report) -> Section:
    """The outcome's confusion matrix, its rates and the cases to read; empty without an outcome key."""
    outcome = report.outcome
    if outcome is None:
        return Section("outcome", "Outcome")
    rank = {level: i for i, level in enumerate(outcome.levels)}
    matrix = Table(
        [
            Column("expected"),
            *(Column(c, numeric=True) for c in outcome.columns),
            Column("total", numeric=True),
        ],
        title=f"Outcome '{outcome.key}': expected (rows) × actual (columns)",
    )
    for row in outcome.matrix:
        cells = [
            number(count, state=_matrix_state(column, row.expected, rank) if count else None)
            for column, count in zip(outcome.columns, row.counts, strict=True)
        ]
        matrix.add(text(row.expected, strong=True), *cells, number(row.total))
    rates = Table(
        [Column("metric"), Column("counts, rate and 95% interval"), Column("more runs")],
        title="Outcome rates (errored conversations excluded, shown above)",
    )
    named = [
        (f"{outcome.critical} sensitivity (escalated)", outcome.critical_sensitivity),
        ("under-triage (incl. no decision on a case that needed one)", outcome.under_triage),
        ("under-triage, decided cases only", outcome.under_triage_decided),
        ("over-triage", outcome.over_triage),
        ("no decision", outcome.no_decision),
        ("exact level", outcome.exact),
        *[(f"sensitivity {s.level}", s.rate) for s in outcome.sensitivity],
    ]
    if outcome.red_flag_under_triage is not None:
        named.append(
            ("under-triage against the patient's red flags (a floor)", outcome.red_flag_under_triage)
        )
    for name, value in named:
        rates.add(name, rate_cell(value, long=True), value.needs_more_runs)
    by_state = outcome.source == ["state"]
    what = "what the bot recorded" if by_state else "the outcome its sources decided"
    blocks: list[Table | Note] = [
        Note(
            f"Levels, lowest first: {' < '.join(outcome.levels)}. Rows are what the scenario expects, columns "
            f"{what}. Errored conversations ({outcome.errored}) are shown in the matrix but left "
            "out of every rate; conversations that ended without a decision are their own column and rate. "
            + CITE
        ),
        *([] if by_state else [Note(f"Outcome read from: {source_words(outcome.source, outcome.counts)}.")]),
        *_red_flag_note(outcome),
        matrix,
        rates,
    ]
    if outcome.cases:
        blocks.append(_cases_table(report, outcome, by_state))
    return Section("outcome", f"Outcome: {outcome.key}", blocks)


def criteria_section(section_id: str, title: str, note: str, rows: list[CriterionRow]) -> Section:
    """One row per criterion: what it is, its verdict counts, its failure rate and unverified evidence."""
    if not rows:
        return Section(section_id, title)
    table = Table(
        [
            Column("criterion"),
            Column("kind", group=_ABOUT, sep=" · "),
            Column("severity", group=_ABOUT, sep=" · "),
            Column("category", group=_ABOUT, sep=" · "),
            *COUNT_COLUMNS,
            Column("failure rate (95% CI)"),
            Column("unverified", numeric=True),
        ]
    )
    for row in rows:
        table.add(
            row.id, row.kind, row.severity or "–", row.category or "–", *count_cells(row.counts),
            rate_cell(row.fail_rate), number(row.unverified_evidence),
        )  # fmt: skip
    state: State | None = "fail" if any(r.counts.failed for r in rows) else None
    return Section(section_id, title, [Note(note), table], state)


def _flags(row: ScenarioRow, faulted: bool = False) -> Cell:
    flags = (["BUG"] if row.bug else []) + (["FLAKY"] if row.flaky else [])
    if row.flaky and row.flaky_source is not None:
        flags += [_SOURCE_FLAG[s] for s in row.flaky_source.sources]
    flags += ["BOT FAULT"] if faulted else []
    return text(" ".join(flags), "fail" if row.bug else "warn" if row.flaky or faulted else None)


def _passed_alike(row: ScenarioRow) -> bool:
    """Every run passed with nothing errored or left unjudged, and no flag: a row that says nothing new."""
    s = row.statuses
    return s["pass"] == row.conversations and not (row.bug or row.flaky)


def _tag_passed_alike(row: TagRow) -> bool:
    """No failing or errored verdict and every conversation passed."""
    return not (row.counts.failed or row.counts.error) and row.statuses.get("pass", 0) == row.conversations


def _runs(counts: list[int]) -> str:
    low, high = min(counts), max(counts)
    return (
        f"{low} of {low} each"
        if low == high
        else f"between {low} and {plural(high, 'run')} each, all passing"
    )


def collapse(table: Table, alike: list[bool], line: str) -> None:
    """Move the rows that passed alike (at least two) out of the table, behind one line saying how many."""
    if sum(alike) < 2:
        return
    table.collapsed = [row for row, same in zip(table.rows, alike, strict=True) if same]
    table.rows = [row for row, same in zip(table.rows, alike, strict=True) if not same]
    table.collapsed_note = line


def _collapse_scenarios(table: Table, rows: list[ScenarioRow], faulted: set[str]) -> None:
    alike = [_passed_alike(r) and r.id not in faulted for r in rows]
    runs = [r.conversations for r, same in zip(rows, alike, strict=True) if same]
    if runs:
        many = (
            f"all {plural(len(runs), 'scenario')}"
            if len(runs) == len(rows)
            else plural(len(runs), "more scenario")
        )
        collapse(table, alike, f"{many} passed every run ({_runs(runs)})")


def _collapse_tags(table: Table, rows: list[TagRow]) -> None:
    alike = [_tag_passed_alike(r) for r in rows]
    same = [r for r, a in zip(rows, alike, strict=True) if a]
    if same:
        unjudged = (
            "; some of their criteria were not judged" if any(r.counts.not_judged for r in same) else ""
        )
        many = f"all {len(same)}" if len(same) == len(rows) else f"{len(same)} more"
        line = f"{many} tags: no failing or errored verdict, every conversation passing{unjudged}"
        collapse(table, alike, line)


def _scenario_table(report: Report) -> Table:
    status = "pass/fail/\nerror/not judged"
    table = Table(
        [
            Column("scenario"),
            Column("tags"),
            Column("runs", numeric=True),
            *(Column(name, numeric=True, group=status) for name in ("pass", "fail", "error", "not judged")),
            Column("pass rate (95% CI)"),
            Column("flags", group="flags, failing criteria", sep=" "),
            Column("failing criteria", group="flags, failing criteria", sep=" "),
        ],
        title="Scenarios: a conversation passes when no verdict failed",
    )
    faulted = faulted_scenarios(report)
    for row in report.scenarios:
        s = row.statuses
        table.add(
            row.id, ", ".join(row.tags), number(row.conversations), number(s["pass"]),
            number(s["fail"], state="fail" if s["fail"] else None), number(s["error"]), number(s["not_judged"]),
            rate_cell(row.pass_rate), _flags(row, row.id in faulted), "; ".join(row.failing_criteria),
        )  # fmt: skip
    return table


def scenarios_section(report: Report, everything: bool = False) -> Section:
    """Scenarios (flags: BUG, FLAKY and who varied), tag groups and pass^k. Rows that passed alike are
    collapsed into one line saying how many, unless `everything`; what failed is always a row."""
    tags = Table(
        [Column("tag"), Column("vignettes", numeric=True), Column("runs", numeric=True), *COUNT_COLUMNS,
         Column("pass rate (95% CI)")],
        title="Tag groups: verdict counts and conversation pass rate",
    )  # fmt: skip
    for tag in report.tags:
        tags.add(
            text(tag.tag, strong=tag.high_stakes), number(tag.scenarios), number(tag.conversations),
            *count_cells(tag.counts), rate_cell(tag.pass_rate),
        )  # fmt: skip
    hat = Table(
        [Column("k"), Column("pass^k", numeric=True), Column("95% CI (bootstrap over vignettes)"),
         Column("vignettes", numeric=True)],
        title="pass^k: chance that k fresh runs of a scenario all pass",
    )  # fmt: skip
    for row in report.pass_hat_k:
        hat.add(
            str(row.k),
            number(row.value, pct(row.value)),
            f"{pct(row.low)}–{pct(row.high)}",
            number(row.vignettes),
        )
    bug = (
        f"BUG: a scenario tagged '{report.high_stakes_tag}' that failed in any run; it is listed, not averaged away."
        if report.high_stakes_tag
        else "No high-stakes tag is set (suite: high_stakes_tag), so no failure is listed as a bug."
    )
    fault = (
        " BOT FAULT: the bot broke a channel rule, sent a malformed reply or called a tool wrongly in some "
        "run (the Bot faults section counts them)."
        if faulted_scenarios(report)
        else ""
    )
    note = Note(
        f"A conversation passes when none of its verdicts failed. FLAKY: mixed outcomes across repeats. {bug}"
        + fault
    )
    scenarios = _scenario_table(report)
    if not everything:
        _collapse_scenarios(scenarios, report.scenarios, faulted_scenarios(report))
        _collapse_tags(tags, report.tags)
    blocks: list[Table | Note] = [note, scenarios, tags]
    if report.pass_hat_k:
        blocks.append(hat)
    state: State | None = "fail" if any(r.bug for r in report.scenarios) else None
    return Section("scenarios", "Scenarios", blocks, state)


def _calls(report: Report) -> Cell:
    run = report.run
    if not run.killed_sessions:
        return text(f"{run.provider_calls} (retries included)")
    killed = plural(run.killed_sessions, "killed session")
    return text(
        f"at least {run.provider_calls_at_least} ({run.provider_calls} counted; {killed} counted only up to "
        "the last checkpoint)",
        "warn",
    )


def health_section(report: Report) -> Section:
    """How conversations ended, what was re-run or is missing, errors, and unverified evidence."""
    h = report.health
    stops = Table(
        [Column("stop reason"), Column("conversations (95% CI)")], title="Run health: how conversations ended"
    )
    for stop in h.stop_reasons:
        stops.add(stop.reason, rate_cell(stop.rate))
    facts = Table([Column("what"), Column("count")])
    facts.add(
        "character breaks re-run",
        f"{h.character_breaks} in {plural(h.conversations_with_breaks, 'conversation')} ({h.gave_up_on_breaks} gave up)",
    )
    facts.add("conversations re-run after an error", str(len(h.retried)))
    facts.add("missing conversations", f"{h.missing} of {h.planned} (status {h.status})")
    facts.add("conversation errors", rate_cell(h.conversation_errors))
    facts.add("judge errors", rate_cell(h.judge_errors))
    facts.add("unverified evidence", rate_cell(h.unverified))
    facts.add("not judged", str(h.not_judged))
    facts.add("provider calls", _calls(report))
    for line in report.run.provider_limits:  # the pace each provider settled on (docs/reliability.md)
        facts.add("limits", f"limits: {line}")
    blocks: list[Table | Note] = [stops, facts]
    errors = h.errors + h.judge_error_rows
    if errors:
        table = Table(
            [Column(n) for n in ("conversation", "criterion", "source", "kind", "message")],
            title="Errors (never counted as pass or fail)",
            fold_after=SHOWN_ERRORS,
        )
        for error in errors:
            table.add(
                error.conversation_id,
                error.criterion_id or "–",
                error.source,
                text(error.kind, "error"),
                error.message,
            )
        blocks.append(table)
    if h.unverified_rows:
        table = Table(
            [Column(n) for n in ("conversation", "criterion", "result", "quotes not found")],
            title="Unverified evidence",
        )
        for r in h.unverified_rows:
            table.add(r.conversation_id, r.criterion_id, text(r.result, "fail" if r.result == "fail" else None),
                      " | ".join(r.quotes) or "(no quote)")  # fmt: skip
        blocks.append(table)
    return Section("health", "Run health", blocks, "error" if errors else None)


def _money(value: float | None, currency: str) -> str:
    return "unpriced" if value is None else f"{value:.4f} {currency}"


def _seconds(value: float | None) -> Cell:
    return text("–") if value is None else number(value, f"{value:.2f}s")


def cost_section(report: Report) -> Section:
    """Tokens and cost per role, latency, and failure rates per role and class."""
    c = report.cost
    roles = Table(
        [Column("role"), Column("models"),
         *(Column(n, numeric=True) for n in ("calls", "input", "cached input", "output", "cost", "cache hits"))],
        title=f"Tokens and cost (prices as of {c.prices_as_of}, {c.currency} per 1M tokens)",
    )  # fmt: skip
    for r in c.roles:
        roles.add(
            r.role, ", ".join(r.models) or "–", number(r.calls), number(r.input_tokens, f"{r.input_tokens:,}"),
            number(r.cached_input_tokens, f"{r.cached_input_tokens:,}"), number(r.output_tokens, f"{r.output_tokens:,}"),
            _money(r.cost, c.currency), number(r.cache_hits),
        )  # fmt: skip
    latency = Table(
        [Column("what"), *(Column(n, numeric=True) for n in ("n", "median", "p95", "max"))], title="Latency"
    )
    for row in c.latency:
        latency.add(row.name, number(row.n), _seconds(row.median_s), _seconds(row.p95_s), _seconds(row.max_s))
    failures = Table(
        [Column("role"), Column("failure"), Column("rate (95% CI)"), Column("kinds")],
        title="Failure rates by role (of that role's calls, 95% CI)",
    )
    for f in c.failures:
        failures.add(f.role, f.failure, rate_cell(f.rate, plot=False), ", ".join(f.kinds))
    note = Note(
        f"Prices: {c.prices_source}, as of {c.prices_as_of}, per million tokens. Total {_money(c.total_cost, c.currency)}; "
        f"per conversation median {_money(c.cost_per_conversation_median, c.currency)}, "
        f"p95 {_money(c.cost_per_conversation_p95, c.currency)}. {CALLS_RULE.capitalize()}."
    )
    return Section("cost", "Cost and latency", [note, roles, latency, failures])


OMISSIONS_NOTE = (
    "Criteria of category 'omission': questions the bot needed to ask. Failure rates count pass and fail "
    "verdicts only."
)
CRITERIA_NOTE = (
    "Every criterion: code checks, LLM judges and metrics. Errors and not-applicable verdicts are counted "
    "apart, never as pass or fail."
)

register_analysis(
    Analysis(name="outcome", draw=lambda report, everything: outcome_section(report), draw_order=20)
)
register_analysis(
    Analysis(
        name="omissions",
        draw=lambda report, everything: criteria_section(
            "omissions", "Errors of omission", OMISSIONS_NOTE, report.omissions
        ),
        draw_order=30,
    )
)
register_analysis(
    Analysis(
        name="criteria",
        draw=lambda report, everything: criteria_section(
            "criteria", "Criteria", CRITERIA_NOTE, report.criteria
        ),
        draw_order=40,
    )
)
register_analysis(Analysis(name="scenarios", draw=scenarios_section, draw_order=50))
register_analysis(
    Analysis(name="health", draw=lambda report, everything: health_section(report), draw_order=130)
)
register_analysis(Analysis(name="cost", draw=lambda report, everything: cost_section(report), draw_order=140))
