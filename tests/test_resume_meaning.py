"""A resume compares the suite given with the run's by meaning, never as written, from the command line and
from Python alike (engine/operational.py, one comparison): `simulator.run(SUITE, options.resume=True)` takes
any spelling of the run's suite (another checkout, an absolute path, a symlink, reordered keys, a Suite built
in code) and refuses other content, naming what differs and the fix; `cache.path` is compared by where the
cache is, relative to the suite's folder; a matrix is compared cell by cell, each variant applied, so an
override is compared by the setting it makes."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import simulator
from simulator.cli import main
from simulator.config.suite import Suite
from simulator.engine.operational import content_note, measured_differences
from simulator.record.folder import RunFolder
from simulator.record.recorded import setting_file_hashes
from tests.test_same_files import EDITED, SCENARIOS, _checkout, _interrupted, _run

# --- 1. simulator.run(..., options.resume=True) compares as `simulator run SUITE --resume` does ----------


def _started(tmp_path: Path) -> tuple[Path, Path]:
    """A run of checkout `a` (relative paths), stopped after its first conversation: (its suite, the run)."""
    suite, run = _checkout(tmp_path / "a", absolute=False), tmp_path / "run"
    _run(suite, run)
    _interrupted(run)
    return suite, run


def _resumed(given: Suite | str | Path, run: Path, **choices: Any) -> simulator.Result:
    options = simulator.RunOptions(out=run, resume=True, progress=False)
    return simulator.run(given, options=options, **choices)


def _data(suite: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(suite.read_text(encoding="utf-8"))
    return data


def _reordered(suite: Path) -> Path:
    """The same suite as YAML: keys in another order (nested ones too), comments, another file name."""
    data = _data(suite)
    data = {key: data[key] for key in reversed(list(data))}
    data["user"] = {key: data["user"][key] for key in reversed(list(data["user"]))}
    text = "# the same suite, written otherwise\n" + yaml.safe_dump(data, sort_keys=False)
    other = suite.with_name("written-otherwise.yaml")
    other.write_text(text.replace("\nuser:", "\n# the simulated user\nuser:"), encoding="utf-8")
    return other


def _in_code(suite: Path) -> Suite:
    """The suite's data built in code (its relative paths reach the files from the working folder)."""
    os.chdir(suite.parent)
    return Suite.model_validate(_data(suite))


def _linked_file(suite: Path) -> Path:
    link = suite.with_name("link.yaml")
    link.symlink_to(suite)
    return link


def _linked_folder(suite: Path) -> Path:
    alias = suite.parent.parent / "alias"
    alias.symlink_to(suite.parent, target_is_directory=True)
    return alias / suite.name


def _dot_slash(suite: Path) -> str:
    os.chdir(suite.parent)
    return f"./{suite.name}"


# How the resume names the run's suite, given the run's suite file and the test's folder: one experiment each.
SAME_SUITE: dict[str, Callable[[Path, Path], Suite | str | Path]] = {
    "another checkout, absolute paths": lambda suite, tmp: _checkout(tmp / "b"),
    "another checkout, the vocabulary absolute": lambda suite, tmp: _checkout(
        tmp / "b", absolute=False, vocabulary=str(tmp / "b" / "vocab.yaml")
    ),
    "./suite.yaml from its folder": lambda suite, tmp: _dot_slash(suite),
    "a symlink to the suite file": lambda suite, tmp: _linked_file(suite),
    "the suite file through a symlinked folder": lambda suite, tmp: _linked_folder(suite),
    "reordered keys and comments, as YAML": lambda suite, tmp: _reordered(suite),
    "a Suite built in code from the same data": lambda suite, tmp: _in_code(suite),
    "a Suite loaded from the file": lambda suite, tmp: simulator.load_suite(suite),
}


@pytest.mark.parametrize("spelling", SAME_SUITE.values(), ids=SAME_SUITE.keys())
def test_python_resume_takes_any_spelling_of_the_run_s_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: Callable[[Path, Path], Any]
) -> None:
    monkeypatch.chdir(tmp_path)
    suite, run = _started(tmp_path)
    done = _resumed(spelling(suite, tmp_path), run)
    assert done.session is not None and done.session.skipped == 1
    manifest = RunFolder.open(run).read_manifest()
    assert manifest.status == "complete" and manifest.counts.conversations == len(SCENARIOS)
    assert manifest.sessions[-1].settings_changed == {}


def test_python_resume_takes_how_calls_are_made_and_records_it(tmp_path: Path) -> None:
    """As the command line does: another concurrency is no other experiment; it is recorded in the session
    and in the manifest's suite (text compared, this was refused as another suite)."""
    _, run = _started(tmp_path)
    _resumed(_checkout(tmp_path / "b"), run, concurrency=2)
    manifest = RunFolder.open(run).read_manifest()
    assert manifest.status == "complete"
    assert manifest.sessions[-1].settings_changed == {"concurrency": [8, 2]}
    assert manifest.suite is not None and manifest.suite.concurrency == 2


