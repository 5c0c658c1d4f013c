"""The files a run was made from, found where the manifest recorded them and checked by their hashes.

`run --resume` and `judge` read scenario files (and the suite file's folder) again. They must read the very
files the run was made from: resolved against the absolute paths the manifest recorded, never against today's
working directory, and refused (naming the file) when a file moved or its content changed, so that a resume
started from another folder never loads a different tree of scenarios. The files the suite's settings name
(`user.vocabulary`, a chat bot's `system_prompt_file`: config/named_files.py) are recorded by content hash
too, so a resume reads them as they were, and two runs are compared on their content, not their paths.
"""

from __future__ import annotations

__all__ = [
    "recorded_scenarios",
    "resumed_scenarios",
    "scenario_file_hashes",
    "scenario_hash",
    "setting_file_hashes",
]

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.config.named_files import dotted, named_files, named_places, place
from simulator.errors import Problem, UserError, field_path
from simulator.record.hashing import sha256_file, sha256_text

if TYPE_CHECKING:
    from simulator.config.scenario import Scenario
    from simulator.config.suite import Suite
    from simulator.record.manifest import Manifest

_FIX = "restore it as it was, or start a new run with `simulator run SUITE`"


def recorded_path(recorded: str) -> Path:
    """A path as the manifest stored it. New runs store absolute paths; an older run's relative path is taken
    relative to the working directory, which is safe only because its content hash is checked next."""
    return Path(recorded)


def setting_file_hashes(suite: Suite) -> dict[str, str]:
    """The content hash of every file the suite's settings name, by setting (`{"user.vocabulary":
    "sha256:..."}`), and the place of a file runs write (`{"cache.path": "place:c.sqlite"}`): what a run
    records, and what a resume's suite file is compared by. A file that cannot be read has none (its setting
    is compared as written; reading it is refused where it is read)."""
    hashes = {}
    for loc, _, path in named_files(suite, suite.base_dir):
        with contextlib.suppress(OSError, UserError):
            if path.is_file():
                hashes[dotted(loc)] = sha256_file(path)
    for loc, _, path in named_places(suite, suite.base_dir):
        with contextlib.suppress(OSError, RuntimeError):  # a link loop: compared as written
            hashes[dotted(loc)] = place(path, suite.base_dir)
    return hashes


def _check_one(path: str, digest: str | None, what: str, file: Path | None = None) -> Problem | None:
    file = file or recorded_path(path)
    if not file.is_file():
        return Problem(path, f"the {what} of this run is no longer here (moved or deleted); {_FIX}")
    if digest and sha256_file(file) != digest:
        return Problem(path, f"the {what} of this run changed since the run ({digest[:19]}...); {_FIX}")
    return None


def _setting_problems(manifest: Manifest, suite: Suite) -> list[Problem]:
    """The files the run's settings name (as the rebuilt suite reaches them) that moved or changed."""
    recorded = manifest.setting_files or {}  # a run made before they were recorded: nothing to check
    problems = []
    for loc, _, path in named_files(suite, suite.base_dir):
        digest = recorded.get(dotted(loc))
        found = _check_one(str(path), digest, f"{field_path(loc)} file", path) if digest else None
        problems += [found] if found else []
    return problems


def check_recorded_files(
    manifest: Manifest, folder: Path, *, suite_file: bool = True, suite: Suite | None = None
) -> None:
    """Raise one UserError naming every recorded file (suite, scenarios, the files `suite`'s settings name)
    that moved or changed. `judge` leaves the suite file and its settings' files out: it judges with the
    manifest's suite and may be given another (`--suite`)."""
    problems: list[Problem] = []
    if suite_file and manifest.suite_file:
        found = _check_one(manifest.suite_file, manifest.suite_hash, "suite file")
        problems += [found] if found else []
    if suite_file and suite is not None:
        problems += _setting_problems(manifest, suite)
    seen: set[str] = set()
    for entry in manifest.scenarios:
        if entry.file and entry.file not in seen:
            seen.add(entry.file)
            found = _check_one(entry.file, entry.sha256, "scenario file")
            problems += [found] if found else []
    if problems:
        raise UserError(f"{folder}: the files this run was made from are not as recorded", problems)


