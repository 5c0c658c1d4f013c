"""A run folder damaged or edited by hand is one line naming the file, the field (or line) and the fix, for
every command that reads it (`report`, `show`, `run --resume`, `compare`, the desk's pages, the Python API):
never a traceback, never Python's own exception text (`{}` as a manifest was `KeyError: 'created_at'`),
never a silent pass.

The inputs are derived, not listed by hand: every field a model (or a migration step's shape,
`record/migrations.py` SHAPES) requires, missing in turn; every field a step reads, holding a JSON type it
does not take, in turn; every field of a stored folder of each version, holding each other JSON type."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from simulator.api import Result, resume
from simulator.cli import main
from simulator.errors import UserError
from simulator.record.folder import CONVERSATIONS, MANIFEST, VERDICTS
from simulator.record.index import INDEX
from simulator.record.manifest import Manifest
from simulator.record.migrations import SHAPES
from simulator.record.models import ConversationRecord, Verdict
from simulator.serve import DeskConfig, create_app
from tests.test_report_support import make_judged_run

DATA = Path(__file__).resolve().parent / "data" / "runs"
V1 = DATA / "v1-simulation"
GOLDEN_V1 = DATA / "v1-golden"
PYTHON_ERRORS = re.compile(r"Traceback|\b(Key|Type|Attribute|Value|Index|Recursion|UnicodeDecode)Error\b")
FIX = "the file was edited or damaged; correct it, or restore it from a copy"
# A value of each JSON type, and the schema types that take it.
VALUES: list[tuple[Any, set[str]]] = [
    (7, {"integer", "number"}),
    ("s", {"string"}),
    ([1], {"array"}),
    ({"a": 1}, {"object"}),
    (None, {"null"}),
]


def one_line(err: str, *named: str) -> None:
    """The command line's refusal: one line, naming each of `named`, without Python's exception text."""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not PYTHON_ERRORS.search(err), err
    for name in named:
        assert name in err, err


def first_line(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text().splitlines()[0])


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def _set(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(data)
    inner = out
    for part in path[:-1]:
        inner = inner[part]
    inner[path[-1]] = value
    return out


# ---- the places a shape names, and a value each does not take -------------------------------------------


def _resolved(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A property's schema without its `null` alternative, references followed."""
    if "anyOf" in schema:
        schema = next(s for s in schema["anyOf"] if s.get("type") != "null")
    if "$ref" in schema:
        schema = defs[schema["$ref"].rpartition("/")[2]]
    return schema


