"""What `simulator.run` and `simulator.compare` return: a run folder (or a matrix folder) with its report,
typed, and rendered on demand as HTML, JSON or a terminal report."""

from __future__ import annotations

__all__ = ["Comparison", "Result"]

import html
import json
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.errors import UserError, did_you_mean, hint_then

if TYPE_CHECKING:
    from rich.console import Console

    from simulator.analysis.leaderboard import Leaderboard
    from simulator.analysis.outcome import OutcomeMetrics
    from simulator.analysis.outcome_agreement import OutcomeAgreement
    from simulator.engine.session import RunResult
    from simulator.record.models import DecidedOutcome
    from simulator.report.model import CriterionRow, Finding, Report, ScenarioRow, Transcript
    from simulator.stats.rates import RateView


def unknown_name(name: Any, known: list[str], what: str) -> str:
    """`name` is none of `known`: a did-you-mean, and the names there are."""
    hint = hint_then(did_you_mean(name, known))
    return f"no {what} {name!r} in this run; {hint}the {what}s are: {', '.join(map(repr, known)) or 'none'}"


class Result:
    """A finished run: its folder, this session's counts (`session`), and its report (`report`, the typed
    model every report format is drawn from), read from the folder when first asked for."""

    def __init__(self, folder: Path, session: RunResult | None = None) -> None:
        self.folder = Path(folder)
        self.session = session

    def __repr__(self) -> str:
        return "\n".join([f"Result(folder={str(self.folder)!r})", *(f"  {line}" for line in self.summary())])

    def _repr_html_(self) -> str:
        """A notebook shows the same summary as a small table, every value escaped (transcripts are data)."""
        rows = "".join(f"<li>{html.escape(line)}</li>" for line in self.summary())
        return f"<div><b>Result</b> <code>{html.escape(str(self.folder))}</code><ul>{rows}</ul></div>"

    def summary(self) -> list[str]:
        """The few lines a notebook user reads first: the run, its headline rates with their units, the
        errors counted apart and the findings, bugs first. Empty when the folder holds no readable run."""
        try:
            report = self.report
        except Exception:  # a repr never raises: a missing or unreadable folder simply has no summary
            return []
        info = report.run
        lines = [f"{info.suite}: {info.counted} ({info.status}); bot {info.bot}"]
        lines.append(f"conversations passing: {report.overall.text}")
        if report.outcome is not None:
            lines.append(f"{report.outcome.critical} sensitivity: {report.outcome.critical_sensitivity.text}")
            lines.append(f"under-triage: {report.outcome.under_triage.text}")
        lines.append(f"errors (counted apart, never pass or fail): {self.errors}")
        order = {"bug": 0, "warning": 1, "info": 2}
        findings = sorted(report.findings, key=lambda f: order[f.level])
        lines += [f"{f.level.upper()}: {f.title}" for f in findings[:5]]
        if len(findings) > 5:
            lines.append(f"... and {len(findings) - 5} more findings (result.findings)")
        return lines

    @cached_property
    def report(self) -> Report:
        """The report of the run folder (its latest judge set), transcripts included."""
        from simulator.analysis.rundata import load_run
        from simulator.report.model import ReportOptions, build_report

        return build_report(load_run(self.folder), ReportOptions(transcripts=True))

    @property
    def overall(self) -> RateView:
        """Conversations that passed every criterion, of those judged (errors left out)."""
        return self.report.overall

    @property
    def outcome(self) -> OutcomeMetrics | None:
        """Under- and over-triage, critical sensitivity...; None when the suite declares no outcome levels."""
        return self.report.outcome

    @property
    def outcome_sources(self) -> OutcomeAgreement | None:
        """Agreement between the suite's outcome sources, the disagreements and the mix of outcomes; None
        when the outcome is read from the bot's state alone (docs/outcome-sources.md)."""
        agreement: OutcomeAgreement | None = self.report.analysis("outcome_sources")
        return agreement

    def decided_outcomes(self) -> dict[str, DecidedOutcome]:
        """Each conversation's outcome as judging decided it: the source, the level, the deciding quote and
        every source's reading (conversations judged before outcome sources existed are absent)."""
        from simulator.analysis.outcome import decided_outcome
        from simulator.analysis.rundata import load_run

        run = load_run(self.folder)
        found = {r.id: decided_outcome(run, r) for r in run.conversations}
        return {cid: outcome for cid, outcome in found.items() if outcome is not None}

    @property
    def under_triage(self) -> RateView:
        """Conversations whose outcome fell below the expected level; a UserError without outcome levels."""
        return self._declared_outcome("under_triage").under_triage

    @property
    def critical_sensitivity(self) -> RateView:
        """Critical-level scenarios the bot sent to that level; a UserError without outcome levels."""
        return self._declared_outcome("critical_sensitivity").critical_sensitivity

    def _declared_outcome(self, rate: str) -> OutcomeMetrics:
        """The outcome metrics a rate is read from; a suite without outcome levels has none to give."""
        outcome = self.report.outcome
        if outcome is None:
            raise UserError(
                f"result.{rate}: this run's suite declares no outcome levels; declare them (suite file: "
                "outcome: {key: STATE_KEY, levels: [lowest, ..., highest], critical: ...}; in Python: "
                "Suite(outcome={'key': ..., 'levels': [...], 'critical': ...})) and run again "
                "(result.outcome is None for such a run)"
            )
        return outcome

    @property
    def errors(self) -> int:
        """Conversations that ended in an error (counted apart, never as pass or fail)."""
        return self.report.health.conversation_errors.k

    @property
    def findings(self) -> list[Finding]:
        return self.report.findings

    @property
    def criteria(self) -> list[CriterionRow]:
        return self.report.criteria

    @property
    def scenarios(self) -> list[ScenarioRow]:
        return self.report.scenarios

    @property
    def conversations(self) -> list[Transcript]:
        """Every conversation: turns, final state, verdicts with reasons and evidence."""
        return self.report.transcripts

    def scenario_status(self, scenario_id: str) -> list[str]:
        """pass / fail / error / not_judged of each conversation of one scenario (an id the run has not is
        refused: an empty list read as "nothing failed")."""
        found = [t.status for t in self.report.transcripts if t.scenario_id == scenario_id]
        if not found:
            known = sorted(
                {row.id for row in self.report.scenarios} | {t.scenario_id for t in self.report.transcripts}
            )
            raise UserError(f"result.scenario_status: {unknown_name(scenario_id, known, 'scenario')}")
        return found

    def to_html(self) -> str:
        """The self-contained HTML report (what `simulator report --html` writes)."""
        from simulator.report.html import render_html

        return render_html(self.report)

    def to_json(self, transcripts: bool = False) -> str:
        """The JSON report (what `simulator report --json` writes)."""
        from simulator.report.json_report import report_json

        return json.dumps(report_json(self.report, transcripts), indent=2, ensure_ascii=False)

    def print(self, console: Console | None = None) -> None:
        """The terminal report (what `simulator report` prints)."""
        from simulator.report.terminal import render_terminal

        render_terminal(self.report, console)


