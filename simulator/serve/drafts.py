"""Validation of a YAML file as edited in the desk, with the loaders and messages of `simulator validate`.

The draft is written to a temporary folder (never next to the real file) and loaded together with the
other files of its folder, so a duplicate id is caught as `simulator validate` catches it; the problems
are reported against the real file's path.
"""

from __future__ import annotations

__all__ = ["TEMPLATES", "validate_draft"]

import tempfile
from pathlib import Path
from typing import Any

from simulator.api.checks import DATA_LOADERS, expected_problems, file_name_problems
from simulator.config.documents import load_documents
from simulator.config.kinds import document_kind
from simulator.config.scenario import SCENARIO_DOCUMENTS, scenario_files
from simulator.config.suite import Suite, load_suite
from simulator.config.yamlfile import MAX_FILE_BYTES, YAMLProblem, parse_yaml
from simulator.errors import Problem, UserError
from simulator.judging.criteria import CRITERION_DOCUMENTS, criterion_files
from simulator.readers import InputRefused, read_text

TEMPLATES = {
    "scenario": """\
id: new-scenario
persona: >
  Who the simulated person is and how they write (age, manner, language).
goal: >
  What they want from the bot, in their words.
facts:
  - A fact they give only when asked.
expected: {}   # the outcome your suite compares, e.g. its outcome key and the right level
max_turns: 10
tags: []
""",
    "criterion": """\
id: new-criterion
criterion: >
  The rule the bot must follow, in your own words.
pass: what a pass looks like.
fail: what a fail looks like.
not_applicable: when the conversation gives this criterion nothing to judge.
applies_to: []
severity: major
category: general
""",
}


def file_kind(name: str, text: str, default: str = "scenario") -> str:
    """suite, criterion or scenario: by file name, then by the keys of the first document; `default` (the
    folder's usual kind) when the text says nothing (not YAML yet, empty)."""
    try:
        data = parse_yaml(text, Path(name)).data  # the bounded parser of `validate`: no alias hangs the desk
    except YAMLProblem:
        return default
    if name in ("suite.yaml", "suite.yml"):
        return "suite"
    kind = document_kind(data, default)
    return default if kind == "golden" else kind  # golden items are not edited here


def _siblings(root: Path, target: Path, kind: str) -> list[Path]:
    try:
        found = scenario_files([root]) if kind == "scenario" else criterion_files([root])
    except UserError:
        return []
    return [p for p in found if p.resolve() != target.resolve() and file_kind(p.name, _read(p), kind) == kind]


def _read(path: Path) -> str:
    try:
        return read_text(path, MAX_FILE_BYTES)  # bounded: a sibling linked to /dev/zero is not read for ever
    except InputRefused:
        return ""


def _suites_of(root: Path, target: Path) -> list[Suite]:
    """The suites that run `target`: suite files in the edited folder, its subfolders and the folders above
    it (up to two), whose scenario paths include the file."""
    candidates = [
        *root.rglob("suite.y*ml"),
        *(p / name for p in list(root.parents)[:2] for name in ("suite.yaml", "suite.yml")),
    ]
    suites = []
    for path in candidates:
        if not path.is_file():
            continue
        try:
            suite = load_suite(path)
        except UserError:
            continue
        folders = [suite.resolve(p).resolve() for p in suite.scenarios.paths]
        here = target.resolve()
        if any(here == folder or folder in here.parents for folder in folders):
            suites.append(suite)
    return suites


def _suite_problems(root: Path, target: Path, scenarios: list[Any]) -> list[Problem]:
    """What `validate` finds in these scenarios as part of each suite that runs them (outcome levels, state
    keys): the same check, so the editor never saves what `validate` refuses."""
    found: dict[str, Problem] = {}
    for suite in _suites_of(root, target):
        for problem in expected_problems(suite, scenarios):
            found.setdefault(str(problem), problem)
    return list(found.values())


def validate_draft(
    root: Path, target: Path, text: str, shown: str, default: str = "scenario"
) -> tuple[str, list[Problem]]:
    """The file's kind and the problems `simulator validate` would report if `target` held `text`; each
    problem names `shown` (the path as the user knows it), its line and its field. `default` is the kind
    of file the folder holds, for text that does not say."""
    kind = file_kind(target.name, text, default)
    with tempfile.TemporaryDirectory(prefix="desk-draft-") as tmp:
        draft = Path(tmp) / target.name
        draft.write_text(text, encoding="utf-8")
        try:
            if kind == "suite":
                load_suite(draft)
            elif kind in DATA_LOADERS:
                DATA_LOADERS[kind](draft)
            else:
                documents = SCENARIO_DOCUMENTS if kind == "scenario" else CRITERION_DOCUMENTS
                loaded = load_documents([*_siblings(root, target, kind), draft], documents)
            problems: list[Problem] = []
            if kind == "scenario":
                mine = [d for d in loaded if d._source == str(draft)]
                problems = file_name_problems(mine) + _suite_problems(root, target, mine)
        except UserError as exc:
            problems = exc.problems or [Problem(str(draft), str(exc))]
        mine = [p for p in problems if p.file == str(draft)]
        return kind, [Problem(shown, p.message.replace(str(draft), shown), p.line, p.field) for p in mine]
