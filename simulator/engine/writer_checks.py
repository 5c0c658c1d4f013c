"""Writers' mistakes that each file alone cannot show, found by `validate` and the desk's editor alike.

Each file of a suite may be valid and the suite still wrong: a criterion whose `applies_to` names a tag no
scenario of the suite has never applies (silently: every verdict is `not_applicable`), and a scenario whose
id differs from its file's name is looked for under the wrong name in reports, `show` and the desk. These
checks read what a run reads (the suite's scenarios with their variants, its criteria) and name the file,
line and field of each mistake with its fix.
"""

from __future__ import annotations

__all__ = ["file_name_problems", "writer_findings"]

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.config.suite import Suite
from simulator.errors import Problem, UserError, did_you_mean, hint_then


def file_name_problems(scenarios: Iterable[Any]) -> list[Problem]:
    """A file that holds one scenario is named after its id (`chest-pain-01.yaml` holds `id: chest-pain-01`);
    files holding a list, drafts, golden items and variants are not checked."""
    by_file: dict[str, list[Any]] = {}
    for scenario in scenarios:
        # A draft is not a test yet (its reviewer names it when accepting); golden items and variants
        # are named by their files and factors.
        if scenario.script is None and scenario.base is None and not scenario.draft and scenario._source:
            by_file.setdefault(scenario._source, []).append(scenario)
    problems = []
    for file, found in by_file.items():
        path = Path(file)
        named = "-".join(path.stem.split())  # an id has no spaces: `first scenario.yaml` names first-scenario
        if len(found) != 1 or path.suffix not in (".yaml", ".yml") or found[0].id == named:
            continue
        scenario = found[0]
        message = (
            f"id '{scenario.id}' differs from the file name '{path.name}'; rename the file to "
            f"{scenario.id}{path.suffix} or set `id: {named}` (reports, `show` and the desk find a "
            "scenario by its id)"
        )
        problems.append(Problem(file, message, scenario.line_of("id"), "id"))
    return problems


@dataclass
class WriterFindings:
    """Mistakes (`validate` fails on them) and notes (printed, not failing: a criterion kept for scenarios
    this suite does not run, such as a shared judges folder's red-team criteria)."""

    problems: list[Problem] = field(default_factory=list)
    # (what never applies, the suite where): grouped by the caller over several suites.
    notes: list[tuple[str, str]] = field(default_factory=list)


def _shown(file: str) -> str:
    """A path relative to the working folder when it is under it, as the user typed it."""
    try:
        return str(Path(file).relative_to(Path.cwd()))
    except ValueError:
        return file


def _reach(criteria: list[Any], tags: set[str], suite_file: str, found: WriterFindings) -> None:
    """Each criterion whose `applies_to` names only tags no scenario of the suite has (variants included):
    a mistake when a tag is a near miss of one the suite has (a typo), else a note, never silent."""
    for criterion in criteria:
        wanted = list(criterion.applies_to)
        if not wanted or set(wanted) & tags:
            continue
        guesses = [guess for tag in wanted if (guess := did_you_mean(tag, sorted(tags), cutoff=0.75))]
        if not guesses:
            where = _shown(criterion._source) + (f":{criterion._line}" if criterion._line else "")
            found.notes.append((f"criterion '{criterion.id}' ({where}, applies_to {wanted})", suite_file))
            continue
        message = (
            f"applies_to {wanted}: no scenario of {suite_file} has these tags, so this criterion never "
            f"applies; {hint_then(guesses[0])}fix the tag, or tag the scenarios it is for"
        )
        found.problems.append(
            Problem(_shown(criterion._source), message, criterion.line_of("applies_to"), "applies_to")
        )


def writer_findings(suite: Suite) -> WriterFindings:
    """Every writer's mistake in a suite that its files alone do not show (see the module docstring); the
    files' own problems are reported by their loaders, so a suite that does not load gives none here."""
    from simulator.config.factors import suite_scenarios
    from simulator.config.loading import load_scenarios
    from simulator.judging.criteria import load_criteria

    try:
        bases = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
        scenarios = suite_scenarios(suite, suite.scenarios.tags)
    except UserError:
        return WriterFindings()
    found = WriterFindings(problems=file_name_problems(bases))
    if suite.judges.paths:
        try:
            criteria = load_criteria([suite.resolve(p) for p in suite.judges.paths])
        except UserError:
            return found
        tags = {tag for scenario in scenarios for tag in scenario.tags}
        _reach(criteria, tags, str(suite.file or "the suite"), found)
    return found