class Comparison:
    """A finished matrix run: its folder, one Result per cell, and the leaderboard that ranks the cells."""

    def __init__(self, path: Path, results: dict[str, Result], baseline: str | None = None) -> None:
        self.path = Path(path)
        self.results = results
        self.baseline = baseline
        self.aborted: dict[str, str] = {
            cell: r.session.abort_reason
            for cell, r in results.items()
            if r.session is not None and r.session.abort_reason
        }

    def __repr__(self) -> str:
        return f"Comparison(path={str(self.path)!r}, cells={list(self.results)})"

    @cached_property
    def leaderboard(self) -> Leaderboard:
        """Cells ranked on the same scenarios, with paired tests against the baseline."""
        from simulator.analysis.leaderboard import build_leaderboard

        return build_leaderboard(self.path, self.baseline)

    @property
    def best(self) -> str | None:
        """The cell the leaderboard calls best (None when no cell could be judged)."""
        return self.leaderboard.best

    def to_html(self) -> str:
        from simulator.report.leaderboard_html import render_leaderboard_html

        return render_leaderboard_html(self.leaderboard)

    def to_json(self) -> str:
        return self.leaderboard.model_dump_json(indent=2)

    def to_markdown(self) -> str:
        from simulator.report.leaderboard import leaderboard_markdown

        return leaderboard_markdown(self.leaderboard)

    def print(self, console: Console | None = None) -> None:
        from simulator.report.leaderboard import render_leaderboard

        render_leaderboard(self.leaderboard, console)

    def __getitem__(self, cell: str) -> Result:
        if cell not in self.results:
            raise UserError(f"comparison[{cell!r}]: {unknown_name(cell, list(self.results), 'cell')}")
        return self.results[cell]

    def __iter__(self) -> Any:
        return iter(self.results.items())
