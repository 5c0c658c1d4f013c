"""Matrix runs: every cell on the same scenarios in one session and one model hub, an ordinary run folder per
cell plus index.json; resume, errors and the cache per cell; validation that names the variant's line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.engine.matrix import run_matrix
from simulator.engine.runner import RunOptions
from simulator.providers import hub as hub_module
from simulator.record.folder import CONVERSATIONS, RunFolder
from simulator.record.index import read_index
from simulator.stats.rates import RateView
from simulator.testing.fake_llm import FakeLLMServer
from tests._reliability_fixtures import conversation_ids, triage_responder, verdict_keys, write_suite

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "scenarios" / "triage-matrix" / "suite.yaml"
IDS = sorted(f"{s}#{r}" for s in ("chest", "rash", "cough") for r in range(2))


def _matrix_suite(folder: Path, base_url: str, matrix: dict[str, Any], **kwargs: Any) -> Path:
    path = write_suite(folder, base_url, **kwargs)
    suite = json.loads(path.read_text())
    suite["matrix"] = matrix
    path.write_text(json.dumps(suite, indent=2))
    return path


TWO_PROMPTS = {
    "bots": [
        {"id": "nurse", "bot": {"system_prompt": "You are a triage nurse."}},
        {"id": "careful", "bot": {"system_prompt": "You are a careful triage nurse. Ask before deciding."}},
    ]
}


@pytest.mark.parametrize(
    ("matrix", "expected"),
    [
        (
            {"bots": [{"id": "a"}, {"id": "b", "bot": {"factory": "not a factory"}}]},
            "[matrix.bots[2].bot.factory]",
        ),
        (
            {"bots": [{"id": "a"}, {"id": "a"}]},
            "[matrix.bots[2].id]: matrix.bots: ids must be unique; repeated: a",
        ),
        (
            {"bots": [{"id": "a"}], "baseline": "z"},
            "[matrix.baseline]: matrix.baseline 'z' is not a cell; cells are: a",
        ),
        (
            {"bots": [{"id": "a"}], "users": [{"id": "u", "user": {"modle": "offline"}}]},
            "[matrix.users[1].user.modle]: unknown key 'modle'; did you mean 'model'?",
        ),
        ({"bots": [{"id": "a", "bot": {"type": "chat", "model": "openai:x"}}]}, "needs system_prompt"),
        ({"bots": [{"id": "a", "bot": {"type": "ftp"}}]}, "unknown bot type 'ftp'"),
        ({"bots": []}, "[matrix.bots]"),
    ],
)
def test_a_bad_matrix_is_one_error_naming_the_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], matrix: dict[str, Any], expected: str
) -> None:
    suite = {"bot": {"type": "python", "factory": "examples.triage_bot:make_bot"}, "matrix": matrix}
    path = tmp_path / "suite.yaml"
    path.write_text(json.dumps(suite, indent=2))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert expected in err and f"{path}:" in err
    assert "Traceback" not in err


def test_the_triage_demo_runs_offline_into_ordinary_cell_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "matrix"
    assert main(["run", str(DEMO), "--out", str(out), "--no-progress", "--runs", "2"]) == 0
    printed = capsys.readouterr().out
    assert "cell original: complete: 44 conversations" in printed and "cell fixed: complete" in printed
    index = read_index(out)
    assert [c.id for c in index.cells] == ["original", "fixed"] and index.baseline == "original"
    runs = {c.id: load_run(out / c.folder) for c in index.cells}
    # Paired by design: the same (scenario, repeat) items in every cell.
    ids = {cell: sorted(r.id for r in run.conversations) for cell, run in runs.items()}
    assert ids["original"] == ids["fixed"] and len(ids["fixed"]) == 44
    chest = {
        cell: [
            r.final_state and r.final_state["triage_level"]
            for r in run.conversations
            if r.scenario_id == "chest-pain-vague-01"
        ]
        for cell, run in runs.items()
    }
    assert chest == {"original": ["urgent", "urgent"], "fixed": ["emergency", "emergency"]}
    assert runs["fixed"].manifest.source["matrix"] == {"id": "matrix", "cell": "fixed"}
    # Every existing command works on a cell unchanged.
    assert main(["report", str(out / "fixed"), "--quiet", "--junit", str(tmp_path / "j.xml")]) == 0
    assert main(["compare", str(out / "original"), str(out / "fixed")]) == 0
    assert main(["show", str(out / "fixed"), "--scenario", "chest-pain-vague-01", "--repeat", "0"]) == 0
    capsys.readouterr()
    assert main(["report", str(out / "fixed"), "--baseline", "original"]) == 2
    assert "--baseline and --markdown work on a matrix run" in capsys.readouterr().err


def test_three_cells_the_clearly_worse_one_is_below_best_and_the_noise_is_tied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    suite = DEMO.read_text().replace(
        "      bot: {factory: examples.triage_bot:make_fixed_bot}\n",
        "      bot: {factory: examples.triage_bot:make_fixed_bot}\n"
        "    - id: home\n      bot: {factory: tests._matrix_bots:make_home_bot}\n",
    )
    assert "id: home" in suite
    suite = suite.replace('"../triage"', json.dumps(str(DEMO.parent.parent / "triage")))
    suite = suite.replace('"../../judges/triage"', json.dumps(str(ROOT / "judges" / "triage")))
    path = tmp_path / "suite" / "suite.yaml"
    path.parent.mkdir()
    path.write_text(suite)
    out = tmp_path / "m3"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--runs", "1"]) == 0
    capsys.readouterr()
    markdown, page = tmp_path / "board.md", tmp_path / "board.html"
    code = main(["report", str(out), "--baseline", "fixed", "--markdown", str(markdown), "--html", str(page)])
    assert code == 0
    board = json.loads(_leaderboard_json(out, tmp_path, "fixed"))
    groups = {row["cell"]: row["group"] for row in board["cells"]}
    assert groups == {"fixed": "tied for best", "original": "tied for best", "home": "below best"}
    assert board["best"] == "fixed" and board["baseline"] == "fixed"
    home = [c for c in board["comparisons"] if c["cell"] == "home"]
    # Scenarios decide, as in compare: Holm adjusts the clustered McNemar p (the per-conversation p is kept).
    assert board["schema_version"] == 2
    assert home and all(c["p_holm"] >= c["clustered_p_value"] for c in board["comparisons"])
    # The footnote names the interval the table shows: the vignette-clustered one, never "not yet clustered".
    # One interval per figure: the one the report shows (one conversation per vignette here: Wilson).
    assert board["interval"].startswith("95% interval over vignettes, as in the report")
    # A cell with no failure shows its one-sided bound (≥85.1%), as the report and the gate cite it.
    for row in board["cells"]:
        view = RateView.model_validate(row["quality"])
        assert f"({view.interval_text})" in markdown.read_text()
    assert "≥" in markdown.read_text()
    assert "not yet clustered" not in markdown.read_text() and "vignette-clustered" in markdown.read_text()
    assert "paired clustered McNemar test over vignettes" in board["tie_rule"]
    assert any(c["change"] == "worse" and c["metric"] == "conversation passes" for c in home)
    assert (
        f"Holm step-down correction over the {len(board['comparisons'])} paired tests" in board["correction"]
    )
    text = markdown.read_text()
    assert "| tied for best | **fixed (baseline)** |" in text and "| below best | home |" in text
    html = page.read_text()
    assert html.count("<circle") == 3 and "<script" not in html and "http-equiv" in html
    assert main(["report", str(out), "--baseline", "nobody"]) == 2
    assert "no cell 'nobody' in this matrix; cells: original, fixed, home" in capsys.readouterr().err


def _leaderboard_json(out: Path, tmp_path: Path, baseline: str) -> str:
    target = tmp_path / "board.json"
    assert main(["report", str(out), "--quiet", "--baseline", baseline, "--json", str(target)]) == 0
    return target.read_text()


async def test_cells_share_one_model_hub_and_the_user_effect_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    created: list[object] = []
    original = hub_module.ModelHub.create

    def counting(*args: Any, **kwargs: Any) -> Any:
        hub = original(*args, **kwargs)
        created.append(hub)
        return hub

    monkeypatch.setattr(hub_module.ModelHub, "create", staticmethod(counting))
    matrix = {
        **TWO_PROMPTS,
        "users": [
            {"id": "offline", "user": {"model": "offline"}},
            {"id": "llm", "user": {"model": "openai:fake-user"}},
        ],
    }
    async with FakeLLMServer(triage_responder) as server:
        path = _matrix_suite(tmp_path / "suite", server.openai_base_url, matrix)
        suite = load_suite(path)
        scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
        result = await run_matrix(suite, scenarios, RunOptions(out=tmp_path / "m", progress=False))
        calls = len(server.calls)
    assert len(created) == 1  # one hub: one set of provider limits for every cell
    assert list(result.results) == ["nurse@offline", "nurse@llm", "careful@offline", "careful@llm"]
    index = read_index(tmp_path / "m")
    assert index.calls[0]["calls"]["openai"]["attempts"] == calls
    for cell in index.cells:
        manifest = RunFolder.open(tmp_path / "m" / cell.folder).read_manifest()
        assert sorted(conversation_ids(tmp_path / "m" / cell.folder)) == IDS
        assert manifest.sessions[-1].calls == {}  # the shared hub's counts belong to the index
        assert manifest.models.user == ("offline" if cell.user_variant == "offline" else "openai:fake-user")
    prompts = {
        RunFolder.open(tmp_path / "m" / c.folder).read_manifest().suite.bot.system_prompt for c in index.cells
    }  # type: ignore[union-attr]
    assert len(prompts) == 2
    from simulator.analysis.leaderboard import build_leaderboard

    board = build_leaderboard(tmp_path / "m")
    # The fake user never mentions the arm, so the chest case is under-triaged only with it.
    spread = {item.bot_variant: item.spread for item in board.user_sensitivity}
    assert set(spread) == {"nurse", "careful"} and all(s is not None and s > 0 for s in spread.values())
    from simulator.report.leaderboard import leaderboard_markdown
    from simulator.report.leaderboard_html import render_leaderboard_html

    assert "Simulated-user effect on `nurse`: spread" in leaderboard_markdown(board)
    assert "Simulated-user effect</h2>" in render_leaderboard_html(board)


async def test_the_cache_works_per_cell(tmp_path: Path) -> None:
    cache = {"path": "cache.sqlite", "roles": ["user", "bot"]}
    async with FakeLLMServer(triage_responder) as server:
        path = _matrix_suite(
            tmp_path / "suite", server.openai_base_url, TWO_PROMPTS, user="openai:fake-user", cache=cache
        )
        suite = load_suite(path)
        scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
        await run_matrix(suite, scenarios, RunOptions(out=tmp_path / "first", progress=False))
        first = len(server.calls)
        bot_systems = Counter(call.system for call in server.calls if call.tools)
        await run_matrix(suite, scenarios, RunOptions(out=tmp_path / "second", progress=False))
        assert len(server.calls) == first  # every cell answered from the cache
    assert len(bot_systems) == 2  # each cell's prompt was sent: no cell borrowed another's replies
    for cell in ("nurse", "careful"):
        records = list(RunFolder.open(tmp_path / "second" / cell).conversations())
        assert len(records) == 6 and all(r.cache_hits.get("bot", 0) >= 2 for r in records)


def test_a_broken_cell_stops_alone_and_says_how_to_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    matrix = {
        "bots": [
            {"id": "ok"},
            {"id": "broken", "bot": {"type": "python", "factory": "tests._matrix_bots:make_broken_bot"}},
        ]
    }
    with FakeLLMServer(triage_responder) as server:
        path = _matrix_suite(tmp_path / "suite", server.openai_base_url, matrix)
        code = main(["run", str(path), "--out", str(tmp_path / "m"), "--no-progress", "--max-errors", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert "matrix cells aborted (broken: 3 items failed, more than --max-errors 2" in err
    assert f"simulator run --resume {tmp_path / 'm'} --retry-errors" in err
    ok = RunFolder.open(tmp_path / "m" / "ok").read_manifest()
    broken = RunFolder.open(tmp_path / "m" / "broken").read_manifest()
    assert (ok.status, broken.status) == ("complete", "aborted")
    assert sorted(conversation_ids(tmp_path / "m" / "ok")) == IDS
    errors = [r for r in RunFolder.open(tmp_path / "m" / "broken").conversations()]
    assert errors and all(r.stop_reason == "error" and r.error and r.error.source == "bot" for r in errors)
    # Resuming re-runs the broken cell's errored items (still broken: it stops again); the finished cell
    # is left alone, and no item is ever recorded twice.
    ok_lines = (tmp_path / "m" / "ok" / CONVERSATIONS).read_bytes()
    with FakeLLMServer(triage_responder):
        again = [
            "run",
            "--resume",
            str(tmp_path / "m"),
            "--retry-errors",
            "--no-progress",
            "--max-errors",
            "2",
        ]
        assert main(again) == 2
    assert "cell ok: complete: 0 conversations" in capsys.readouterr().out
    assert (tmp_path / "m" / "ok" / CONVERSATIONS).read_bytes() == ok_lines
    ids = conversation_ids(tmp_path / "m" / "broken")
    assert ids and len(ids) == len(set(ids))


def _wait_for_lines(path: Path, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} never reached {count} lines")


def test_kill_9_then_resume_the_matrix_yields_one_record_per_item_per_cell(tmp_path: Path) -> None:
    out = tmp_path / "m"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "simulator", "run"]
    with FakeLLMServer(triage_responder, latency=0.02) as server:
        path = _matrix_suite(
            tmp_path / "suite", server.openai_base_url, TWO_PROMPTS, runs=8, concurrency=3, criteria=1
        )
        child = subprocess.Popen(
            [*command, str(path), "--out", str(out), "--no-progress"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_lines(out / "careful" / CONVERSATIONS, 3)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL
        before = {cell: len(conversation_ids(out / cell)) for cell in ("nurse", "careful")}
        assert all(0 < n < 24 for n in before.values())
        resumed = subprocess.run(
            [*command, "--resume", str(out), "--no-progress"], env=env, capture_output=True, text=True
        )
    assert resumed.returncode == 0, resumed.stderr
    assert "cell nurse: complete" in resumed.stdout and "already done" in resumed.stdout
    expected = sorted(f"{s}#{r}" for s in ("chest", "rash", "cough") for r in range(8))
    for cell in ("nurse", "careful"):
        assert sorted(conversation_ids(out / cell)) == expected  # every item, none twice
        criteria = ("outcome.triage_level", "rule-0")
        bot_verdicts = [key for key in verdict_keys(out / cell) if not key[1].startswith("fidelity.")]
        assert Counter(bot_verdicts) == Counter((i, c) for i in expected for c in criteria)
        assert RunFolder.open(out / cell).read_manifest().status == "complete"
    assert [entry["command"] for entry in read_index(out).calls] == ["resume"]  # the killed run never closed


@pytest.mark.parametrize(
    ("p_values", "adjusted"),
    [
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        ([0.5], [0.5]),
        ([0.02, 0.02], [0.04, 0.04]),
        ([0.9, 0.001, 0.3], [0.9, 0.003, 0.6]),
        ([], []),
    ],
)
def test_holm_adjusts_and_keeps_the_order(p_values: list[float], adjusted: list[float]) -> None:
    from statsmodels.stats.multitest import multipletests

    from simulator.stats.multiple import holm

    assert holm(p_values) == pytest.approx(adjusted)
    if p_values:  # the same as the reference implementation
        assert holm(p_values) == pytest.approx(list(multipletests(p_values, method="holm")[1]))


def test_cell_interval_is_clustered_by_scenario() -> None:
    """Two scenarios of five identical repeats are two observations, not ten: the clustered interval (which
    the leaderboard shows) is wider than Wilson's; ten scenarios of one conversation each barely differ."""
    from simulator.analysis.leaderboard import cell_interval
    from simulator.stats.basic import wilson_interval

    correlated = cell_interval(7, 10, {"a": (5, 5), "b": (2, 5)}, counts="successes")
    flat = cell_interval(7, 10, {f"s{i}": (int(i < 7), 1) for i in range(10)}, counts="successes")
    wilson = wilson_interval(7, 10)
    assert (correlated.low, correlated.high) == (flat.low, flat.high) == (wilson.low, wilson.high)
    assert correlated.clustered is not None and flat.clustered is not None
    assert correlated.clustered.scenarios == 2 and flat.clustered.scenarios == 10
    assert correlated.clustered.high - correlated.clustered.low > 2 * (wilson.high - wilson.low) / 1.5
    assert abs((flat.clustered.high - flat.clustered.low) - (wilson.high - wilson.low)) < 0.1


