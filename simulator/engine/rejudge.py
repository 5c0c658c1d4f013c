"""Judging a stored run again: the suite it was made with (as its manifest recorded it) with the judges,
providers, judge models and samples asked for merged in, its scenarios read again from their files, and the
latest records of the scenarios still there. `simulator judge` parses its options, calls `prepare_rejudge`
and `judge_run`, and prints; the pytest plugin or a notebook can do the same."""

from __future__ import annotations

__all__ = ["RejudgeOptions", "prepare_rejudge", "stored_suite"]

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from simulator.config.scenario import Scenario
from simulator.config.suite import OutcomeConfig, Suite, check_environment, load_suite
from simulator.errors import UserError
from simulator.record.folder import RunFolder, latest_by_id
from simulator.record.hashing import sha256_file
from simulator.record.manifest import Manifest
from simulator.record.models import ConversationRecord

# Imported conversations were not made by a bot of ours: judging never calls it.
IMPORTED_BOT = {"type": "python", "factory": "simulator.traces:imported_conversations"}


@dataclass(frozen=True)
class RejudgeOptions:
    """What a re-judge changes: another suite's judges and providers, criterion paths, one judge model or
    a jury of several, samples per judgement."""

    suite_file: Path | None = None
    judges: list[Path] | None = None
    judge_model: str | None = None
    judge_models: list[str] | None = None
    samples: int | None = None
    # Read the outcome from these sources, in order, instead of the suite's `outcome.source`.
    outcome_source: list[str] | None = None


@dataclass
class Rejudge:
    """A stored run ready to judge again: the merged suite, the scenarios, the records to judge and what
    the reader should know (changed scenario files, scenarios gone)."""

    folder: RunFolder
    suite: Suite
    scenarios: list[Scenario]
    records: list[ConversationRecord]
    warnings: list[str] = field(default_factory=list)


def stored_suite(
    manifest: Manifest, folder: Path, given: Path | None = None, judges: list[Path] | None = None
) -> Suite:
    """The suite a run was made with, as its manifest recorded it (no need for the suite file itself). An
    imported run without a suite takes one from `given` (--suite), or a bare one when `judges` are named."""
    if manifest.kind == "imported" and manifest.suite is None:
        if given is not None:
            return load_suite(given)
        if judges:
            return Suite.model_validate(
                {"name": manifest.run_id, "bot": IMPORTED_BOT, "user": {"model": "real"}}
            )
        raise UserError(
            f"{folder} is an imported run with no suite; pass --suite FILE, or --judges PATH --judge-model M"
        )
    return manifest.rebuild_suite(folder)


def imported_scenarios(manifest: Manifest, folder: Path | None = None) -> list[Scenario]:
    """The scenarios of an imported run, from its manifest: expected values and tags as mapped on import,
    with the expected levels clinicians labelled in `folder`'s labels.jsonl over the trace's."""
    labelled = _labelled_levels(manifest, folder)
    return [
        Scenario(
            id=entry.id,
            persona="a real user (imported conversation)",
            goal="unknown: this conversation was imported, not simulated",
            expected={**entry.expected, **labelled.get(entry.id, {})},
            tags=entry.tags,
        )
        for entry in manifest.scenarios
    ]


def _labelled_levels(manifest: Manifest, folder: Path | None) -> dict[str, dict[str, str]]:
    """{scenario id: {outcome key: level}} from the clinicians' labels (record/labelled_levels.py)."""
    outcome = manifest.suite.outcome if manifest.suite is not None else None
    if folder is None or outcome is None:
        return {}
    from simulator.record.labelled_levels import read_labelled_levels

    found = read_labelled_levels(folder, f"outcome.{outcome.key}")
    if not found.levels:
        return {}
    records = RunFolder.open(folder).conversations_stored()
    return {r.scenario_id: {outcome.key: found.levels[r.id]} for r in records if r.id in found.levels}


