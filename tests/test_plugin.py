"""The pytest plugin, tested with pytest's own `pytester`: one item per scenario, failures that show the
verdicts and transcript, tag markers and --simulator-tags, the simulator_run fixture, offline by default."""

from __future__ import annotations

import importlib.metadata

# Loaded before pytester's in-process runs: they take a snapshot of sys.modules and drop whatever a run
# imported, and numpy (which the stats import) refuses to load twice in one process ("cannot load module
# more than once per process"). Whether an earlier test had imported it decided whether this file passed.
import numpy  # noqa: F401
import pytest

BOT = '''
from simulator.bots import Reply


class Bot:
    """Sends everything to the GP, whatever it is told: right for a rash, wrong for chest pain."""

    def send(self, text):
        return Reply(["Please see your GP this week."], closed=True, state={"triage_level": "gp"})


class Broken:
    def send(self, text):
        raise RuntimeError("the bot crashed")


def make_bot():
    return Bot()


def make_broken():
    return Broken()
'''

SCENARIOS = """
- id: rash-gp
  persona: A parent writing about a child's rash.
  goal: Ask what to do about a small rash.
  facts: [The rash appeared this morning.]
  expected: {triage_level: gp}
  tags: [skin]
- id: chest-emergency
  persona: A 60-year-old man with chest pressure.
  goal: Ask whether his chest pressure can wait.
  facts: [The pressure spreads to the left arm.]
  expected: {triage_level: emergency}
  tags: [cardiac, high-stakes]
"""

CRITERION = """
id: polite
criterion: The bot is polite.
pass: it is.
fail: it is not.
"""


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def _suite(user: str = "offline", judge: str | None = None, factory: str = "mybot:make_bot") -> str:
    lines = [
        "name: plugin-demo",
        "scenarios: {paths: [scenarios.yaml]}",
        f'bot: {{type: python, factory: "{factory}"}}',
        f'user: {{model: "{user}"}}',
        "runs: 2",
        "outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}",
    ]
    if judge:
        lines.append(f'judges: {{paths: [judges], model: "{judge}"}}')
    return "\n".join(lines) + "\n"


def _plugin_args() -> list[str]:
    """`-p simulator.plugin` unless the installed package already registers the entry point."""
    names = {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}
    return [] if "simulator" in names else ["-p", "simulator.plugin"]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(mybot=BOT)
    pytester.makeini(INI)
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "scenarios.yaml").write_text(SCENARIOS)
    (pytester.path / "suites" / "judges").mkdir()
    (pytester.path / "suites" / "judges" / "polite.yaml").write_text(CRITERION)
    (pytester.path / "suites" / "suite.yaml").write_text(_suite())
    return pytester


def test_one_item_per_scenario_a_pass_and_a_fail_with_verdicts_and_transcript(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest(*_plugin_args(), "--simulator-suite", "suites/suite.yaml", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*suite.yaml::rash-gp PASSED*",
            "*suite.yaml::chest-emergency FAILED*",
            "*scenario chest-emergency failed:*",
            "*FAIL outcome.triage_level:*",
            "*bot: Please see your GP this week.*",
            "*simulator run folder:*",
        ]
    )
    assert "chest-emergency#1" in result.stdout.str()  # every failing conversation is shown