def _takes(schema: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    if "anyOf" in schema:
        return set().union(*(_takes(s, defs) for s in schema["anyOf"]))
    return {"object"} if "$ref" in schema else {schema.get("type", "any")}


def _places(
    schema: dict[str, Any], defs: dict[str, Any], value: Any, at: tuple[Any, ...] = ()
) -> Iterator[tuple[tuple[Any, ...], set[str]]]:
    """Every place of the stored `value` that `schema` types (its keys, the first item of its lists, the
    first entry of its maps), with the JSON types it takes."""
    for key, sub in schema.get("properties", {}).items():
        if not isinstance(value, dict) or key not in value:
            continue
        yield (*at, key), _takes(sub, defs)
        yield from _inside(_resolved(sub, defs), defs, value[key], (*at, key))


def _inside(
    schema: dict[str, Any], defs: dict[str, Any], value: Any, at: tuple[Any, ...]
) -> Iterator[tuple[tuple[Any, ...], set[str]]]:
    if "properties" in schema:
        yield from _places(schema, defs, value, at)
    items = schema.get("items") or schema.get("additionalProperties")
    if isinstance(items, dict) and items and value:
        first = 0 if isinstance(value, list) else next(iter(value))
        yield (*at, first), _takes(items, defs)
        yield from _inside(_resolved(items, defs), defs, value[first], (*at, first))


def shape_cases(kind: str, version: int, stored: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """Cases for one migration step's shape, made from a stored record of that version: each required key
    missing, and each typed place holding a value of a JSON type it does not take; with the field named."""
    schema = SHAPES[(kind, version)].json_schema()
    defs = schema.get("$defs", {})
    cases: dict[str, tuple[Any, str]] = {
        f"without {key}": (_without(stored, key), key) for key in schema.get("required", [])
    }
    for place, takes in _places(schema, defs, stored):
        if "any" in takes:
            continue
        wrong = next(v for v, types in VALUES if not types & takes and v is not None)
        dotted = ".".join(str(part) for part in place)
        field = "".join(f"[{part + 1}]" if isinstance(part, int) else f".{part}" for part in place)[1:]
        cases[f"{dotted} as {type(wrong).__name__}"] = (_set(stored, place, wrong), field)
    return cases


def every_other_type(stored: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every top-level field of `stored`, in turn, holding each JSON type it does not hold."""
    for key, value in stored.items():
        if key == "schema_version":
            continue
        for other, _ in VALUES:
            if type(other) is not type(value):
                yield f"{key} as {json.dumps(other)}", {**stored, key: other}


# ---- manifests ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_judged_run(tmp_path_factory.mktemp("damaged"), runs=1)


def _replace(make: Callable[[Path], None]) -> Callable[[Path, dict[str, Any]], None]:
    def put(path: Path, current: dict[str, Any]) -> None:
        path.unlink()
        make(path)

    return put


def _text(data: bytes | Callable[[dict[str, Any]], Any]) -> Callable[[Path, dict[str, Any]], None]:
    def put(path: Path, current: dict[str, Any]) -> None:
        path.write_bytes(data if isinstance(data, bytes) else json.dumps(data(current)).encode())

    return put


# What the manifest becomes (from the run's own manifest, `current`), and what the refusal names.
MANIFESTS: dict[str, tuple[Callable[[Path, dict[str, Any]], None], str]] = {
    "an empty object": (_text(b"{}"), "[run_id]"),
    "a list": (_text(b"[]"), "not a manifest"),
    "null": (_text(b"null"), "not a manifest"),
    "a text": (_text(b'"text"'), "not a manifest"),
    "a number": (_text(b"3"), "not a manifest"),
    "a version that is text": (_text(b'{"schema_version": "x"}'), "[schema_version]"),
    "a version that is true": (_text(b'{"schema_version": true}'), "[schema_version]"),
    "version 0": (_text(lambda m: {**m, "schema_version": 0}), "[schema_version]"),
    "a future version": (_text(lambda m: {**m, "schema_version": 99}), "newer simulator"),
    "truncated JSON": (lambda p, m: p.write_text(json.dumps(m)[:150]), "not valid JSON"),
    "not UTF-8": (_text(b'{"run_id": "\xff\xfe"}'), "not UTF-8"),
    "an empty file": (_text(b""), "not valid JSON"),
    "nested too deep": (_text(b"[" * 100_000), "nested too deeply"),
    "a folder": (_replace(lambda p: p.mkdir()), "a folder"),
    "a link to /dev/zero": (_replace(lambda p: p.symlink_to("/dev/zero")), "not a regular file"),
    "a FIFO": (_replace(os.mkfifo), "a named pipe"),
    "a golden run of 0.1 without its results": (
        _text(b'{"schema_version": 1, "kind": "golden"}'),
        "without its results.jsonl",
    ),
}
for _key in [name for name, info in Manifest.model_fields.items() if info.is_required()]:
    MANIFESTS[f"current, without {_key}"] = (_text(lambda m, k=_key: _without(m, k)), f"[{_key}]")
for _case, (_data, _field) in shape_cases("manifest", 1, json.loads((V1 / MANIFEST).read_text())).items():
    MANIFESTS[f"version 1, {_case}"] = (_text(lambda m, d=_data: d), f"[{_field}]")

COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "report": lambda good, bad: ["report", str(bad), "--quiet"],
    "show": lambda good, bad: ["show", str(bad), "--scenario", "chest-1"],
    "run --resume": lambda good, bad: ["run", "--resume", str(bad), "--no-progress"],
    "compare": lambda good, bad: ["compare", str(good), str(bad)],
}


def _damaged(run: Path, tmp: Path, case: str) -> Path:
    folder = tmp / "run"
    shutil.copytree(run, folder)
    make, _ = MANIFESTS[case]
    make(folder / MANIFEST, json.loads((run / MANIFEST).read_text()))
    return folder


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(MANIFESTS))
def test_a_damaged_manifest_is_one_line_naming_it_for_every_command(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: str
) -> None:
    folder = _damaged(run, tmp_path, case)
    capsys.readouterr()
    assert main(COMMANDS[command](run, folder)) == 2
    err = capsys.readouterr().err
    one_line(err, str(folder / MANIFEST), MANIFESTS[case][1])
    if "[" in err:  # a field named: and the fix
        assert FIX in err, err


@pytest.mark.parametrize("case", list(MANIFESTS))
def test_the_python_api_raises_the_same_one_line(run: Path, tmp_path: Path, case: str) -> None:
    folder = _damaged(run, tmp_path, case)
    for read in (lambda: Result(folder).report, lambda: resume(folder, progress=False)):
        with pytest.raises(UserError) as refused:
            read()
        message = str(refused.value)
        assert "\n" not in message and str(folder / MANIFEST) in message, message
        assert MANIFESTS[case][1] in message and not PYTHON_ERRORS.search(message), message


def test_the_desk_lists_a_damaged_run_with_its_line_and_shows_it_on_its_page(
    run: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(run, runs / "good")
    broken = ("an empty object", "a version that is true", "version 1, without created_at", "a list")
    for number, case in enumerate(broken):
        folder = _damaged(run, tmp_path / str(number), case)
        shutil.move(folder, runs / f"broken-{number}")
    client = TestClient(create_app(DeskConfig(runs)), base_url="http://127.0.0.1")
    listing = client.get("/")
    assert listing.status_code == 200 and "Traceback" not in listing.text
    for number, case in enumerate(broken):
        assert f"broken-{number}/{MANIFEST}" in listing.text
        page = client.get(f"/runs/broken-{number}")
        assert page.status_code == 400 and f"broken-{number}/{MANIFEST}" in page.text
        assert MANIFESTS[case][1].strip("[]") in page.text and not PYTHON_ERRORS.search(page.text)


STORED = {
    **{f"version 1 {c}": m for c, m in every_other_type(json.loads((V1 / MANIFEST).read_text()))},
    "every field of the current version": {},
}


@pytest.mark.parametrize("case", list(STORED))
def test_every_field_of_another_type_is_read_or_refused_in_one_line(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """Read (pydantic takes a number for a time, null for an optional field, a step ignores a field it no
    longer reads) or refused naming the file and the field: never a traceback. The current version's fields
    are swept in one case: no step reads them, pydantic alone does."""
    if STORED[case]:
        manifests = [STORED[case]]
    else:
        manifests = [m for _, m in every_other_type(json.loads((run / MANIFEST).read_text()))]
    refused = 0
    for number, manifest in enumerate(manifests):
        folder = tmp_path / f"run-{number}"
        shutil.copytree(run, folder)
        (folder / MANIFEST).write_text(json.dumps(manifest))
        capsys.readouterr()
        code = main(["report", str(folder), "--quiet"])
        err = capsys.readouterr().err
        assert not PYTHON_ERRORS.search(err), err
        if code == 2:
            one_line(err, str(folder / MANIFEST), FIX)
            refused += 1
        else:
            assert code in (0, 1), err
    if len(manifests) > 1:
        assert refused > len(manifests) // 2  # the sweep meets refusals, not only values pydantic takes


# ---- record lines ---------------------------------------------------------------------------------------


def _line_cases() -> dict[str, tuple[Path | None, str, Any, str]]:
    """(stored folder, None for the run's own; file; its damaged first line, or a key to remove from it;
    what the refusal names) for each damaged first line of a records file."""
    cases: dict[str, tuple[Path | None, str, Any, str]] = {}
    for name, kind, version in ((CONVERSATIONS, "conversation", 2), (VERDICTS, "verdict", 1)):
        for case, (line, field) in shape_cases(kind, version, first_line(V1 / name)).items():
            cases[f"version 1 {kind}, {case}"] = (V1, name, line, f"[{field}]")
    for name, model in ((CONVERSATIONS, ConversationRecord), (VERDICTS, Verdict)):
        for key in [k for k, info in model.model_fields.items() if info.is_required()]:
            cases[f"current {name}, without {key}"] = (None, name, ("without", key), f"[{key}]")
        cases[f"current {name}, an empty object"] = (None, name, {}, "[")
        cases[f"current {name}, a list"] = (None, name, [1], "not a JSON object")
        cases[f"current {name}, not JSON"] = (None, name, "{not json", "not a JSON record")
    return cases


LINES = _line_cases()


@pytest.mark.parametrize("command", ["report", "show"])
@pytest.mark.parametrize("case", list(LINES))
def test_a_damaged_record_line_is_one_line_naming_the_file_line_and_field(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: str
) -> None:
    stored, name, line, says = LINES[case]
    folder = tmp_path / "run"
    shutil.copytree(stored or run, folder)
    lines = (folder / name).read_text().splitlines(keepends=True)
    scenario = json.loads(lines[0])["scenario_id"]
    if isinstance(line, tuple):  # a required key removed from the run's own line
        line = _without(json.loads(lines[0]), line[1])
    lines[0] = (line if isinstance(line, str) else json.dumps(line)) + "\n"
    (folder / name).write_text("".join(lines))
    capsys.readouterr()
    args = ["show", str(folder), "--scenario", scenario] if command == "show" else ["report", str(folder)]
    assert main(args) == 2
    one_line(capsys.readouterr().err, f"{folder / name}:1", says, FIX)


# ---- simulator 0.1 golden folders, and a matrix's index --------------------------------------------------


def _golden_cases() -> dict[str, tuple[str, Any, str]]:
    manifest = json.loads((GOLDEN_V1 / MANIFEST).read_text())
    result = first_line(GOLDEN_V1 / "results.jsonl")
    cases: dict[str, tuple[str, Any, str]] = {}
    for field in ("run_id", "started_at"):
        cases[f"manifest without {field}"] = (MANIFEST, _without(manifest, field), f"[{field}]")
    for field, value in (("items_file", 7), ("samples", [1]), ("n_items", None)):
        cases[f"manifest {field} as {json.dumps(value)}"] = (
            MANIFEST,
            {**manifest, field: value},
            f"[{field}]",
        )
    cases["a result without item_id"] = ("results.jsonl", _without(result, "item_id"), "[item_id]")
    cases["a result that is a list"] = ("results.jsonl", [1], "not a simulator 0.1 golden result")
    for field, value in (("index", "first"), ("samples", 7)):
        cases[f"a result's {field} as {json.dumps(value)}"] = (
            "results.jsonl",
            {**result, field: value},
            f"[{field}]",
        )
    sample = result["samples"][0]
    for field, value in (
        ("messages", 7),
        ("context_replies", None),
        ("token_f1", "high"),
        ("failures", [1]),
        ("passed", [1]),
    ):
        damaged = {**result, "samples": [{**sample, field: value}]}
        cases[f"a sample's {field} as {json.dumps(value)}"] = (
            "results.jsonl",
            damaged,
            f"[samples[1].{field}",
        )
    return cases


GOLDEN = _golden_cases()


@pytest.mark.parametrize("case", list(GOLDEN))
def test_a_damaged_golden_folder_of_0_1_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    name, data, says = GOLDEN[case]
    folder = tmp_path / "golden"
    shutil.copytree(GOLDEN_V1, folder)
    lines = (folder / name).read_text().splitlines(keepends=True)
    text = json.dumps(data) + "\n"
    (folder / name).write_text(text if name == MANIFEST else "".join([text, *lines[1:]]))
    for args in (["report", str(folder), "--quiet"], ["show", str(folder), "--scenario", "status-01"]):
        capsys.readouterr()
        assert main(args) == 2
        one_line(capsys.readouterr().err, str(folder / name) + ("" if name == MANIFEST else ":1"), says, FIX)


@pytest.mark.parametrize(
    ("index", "says"),
    [
        ("{}", "[matrix_id]"),
        ("[]", "not a readable matrix index"),
        ('{"kind": "simulator.matrix", "matrix_id": 1}', "[matrix_id]"),
        (
            '{"kind": "simulator.matrix", "matrix_id": "m", "created_at": "2026-01-01T00:00:00Z", '
            '"baseline": "a", "cells": [7]}',
            "[cells[1]]",
        ),
    ],
)
def test_a_damaged_matrix_index_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], index: str, says: str
) -> None:
    (tmp_path / INDEX).write_text(index)
    assert main(["report", str(tmp_path)]) == 2
    one_line(capsys.readouterr().err, str(tmp_path / INDEX), says, FIX)