def test_the_fixed_rules_add_the_chest_question_and_refuse_an_unknown_complaint(tmp_path: Path) -> None:
    from examples.triage_rules import load_fixed_rules, load_rules

    chest = {c.name: c for c in load_fixed_rules().complaints}["chest"]
    original = {c.name: c for c in load_rules().complaints}["chest"]
    assert [q.key for q in chest.questions] == [*(q.key for q in original.questions), "radiation"]
    patch = tmp_path / "patch.yaml"
    patch.write_text("add_questions:\n  chset: []\n")
    with pytest.raises(ValueError, match="unknown complaints: chset"):
        load_fixed_rules(patch)


@pytest.mark.parametrize("crashed", [1, 4, 12])
def test_a_cells_rates_count_the_errored_and_carry_the_worst_and_best_case(
    tmp_path: Path, crashed: int
) -> None:
    """Errored conversations are left out of a cell's rates, never silently: counted, with worst/best."""
    from simulator.analysis.leaderboard import _rate, _tallies
    from simulator.analysis.rundata import load_run
    from tests.synthetic import synthetic_outcome_run

    plan: dict[str, list[bool | str | None]] = {f"s{i:02}": [True, True] for i in range(12)}
    for i in range(crashed):
        plan[f"s{i:02}"] = [None, True]
    tallies = _tallies(load_run(synthetic_outcome_run(tmp_path / "cell", plan)))
    for metric, counts in (("quality", "successes"), ("critical", "successes"), ("under", "failures")):
        view = _rate(tallies, metric, counts)  # type: ignore[arg-type]
        assert view is not None and view.errored == crashed and view.n == 24 - crashed
        assert view.worst is not None and view.best is not None