def recorded_scenarios(
    manifest: Manifest, suite: Suite | None, folder: Path, *, suite_file: bool = True
) -> list[Scenario]:
    """The run's own scenarios, read from the files it recorded (never a fresh glob of the suite's folders)
    and expanded as the suite expands them (`Suite.scenarios_to_run`: persona factors, red-team variants,
    held-out marks); every recorded scenario must be found."""
    from simulator.config.loading import load_scenarios

    check_recorded_files(manifest, folder, suite_file=suite_file, suite=suite)
    files = [recorded_path(f) for f in sorted({entry.file for entry in manifest.scenarios if entry.file})]
    wanted = {entry.id for entry in manifest.scenarios if entry.file}
    if not files:
        return []
    if suite is None:
        scenarios = [s for s in load_scenarios(files) if s.id in wanted]
    else:
        scenarios = suite.scenarios_to_run(ids=wanted, files=files)
    missing = sorted(wanted - {s.id for s in scenarios})
    if missing:
        raise UserError(
            f"{folder}: scenarios of this run are not in their recorded files: {', '.join(missing)}"
        )
    return scenarios


def code_scenario_hash(scenario: Scenario) -> str:
    """A scenario given in code (no file to hash), by its content: what the manifest records for it, so a
    resume given other scenarios under the same ids is refused."""
    return sha256_text(json.dumps(scenario.model_dump(mode="json"), sort_keys=True, ensure_ascii=False))


def scenario_file_hashes(scenarios: Sequence[Scenario]) -> dict[str, str]:
    """The content hash of each file the scenarios were read from, by its path as read."""
    files = {s._source for s in scenarios if s._source and Path(s._source).is_file()}
    return {file: sha256_file(Path(file)) for file in sorted(files)}


def scenario_hash(scenario: Scenario, file_hashes: dict[str, str]) -> str:
    """What a manifest records for a scenario: its file's content hash (`file_hashes`), or for one given in
    code the hash of its content."""
    return file_hashes.get(scenario._source or "") or code_scenario_hash(scenario)


def resumed_scenarios(
    manifest: Manifest, suite: Suite, folder: Path, given: Sequence[Scenario] | None
) -> list[Scenario]:
    """The scenarios a resumed run (or matrix cell) runs: those of the files it recorded, and those given in
    code when it started, which `given` (`simulator.resume(..., scenarios=[...])`) must hold again,
    unchanged; one UserError line otherwise, before anything runs."""
    from_files = recorded_scenarios(manifest, suite, folder)
    in_code = {entry.id: entry for entry in manifest.scenarios if not entry.file}
    if not in_code:
        if given is not None:
            raise UserError(
                f"{folder}: its scenarios are read from the files it recorded; leave out scenarios="
            )
        return from_files
    if given is None:
        raise UserError(
            f"{folder}: this run's scenarios were given in code; pass the same ones again: "
            "simulator.resume(folder, scenarios=[...])"
        )
    recorded = {entry.base or entry.id for entry in manifest.scenarios}
    extra = [s.id for s in given if s.id not in recorded]
    if extra:
        raise UserError(f"{folder}: scenarios= holds '{extra[0]}', which this run did not run; {_SAME}")
    suite = suite.model_copy()
    suite._inline = list(given)
    found = {s.id: s for s in suite.scenarios_to_run(ids=set(in_code))}
    for scenario_id, entry in in_code.items():
        scenario = found.get(scenario_id)
        if scenario is None:
            raise UserError(
                f"{folder}: scenario '{scenario_id}' of this run is not among scenarios=; {_SAME}"
            )
        if entry.sha256 is None:
            raise UserError(
                f"{folder}: this run records no content for its scenarios given in code (made by an older "
                "version), so other ones cannot be told apart; run them again into a new folder"
            )
        if code_scenario_hash(scenario) != entry.sha256:
            raise UserError(
                f"{folder}: scenario '{scenario_id}' is not the one this run was made with (it changed since); "
                f"{_SAME}"
            )
    return from_files + list(found.values())


_SAME = "pass the scenarios it was made with, or run these into a new folder"