def _warmer(suite: Path) -> Suite:
    loaded = simulator.load_suite(suite)
    loaded.user.temperature = 0.3
    return loaded


def _edited_scenario(tmp: Path) -> Path:
    given = _checkout(tmp / "b", absolute=False)
    scenario = tmp / "b" / "scenarios" / f"{SCENARIOS[0]}.yaml"
    scenario.write_text(scenario.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    return given


# What makes the resume another experiment, and what the refusal must name.
OTHER: dict[str, tuple[Callable[[Path], Suite | str | Path], dict[str, Any], list[str]]] = {
    "the vocabulary's content": (
        lambda tmp: _checkout(tmp / "b", absolute=False, edit=True),
        {},
        [
            "names a run made from another suite",
            "user.vocabulary: 'vocab.yaml' (content sha256:",
            "the same path names a file of other content",
        ],
    ),
    "the seed": (lambda tmp: _checkout(tmp / "b"), {"seed": 7}, ["another suite", "seed: 0 -> 7"]),
    "the user's temperature, in a Suite built in code": (
        lambda tmp: _warmer(_checkout(tmp / "b")),
        {},
        ["another suite", "user.temperature: 1.0 -> 0.3"],
    ),
    "a scenario file's content": (
        _edited_scenario,
        {},
        [
            "names a run made from other scenarios",
            f"is not the run's (a file or a scenario changed): {SCENARIOS[0]}",
        ],
    ),
    "the scenarios run": (
        lambda tmp: _checkout(tmp / "b"),
        {"scenario_ids": SCENARIOS[:2]},
        ["other scenarios", f"scenarios of that run not given: {SCENARIOS[2]}, {SCENARIOS[3]}"],
    ),
}


@pytest.mark.parametrize("case", OTHER.values(), ids=OTHER.keys())
def test_python_resume_refuses_other_content_naming_what_differs_and_the_fix(
    tmp_path: Path, case: tuple[Callable[[Path], Any], dict[str, Any], list[str]]
) -> None:
    given, choices, named = case
    _, run = _started(tmp_path)
    with pytest.raises(simulator.UserError) as caught:
        _resumed(given(tmp_path), run, **choices)
    message = str(caught.value)
    assert f"options.resume=True with options.out='{run}'" in message
    for words in named:
        assert words in message, message
    assert f"Finish that run as it began with simulator.resume('{run}')" in message, message
    assert message.endswith("or start a new run (options.resume=False and another out).")
    assert len(RunFolder.open(run).read_manifest().sessions) == 1  # nothing ran


def test_cli_and_python_resume_refuse_the_same_difference_in_the_same_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One comparison: what the command line refuses, Python refuses, naming the same setting."""
    _, run = _started(tmp_path)
    other = _checkout(tmp_path / "b", absolute=False, edit=True)
    capsys.readouterr()
    assert main(["run", str(other), "--resume", str(run), "--no-progress"]) == 2
    said = capsys.readouterr().err
    with pytest.raises(simulator.UserError) as caught:
        _resumed(other, run)
    for message in (said, str(caught.value)):
        assert "not what the run measures: user.vocabulary: 'vocab.yaml' (content sha256:" in message


# --- 2a. cache.path: where the cache is, relative to the suite's folder ----------------------------------


def _cached(folder: Path, path: str) -> Suite:
    folder.mkdir(parents=True, exist_ok=True)
    suite = Suite.model_validate(
        {"bot": {"type": "python", "factory": "examples.triage_bot:make_bot"}, "cache": {"path": path}}
    )
    suite._base_dir = folder
    return suite


def _cache_differences(one: Suite, other: Suite, recorded: bool = True) -> list[tuple[str, Any, Any]]:
    return measured_differences(
        one, setting_file_hashes(one) if recorded else None, other, setting_file_hashes(other)
    )


def test_the_cache_path_is_compared_by_where_the_cache_is(tmp_path: Path) -> None:
    a, b, deeper = tmp_path / "a", tmp_path / "b", tmp_path / "x" / "y"
    (tmp_path / "link").symlink_to(a, target_is_directory=True)
    run = _cached(a, "./c.sqlite")
    assert setting_file_hashes(run)["cache.path"] == "place:c.sqlite"
    same = [
        _cached(a, "c.sqlite"),
        _cached(a, str(a / "c.sqlite")),
        _cached(a, "sub/../c.sqlite"),
        _cached(a, str(tmp_path / "link" / "c.sqlite")),  # through a symlink to the suite's folder
        _cached(tmp_path / "link", "c.sqlite"),  # the suite read through the link
        _cached(b, "c.sqlite"),  # another checkout: its own cache, where the suite keeps it
        _cached(b, str(b / "c.sqlite")),
    ]
    for given in same:
        assert _cache_differences(run, given) == [], given.cache
    shared = tmp_path / "shared" / "c.sqlite"  # outside the suite's folder
    assert _cache_differences(_cached(a, "../shared/c.sqlite"), _cached(a, str(shared))) == []
    assert (
        _cache_differences(_cached(a, str(shared)), _cached(deeper, str(shared))) == []
    )  # one absolute path
    assert _cache_differences(_cached(a, "../shared/c.sqlite"), _cached(b, "../shared/c.sqlite")) == []
    other = [
        _cached(a, "other.sqlite"),
        _cached(a, "sub/c.sqlite"),
        _cached(a, str(shared)),
        _cached(b, "../c.sqlite"),
        _cached(deeper, str(deeper / "elsewhere" / "c.sqlite")),
    ]
    for given in other:
        [(setting, here, there)] = _cache_differences(run, given)
        assert setting == "cache.path" and repr(here) == "'./c.sqlite' (c.sqlite from the suite)", repr(here)
        assert "a file the runs write is compared by where it is" in content_note(here, there)


def test_a_run_that_recorded_no_cache_place_compares_the_path_as_written_once_normalised(
    tmp_path: Path,
) -> None:
    run = _cached(tmp_path / "a", "./c.sqlite")
    assert _cache_differences(run, _cached(tmp_path / "a", "c.sqlite"), recorded=False) == []
    [(setting, _, _)] = _cache_differences(run, _cached(tmp_path / "a", "other.sqlite"), recorded=False)
    assert setting == "cache.path"


def _with_cache(root: Path, path: str) -> Path:
    suite = _checkout(root, absolute=False)
    data = _data(suite)
    data["cache"] = {"path": path, "roles": ["judge"]}
    suite.write_text(json.dumps(data), encoding="utf-8")
    return suite


@pytest.mark.parametrize("form", ["c.sqlite", "{root}/c.sqlite", "sub/../c.sqlite", "{root}/sub/../c.sqlite"])
def test_resume_takes_another_spelling_of_the_cache_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    run = tmp_path / "run"
    _run(_with_cache(tmp_path / "a", "./c.sqlite"), run)
    _interrupted(run)
    again = _with_cache(tmp_path / "b", form.format(root=tmp_path / "b"))  # another checkout
    capsys.readouterr()
    assert main(["run", str(again), "--resume", str(run), "--no-progress"]) == 0, capsys.readouterr().err
    assert RunFolder.open(run).read_manifest().status == "complete"


def test_resume_refuses_another_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    _run(_with_cache(tmp_path / "a", "./c.sqlite"), run)
    _interrupted(run)
    other = _with_cache(tmp_path / "b", "../elsewhere.sqlite")
    capsys.readouterr()
    assert main(["run", str(other), "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "cache.path: './c.sqlite' (c.sqlite from the suite) -> '../elsewhere.sqlite' (../elsewhere" in err
    assert "compared by where it is, relative to the suite's folder" in err and "Start a new run" in err


# --- 2b. a matrix: each cell compared with the given suite's cell, its variant applied ---------------------

WARM = (
    "  - id: warm\n    user: {temperature: 0.5, fidelity: {on_fail: keep_and_flag, max_regenerations: 2}}\n"
)
COOL = "  - id: cool\n    user: {temperature: 0.2}\n"
# The same variants written otherwise: `0.50`, a number as text, keys in another order, a bot variant that
# restates the suite's own factory.
WARM_AGAIN = (
    "  - id: warm\n    # the same user\n"
    "    user: {fidelity: {max_regenerations: '2', on_fail: keep_and_flag}, temperature: 0.50}\n"
)
COOL_AGAIN = "  - id: cool\n    user: {temperature: '0.2'}\n"
CELLS = ("triage@warm", "triage@cool")


def _matrix_suite(root: Path, name: str, bots: str, users: str) -> Path:
    """A matrix over the small triage suite at `root` (made once): one bot, the user variants given."""
    if not (root / "suite.yaml").exists():
        _checkout(root, absolute=False)
    data = _data(root / "suite.yaml")
    text = yaml.safe_dump(data, sort_keys=False) + f"matrix:\n  bots:\n{bots}  users:\n{users}"
    (root / name).write_text(text, encoding="utf-8")
    return root / name


def _matrix(tmp_path: Path) -> Path:
    """A matrix run (two cells), each cell stopped after its first conversation."""
    suite = _matrix_suite(tmp_path / "a", "matrix.yaml", "  - id: triage\n", WARM + COOL)
    run = tmp_path / "m"
    assert main(["run", str(suite), "--out", str(run), "--no-progress"]) == 0
    for cell in CELLS:
        _interrupted(run / cell)
    return run


def _again(tmp_path: Path, users: str = WARM_AGAIN + COOL_AGAIN, root: str = "b") -> Path:
    bots = "  - id: triage\n    bot: {factory: 'examples.triage_bot:make_bot'}\n"
    return _matrix_suite(tmp_path / root, "again.yaml", bots, users)


def test_a_matrix_resumes_with_its_suite_written_otherwise_and_takes_its_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _matrix(tmp_path)
    capsys.readouterr()
    code = main(["run", str(_again(tmp_path)), "--resume", str(run), "--concurrency", "2", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    for cell in CELLS:
        manifest = RunFolder.open(run / cell).read_manifest()
        assert manifest.status == "complete" and manifest.counts.conversations == len(SCENARIOS)
        assert manifest.sessions[-1].settings_changed == {"concurrency": [8, 2]}  # each cell records it


def test_one_cell_resumes_with_the_matrix_s_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _matrix(tmp_path)
    capsys.readouterr()
    assert main(["run", str(_again(tmp_path)), "--resume", str(run / CELLS[1]), "--no-progress"]) == 0
    assert RunFolder.open(run / CELLS[1]).read_manifest().status == "complete"
    assert RunFolder.open(run / CELLS[0]).read_manifest().status == "interrupted"


# (the given suite's user variants, what the refusal names)
OTHER_MATRIX = {
    "another temperature": (
        WARM + "  - id: cool\n    user: {temperature: 0.3}\n",
        ["user.temperature: 0.2 -> 0.3"],
    ),
    "another fidelity setting": (
        WARM.replace("max_regenerations: 2", "max_regenerations: 3") + COOL,
        ["user.fidelity.max_regenerations: 2 -> 3"],
    ),
    "a cell the matrix has not": (
        WARM + COOL + "  - id: hot\n    user: {temperature: 1.5}\n",
        ["its matrix has cells the resumed matrix has not (triage@hot;", "start a new matrix for those"],
    ),
    "a cell missing": (WARM, ["its matrix has no cell 'triage@cool' (its cells: triage@warm)"]),
}


@pytest.mark.parametrize("case", OTHER_MATRIX.values(), ids=OTHER_MATRIX.keys())
def test_a_matrix_resume_refuses_a_suite_whose_cells_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, list[str]]
) -> None:
    users, named = case
    run = _matrix(tmp_path)
    given = _again(tmp_path, users)
    capsys.readouterr()
    assert main(["run", str(given), "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"error: {given}: " in err and "Traceback" not in err
    for words in named:
        assert words in err, err
    for cell in CELLS:
        assert len(RunFolder.open(run / cell).read_manifest().sessions) == 1


def test_python_resumes_a_matrix_with_a_suite_as_the_command_line_does(tmp_path: Path) -> None:
    run = _matrix(tmp_path)
    with pytest.raises(simulator.UserError, match=r"user\.temperature: 0\.2 -> 0\.3"):
        simulator.resume(
            run, suite=_again(tmp_path, WARM + "  - id: cool\n    user: {temperature: 0.3}\n", "c")
        )
    done = simulator.resume(run, suite=_again(tmp_path), progress=False)
    assert isinstance(done, simulator.Comparison)
    assert all(RunFolder.open(run / cell).read_manifest().status == "complete" for cell in CELLS)


def test_resume_refuses_a_matrix_suite_for_a_run_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run = _started(tmp_path)
    capsys.readouterr()
    assert main(["run", str(_again(tmp_path)), "--resume", str(run), "--no-progress"]) == 2
    assert "this suite has a matrix, and the run is one run, not a matrix cell" in capsys.readouterr().err


def test_an_edited_vocabulary_in_one_user_variant_is_another_experiment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A variant's file setting is compared by content too, once the variant is applied."""
    run = _matrix(tmp_path)
    variant = tmp_path / "b" / "other-vocab.yaml"
    _checkout(tmp_path / "b", absolute=False)
    variant.write_text((tmp_path / "b" / "vocab.yaml").read_text(encoding="utf-8").replace(*EDITED), "utf-8")
    users = WARM + "  - id: cool\n    user: {temperature: 0.2, vocabulary: other-vocab.yaml}\n"
    capsys.readouterr()
    assert main(["run", str(_again(tmp_path, users)), "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "user.vocabulary: 'vocab.yaml' (content sha256:" in err and "'other-vocab.yaml' (content" in err
