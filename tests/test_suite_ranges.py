"""Suite settings that can never work are refused by `validate` and `run` alike, with the file, line and
field: a scenario list naming no folder (`validate` said ok, `run` said "no scenarios found in ;" and
`accept-draft` raised IndexError), a negative temperature or a reply of at most zero tokens (accepted, then
refused by the provider on every call)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from simulator.cli import main
from tests.support.projects import BOT, SCENARIO, one_scenario_project


def _refused(capsys: pytest.CaptureFixture[str], args: list[str], suite: Path, field: str) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Error:" not in err.replace("error:", ""), err
    assert f"{suite}:" in err and f"[{field}]" in err, err


NO_PATHS = {
    "flow": "scenarios: {paths: []}\n",
    "with tags": "scenarios: {paths: [], tags: [a]}\n",
    "block": "scenarios:\n  paths: []\n  include_drafts: true\n",
}


@pytest.mark.parametrize("body", sorted(NO_PATHS))
@pytest.mark.parametrize("command", ["validate", "run", "accept-draft"])
def test_a_scenario_list_naming_no_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, command: str
) -> None:
    suite = one_scenario_project(tmp_path, BOT + NO_PATHS[body])
    queue = tmp_path / "queue"
    queue.mkdir()
    (queue / "d1.yaml").write_text(SCENARIO.replace("s1", "d1"))
    args = {
        "validate": ["validate", str(suite)],
        "run": ["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"],
        "accept-draft": ["accept-draft", str(queue), "d1", "--suite", str(suite), "--reviewer", "Dr R",
                         "--reason", "reads well"],
    }[command]  # fmt: skip
    _refused(capsys, args, suite, "scenarios.paths")
    assert (queue / "d1.yaml").exists() and not (tmp_path / "run").exists()


SAMPLING = {
    "user temperature": ("user: {model: offline, temperature: -1}\n", "user.temperature"),
    "user max_tokens zero": ("user: {model: offline, max_tokens: 0}\n", "user.max_tokens"),
    "judge temperature": ("judges: {temperature: -0.5}\n", "judges.temperature"),
    "judge max_tokens": ("judges: {max_tokens: -5}\n", "judges.max_tokens"),
    "chat bot temperature": (
        "bot: {type: chat, model: 'test:x', system_prompt: hi, temperature: -2}\n",
        "bot.temperature",
    ),
    "chat bot max_tokens": (
        "bot: {type: chat, model: 'test:x', system_prompt: hi, max_tokens: 0}\n",
        "bot.max_tokens",
    ),
    "endpoint max_tokens": (
        "bot: {type: openai_endpoint, base_url: 'http://localhost:1/v1', model: m, max_tokens: -1}\n",
        "bot.max_tokens",
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLING))
def test_impossible_sampling_settings_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    body, field = SAMPLING[name]
    suite = one_scenario_project(
        tmp_path, "scenarios: {paths: [scenarios]}\n" + ("" if "bot:" in body else BOT) + body
    )
    _refused(capsys, ["validate", str(suite)], suite, field)
    _refused(capsys, ["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"], suite, field)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "body", ["user: {model: offline, temperature: 0, max_tokens: 1}\n", "judges: {temperature: null}\n"]
)
def test_the_edges_of_the_sampling_settings_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str
) -> None:
    suite = one_scenario_project(tmp_path, "scenarios: {paths: [scenarios]}\n" + BOT + body)
    assert main(["validate", str(suite)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("runs", [10_001, 10**9, 10**30])
def test_an_impossible_number_of_runs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: int
) -> None:
    """`runs: 1e30` passed `validate`, then `run` hung with no output while its id list filled memory."""
    suite = one_scenario_project(tmp_path, f"scenarios: {{paths: [scenarios]}}\n{BOT}runs: {runs}\n")
    _refused(capsys, ["validate", str(suite)], suite, "runs")
    _refused(capsys, ["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"], suite, "runs")
    assert not (tmp_path / "run").exists()
    suite.write_text(suite.read_text().replace(f"runs: {runs}", "runs: 10000"))
    assert main(["validate", str(suite)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("flag, value", [("--runs", "10001"), ("--runs", "99999999"), ("--runs", "123456")])
def test_an_impossible_option_names_the_option_not_the_suite_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    """`--runs 20000` was blamed on the suite file's `runs:` line, which said something else entirely."""
    suite = one_scenario_project(
        tmp_path, f"scenarios: {{paths: [scenarios]}}\n{BOT}runs: 2\nconcurrency: 4\n"
    )
    assert main(["run", str(suite), flag, value, "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "invalid options for this run" in err and f"({flag}, or " in err and f"got {value}" in err, err
    assert f"{suite}:" not in err and "suite.yaml:3" not in err, err
    assert not (tmp_path / "run").exists()


def test_an_impossible_option_in_python_names_the_option(tmp_path: Path) -> None:
    import simulator
    from simulator.errors import UserError

    suite = one_scenario_project(tmp_path, f"scenarios: {{paths: [scenarios]}}\n{BOT}runs: 2\n")
    with pytest.raises(UserError) as caught:
        simulator.run(suite, runs=20_000, out=tmp_path / "run")
    text = caught.value.render()
    assert "the run's options [runs]" in text and "runs= in Python" in text, text
    assert "suite.yaml:" not in text, text


@pytest.mark.parametrize(
    "options, field, got",
    [({"runs": 20_000}, "runs", "(got 20000)"), ({"runs": 0}, "runs", "(got 0)"),
     ({"concurrency": 0}, "concurrency", "(got 0)"), ({"concurrency": -3}, "concurrency", "(got -3)")],
)  # fmt: skip
@pytest.mark.parametrize("given", ["a Suite object", "a suite file"])
def test_an_impossible_option_in_python_is_named_alike_for_a_suite_object_and_a_file(
    tmp_path: Path, options: dict[str, object], field: str, got: str, given: str
) -> None:
    """A Suite built in code gave pydantic's `runs: Input should be ...` with no value and no fix, beside the
    file's problem naming the option. (A value of the wrong type, `runs=True`, is refused before, by the
    API's own check: `simulator.run: runs must be a whole number, not bool`.)"""
    import simulator
    from simulator.errors import UserError

    path = one_scenario_project(tmp_path, f"scenarios: {{paths: [scenarios]}}\n{BOT}runs: 2\n")
    suite = simulator.load_suite(path) if given == "a Suite object" else path
    with pytest.raises(UserError) as caught:
        simulator.run(suite, out=tmp_path / "run", **options)  # type: ignore[arg-type]
    text, line = caught.value.render(), str(caught.value)
    assert f"invalid options for this run: the run's options [{field}]: as given to this run" in line, line
    assert f"{field}= in Python" in text and got in text and "YAML reads" not in text, text
    assert "suite.yaml:" not in text and not (tmp_path / "run").exists(), text


@pytest.mark.parametrize("value", [datetime.date(2026, 1, 1), datetime.datetime(2026, 1, 1, 9, 30)])
def test_a_python_value_given_to_load_suite_is_shown_as_python_writes_it(
    tmp_path: Path, value: object
) -> None:
    """A value from Python is not YAML: it was shown in YAML's words (`2026-01-01: YAML reads an unquoted
    date as a date; quote it for text`), advice that makes no sense for `seed=datetime.date(...)`."""
    import simulator
    from simulator.errors import UserError

    path = one_scenario_project(tmp_path, f"scenarios: {{paths: [scenarios]}}\n{BOT}")
    with pytest.raises(UserError) as caught:
        simulator.load_suite(path, seed=value)
    text = caught.value.render()
    assert f"(got {value!r})" in text and "YAML" not in text and "the run's options [seed]" in text, text