def stored_scenarios(manifest: Manifest, folder: Path | None = None) -> tuple[list[Scenario], list[str]]:
    """The run's scenarios, read again from the files it recorded (absolute paths, checked by hash): a
    file that moved or changed since the run is refused, naming it (record/recorded.py), so a re-judge
    never reads another tree of scenarios whatever the working directory."""
    if manifest.kind == "imported":
        return imported_scenarios(manifest, folder), []
    from simulator.record.recorded import recorded_scenarios

    if not any(entry.file for entry in manifest.scenarios):
        return [], []
    where = folder if folder is not None else Path(manifest.run_id)
    suite = manifest.rebuild_suite(where) if manifest.suite is not None else None
    return recorded_scenarios(manifest, suite, where, suite_file=False), []


def _attach_suite(folder: RunFolder, manifest: Manifest, suite: Suite) -> None:
    """An imported run judged with --suite keeps that suite (its outcome levels give the report under- and
    over-triage), as if it had been named on import."""
    from simulator.record.redact import redacted_suite

    manifest.suite = redacted_suite(suite)
    manifest.suite.runs = 1  # one record per real conversation
    manifest.suite_file = str(suite.file.resolve()) if suite.file else None
    manifest.suite_hash = sha256_file(suite.file) if suite.file else None
    folder.write_manifest(manifest)


def _merge(suite: Suite, options: RejudgeOptions) -> None:
    """Options over the stored suite: another suite's judges and providers, then paths, models, samples."""
    if options.suite_file:
        given = load_suite(options.suite_file)
        check_environment(given)  # before it is merged: the error names this file's line
        suite.judges = given.judges.model_copy(
            update={"paths": [str(given.resolve(p).resolve()) for p in given.judges.paths]}
        )
        suite.providers = given.providers
    if options.judges:
        suite.judges.paths = [str(p.resolve()) for p in options.judges]
    if options.judge_model:
        suite.judges.model = options.judge_model
        suite.judges.models = []
    if options.judge_models:
        if len(set(options.judge_models)) != len(options.judge_models):
            raise UserError("--judge-models lists a model twice; use --samples to judge more than once")
        suite.judges.models = list(options.judge_models)
    if options.samples:
        suite.judges.samples = options.samples
    if options.outcome_source:
        suite.outcome = _outcome_source(suite, options.outcome_source)
    check_environment(suite)


def _outcome_source(suite: Suite, sources: list[str]) -> OutcomeConfig:
    """The suite's outcome read from other sources; a suite without `outcome:` or a source it cannot read
    (no `tool:` for `tool`) is a one-line error."""
    if suite.outcome is None:
        raise UserError("--outcome-source: the run's suite declares no `outcome:` (key and levels) to read")
    data = suite.outcome.model_dump(mode="json", exclude_unset=True)
    data["source"] = list(sources) if len(sources) > 1 else sources[0]
    try:
        return OutcomeConfig.model_validate(data)
    except ValidationError as exc:
        reason = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise UserError(f"--outcome-source {' '.join(sources)}: {reason}") from None


def prepare_rejudge(path: Path, options: RejudgeOptions) -> Rejudge:
    """Open the run as a writer (judging appends verdicts), merge the options into its suite and gather the
    latest records of the scenarios that still exist."""
    folder = RunFolder.resume(path)
    manifest = folder.read_manifest()
    suite = stored_suite(manifest, folder.path, options.suite_file, options.judges)
    if manifest.kind == "imported" and manifest.suite is None and options.suite_file:
        _attach_suite(folder, manifest, suite)
    _merge(suite, options)
    scenarios, warnings = stored_scenarios(manifest, folder.path)
    by_id = {s.id: s for s in scenarios}
    records = list(latest_by_id(folder.conversations()).values())
    gone = sorted({r.scenario_id for r in records} - set(by_id))
    if gone:
        warnings.append(f"scenarios no longer in their files, not judged: {', '.join(gone)}")
    records = [r for r in records if r.scenario_id in by_id]
    return Rejudge(folder, suite, scenarios, records, warnings)
