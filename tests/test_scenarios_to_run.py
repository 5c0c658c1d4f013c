"""One answer to "which scenarios does this suite run?": `Suite.scenarios_to_run()`, persona-factor variants
included, is what the command line, a resumed run, a resumed matrix, the pytest plugin, the desk's talk
page and the Python API all run."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import simulator
from simulator.cli import main
from simulator.config.suite import load_suite
from simulator.record.folder import RunFolder
from simulator.serve import DeskConfig, create_app
from tests.desk_support import BASE, csrf
from tests.test_plugin import BOT, INI, SCENARIOS, _plugin_args

FACTORS = """
factors:
  register: [plain, {terse: {persona: Answers in as few words as possible.}}]
  speaker: [self, {relative: {persona: A relative writes on the patient's behalf., tags: [relative]}}]
"""
# Two base scenarios x 2 x 2 levels.
VARIANTS = sorted(
    f"{base}~register={r}~speaker={s}"
    for base in ("chest-emergency", "rash-gp")
    for r in ("plain", "terse")
    for s in ("self", "relative")
)


def _project(root: Path, *, runs: int = 2, matrix: bool = False) -> Path:
    """A suite with two scenarios and two persona factors (a two-cell matrix if asked); its suite file."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "factorbot.py").write_text(BOT)
    (root / "scenarios.yaml").write_text(SCENARIOS)
    lines = [
        "name: factors",
        "scenarios: {paths: [scenarios.yaml]}",
        'bot: {type: python, factory: "factorbot:make_bot"}',
        "user: {model: offline}",
        f"runs: {runs}",
        "concurrency: 2",
        "outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}",
    ]
    if matrix:
        lines.append(
            "matrix: {bots: [{id: a, bot: {factory: 'factorbot:make_bot'}}, "
            "{id: b, bot: {factory: 'factorbot:make_bot'}}]}"
        )
    suite = root / "suite.yaml"
    suite.write_text("\n".join(lines) + textwrap.dedent(FACTORS))
    return suite


@pytest.fixture
def factor_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    suite = _project(tmp_path / "project")
    monkeypatch.syspath_prepend(str(suite.parent))
    return suite


def _ids(folder: Path) -> list[str]:
    return sorted(r.id for r in RunFolder.open(folder).conversations())


def _drop_half(folder: Path) -> None:
    """Lose the second half of a run's conversations, as a run killed half-way would."""
    path = folder / "conversations.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[: len(lines) // 2]) + "\n")


def test_scenarios_to_run_are_the_variants_and_tags_filter_the_bases(factor_suite: Path) -> None:
    suite = load_suite(factor_suite)
    assert sorted(s.id for s in suite.scenarios_to_run()) == VARIANTS
    cardiac = suite.scenarios_to_run(["cardiac"])
    assert {s.base for s in cardiac} == {"chest-emergency"} and len(cardiac) == 4
    wanted = {VARIANTS[0], VARIANTS[-1]}
    assert {s.id for s in suite.scenarios_to_run(["skin"], ids=wanted)} == wanted  # ids: tags not applied
    relative = next(s for s in cardiac if s.factors["speaker"] == "relative")
    assert "relative" in relative.tags and "on the patient's behalf" in relative.persona


def test_a_resumed_run_finishes_every_variant(tmp_path: Path, factor_suite: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", str(factor_suite), "--out", str(out), "--no-progress"]) == 0
    _drop_half(out)
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert _ids(out) == sorted(f"{v}#{r}" for v in VARIANTS for r in range(2))


def test_shards_split_the_variants_between_them(tmp_path: Path, factor_suite: Path) -> None:
    for index in (1, 2):
        out = tmp_path / f"shard-{index}"
        assert (
            main(["run", str(factor_suite), "--out", str(out), "--shard", f"{index}/2", "--no-progress"]) == 0
        )
    first, second = _ids(tmp_path / "shard-1"), _ids(tmp_path / "shard-2")
    assert not set(first) & set(second)
    assert sorted(first + second) == sorted(f"{v}#{r}" for v in VARIANTS for r in range(2))


def test_a_resumed_matrix_with_factors_finishes_every_variant_in_every_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _project(tmp_path / "project", runs=1, matrix=True)
    monkeypatch.syspath_prepend(str(suite.parent))
    out = tmp_path / "matrix"
    assert main(["run", str(suite), "--out", str(out), "--no-progress"]) == 0
    for cell in ("a", "b"):
        _drop_half(out / cell)
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    for cell in ("a", "b"):
        assert _ids(out / cell) == sorted(f"{v}#0" for v in VARIANTS)
        assert RunFolder.open(out / cell).read_manifest().planned == len(VARIANTS)


def test_the_api_runs_the_same_variants_as_the_command_line(tmp_path: Path, factor_suite: Path) -> None:
    result = simulator.run(factor_suite, out=tmp_path / "api")
    assert sorted({t.scenario_id for t in result.conversations}) == VARIANTS
    board = simulator.compare(factor_suite, bots={"one": "factorbot:make_bot"}, runs=1, out=tmp_path / "m")
    assert sorted({t.scenario_id for t in board["one"].conversations}) == VARIANTS


def _plugin_project(pytester: pytest.Pytester, *, runs: int = 2) -> Path:
    """The project under suites/, for the pytest plugin: its bot module also where the plugin looks (the
    plugin puts the folder tests run from on sys.path, not the suite's). Written only into suites/, each
    plugin test passed only after another test of the same worker had imported the module."""
    suite = _project(pytester.path / "suites", runs=runs)
    (pytester.path / "factorbot.py").write_text(BOT)
    pytester.makeini(INI)
    return suite


def test_the_pytest_plugin_collects_one_item_per_variant(pytester: pytest.Pytester) -> None:
    suite = _plugin_project(pytester)
    result = pytester.runpytest(*_plugin_args(), "--simulator-suite", str(suite), "-v")
    result.assert_outcomes(passed=4, failed=4)  # the bot sends everyone to the GP: rash passes, chest fails
    result.stdout.fnmatch_lines(["*suite.yaml::rash-gp~register=terse~speaker=relative PASSED*"])
    selected = pytester.runpytest(*_plugin_args(), "--simulator-suite", str(suite), "-k", "terse and rash")
    selected.assert_outcomes(passed=2, deselected=6)
    marked = pytester.runpytest(*_plugin_args(), "--simulator-suite", str(suite), "-m", "relative")
    marked.assert_outcomes(passed=2, failed=2, deselected=4)  # a level's tags are markers too


def test_the_pytest_plugin_leaves_no_folder_in_the_system_temp_folder(pytester: pytest.Pytester) -> None:
    import tempfile

    suite = _plugin_project(pytester, runs=1)
    before = set(Path(tempfile.gettempdir()).glob("simulator-pytest-*"))
    result = pytester.runpytest(*_plugin_args(), "--simulator-suite", str(suite), "-k", "rash")
    result.assert_outcomes(passed=4, deselected=4)
    assert set(Path(tempfile.gettempdir()).glob("simulator-pytest-*")) == before
    line = next(x for x in result.stdout.lines if x.startswith("simulator run folder:"))
    folder = Path(line.split(": ", 1)[1].split("  ")[0])
    assert "simulator-pytest" in str(folder) and json.loads((folder / "manifest.json").read_text())


def test_the_desk_talk_page_offers_every_variant_and_talks_through_one(tmp_path: Path) -> None:
    suite = _project(tmp_path / "project")
    runs = tmp_path / "runs"
    runs.mkdir()
    variant = "chest-emergency~register=terse~speaker=relative"
    import sys

    sys.path.insert(0, str(suite.parent))
    try:
        with TestClient(create_app(DeskConfig(runs, suite.parent)), base_url=BASE) as client:
            page = client.get("/talk", params={"suite": "suite.yaml"}).text
            assert all(v in page for v in VARIANTS)
            chosen = client.get("/talk", params={"suite": "suite.yaml", "scenario": variant}).text
            assert "on the patient&#39;s behalf" in chosen or "on the patient's behalf" in chosen
            token = csrf(client)
            form = {"csrf": token, "suite": "suite.yaml", "scenario": variant, "name": "Dr Ada"}
            start = client.post("/talk", data=form)
            assert start.status_code == 200, start.text
            client.post(f"{start.url}/say", data={"csrf": token, "text": "My chest is tight"})
            client.post(f"{start.url}/end", data={"csrf": token})
    finally:
        sys.path.remove(str(suite.parent))
    (run,) = list(runs.iterdir())
    manifest = RunFolder.open(run).read_manifest()
    assert [s.id for s in manifest.scenarios] == [variant]
    assert manifest.scenarios[0].factors == {"register": "terse", "speaker": "relative"}