def test_tags_are_markers_and_simulator_tags_selects(project: pytest.Pytester) -> None:
    marked = project.runpytest(
        *_plugin_args(), "--simulator-suite", "suites", "-m", "cardiac", "--strict-markers"
    )
    marked.assert_outcomes(failed=1, deselected=1)
    skin = project.runpytest(*_plugin_args(), "--simulator-suite", "suites", "-m", "skin and not cardiac")
    skin.assert_outcomes(passed=1, deselected=1)
    tagged = project.runpytest(
        *_plugin_args(), "--simulator-suite", "suites/suite.yaml", "--simulator-tags", "skin"
    )
    tagged.assert_outcomes(passed=1)
    # Only the selected scenario was simulated.
    out = project.path / "out"
    project.runpytest(
        *_plugin_args(), "--simulator-suite", "suites", "-m", "cardiac", "--simulator-out", str(out)
    )
    lines = (out / "suites" / "conversations.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all('"chest-emergency"' in line for line in lines)


def test_offline_by_default_even_when_the_suite_names_models_and_no_key_is_set(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    suite = _suite(user="openai:gpt-4.1-mini", judge="anthropic:claude-sonnet-4-5")
    (project.path / "suites" / "suite.yaml").write_text(suite)
    offline = project.runpytest(*_plugin_args(), "--simulator-suite", "suites")
    offline.assert_outcomes(passed=1, failed=1)  # the LLM criterion is left unjudged, the code check decides
    online = project.runpytest(*_plugin_args(), "--simulator-suite", "suites", "--simulator-online")
    online.assert_outcomes(errors=2)
    online.stdout.fnmatch_lines(["*simulator:*API_KEY*"])


def test_an_errored_conversation_is_an_error_not_a_pass_or_a_fail(project: pytest.Pytester) -> None:
    (project.path / "suites" / "suite.yaml").write_text(_suite(factory="mybot:make_broken"))
    result = project.runpytest(*_plugin_args(), "--simulator-suite", "suites")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*errored (not counted as pass or fail)*", "*the bot crashed*"])


def test_suites_from_the_ini_file_and_a_bad_suite_is_one_collection_error(project: pytest.Pytester) -> None:
    project.makeini(INI + "simulator_suites = suites\n")
    project.runpytest(*_plugin_args()).assert_outcomes(passed=1, failed=1)
    (project.path / "suites" / "suite.yaml").write_text("bot: {type: python, factory: nope}\n")
    bad = project.runpytest(*_plugin_args())
    bad.assert_outcomes(errors=1)
    bad.stdout.fnmatch_lines(["*suite.yaml:1 ?bot.factory?*"])
    assert "Traceback" not in bad.stdout.str()


def test_a_matrix_suite_in_a_collected_folder_is_skipped_with_a_warning(project: pytest.Pytester) -> None:
    (project.path / "suites" / "matrix").mkdir()
    matrix = _suite().replace("scenarios.yaml", "../scenarios.yaml") + "matrix: {bots: [{id: a}, {id: b}]}\n"
    (project.path / "suites" / "matrix" / "suite.yaml").write_text(matrix)
    result = project.runpytest(*_plugin_args(), "--simulator-suite", "suites")
    result.assert_outcomes(passed=1, failed=1, warnings=1)
    result.stdout.fnmatch_lines(["*a matrix suite is not collected as tests*"])


def test_the_simulator_run_fixture_returns_rates_to_assert_on(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_rates="""
        def test_rates(simulator_run):
            result = simulator_run("suites/suite.yaml")
            assert (result.overall.k, result.overall.n) == (2, 4)
            assert (result.under_triage.k, result.under_triage.n) == (2, 4)
            assert result.critical_sensitivity.rate == 0.0
            assert result.scenario_status("rash-gp") == ["pass", "pass"]
            assert result.errors == 0

        def test_tags(simulator_run):
            result = simulator_run("suites/suite.yaml", tags=["skin"], runs=1)
            assert (result.overall.k, result.overall.n) == (1, 1)
        """
    )
    project.runpytest(*_plugin_args(), "test_rates.py").assert_outcomes(passed=2)


PICKY = '''
from simulator.bots import Reply


class Picky:
    """Sends everyone to the GP, and crashes when a knee is mentioned."""

    def send(self, text):
        if "knee" in text.lower():
            raise RuntimeError("the bot crashed on a knee")
        return Reply(["Please see your GP this week."], closed=True, state={"triage_level": "gp"})


def make_bot():
    return Picky()
'''

THREE_SCENARIOS = (
    SCENARIOS
    + """
- id: knee-gp
  persona: A runner with a sore knee.
  goal: Ask what to do about a sore knee after running.
  facts: [The knee hurts when climbing stairs.]
  expected: {triage_level: gp}
"""
)


@pytest.mark.parametrize("dist", [[], ["--dist", "loadgroup"], ["--dist", "loadscope"], ["--dist", "each"]])
def test_under_xdist_a_suite_runs_once_into_one_folder_and_each_scenario_reports_its_own_outcome(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dist: list[str]
) -> None:
    """pytest -n 2 (any --dist) with --simulator-out, as the CI recipe runs it: whichever worker gets a
    scenario, it passes, fails or errors as its conversations did, the suite ran once (6 conversations,
    one folder) and the summary names that folder. Workers once raced for the folder: scenarios ERRORed."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", f"{root}:{project.path}")  # this checkout, in the workers too
    project.makepyfile(picky=PICKY)
    (project.path / "suites" / "scenarios.yaml").write_text(THREE_SCENARIOS)
    (project.path / "suites" / "suite.yaml").write_text(_suite(factory="picky:make_bot"))
    out = project.path / "out"
    result = project.runpytest_subprocess(
        *_plugin_args(), "--simulator-suite", "suites", "-n", "2", *dist, "-v",
        "--simulator-out", str(out), "-p", "no:cacheprovider",
    )  # fmt: skip
    each = 2 if dist == ["--dist", "each"] else 1  # every worker runs every item
    result.assert_outcomes(passed=each, failed=each, errors=each)
    result.stdout.fnmatch_lines_random(
        [
            "*PASSED*suite.yaml::rash-gp*",
            "*FAILED*suite.yaml::chest-emergency*",
            "*ERROR*suite.yaml::knee-gp*",
            f"simulator run folder: {out / 'suites'} *",
        ]
    )
    assert "already holds a run" not in result.stdout.str()
    assert [p.name for p in out.iterdir()] == ["suites"]
    assert len((out / "suites" / "conversations.jsonl").read_text().splitlines()) == 6
