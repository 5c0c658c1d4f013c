"""Several simulated users (`user.models`): every scenario x repeat under each, a failure planted in one
user model attributed to it, robust failures labelled robust, the range in every report, resume and the
held-out seal on the simulator variants, compare-populations naming the closest simulator, and one clear
error for each bad `user.models`.

The planted simulator is `examples.simulated_patients:denier`, an LLM user (behind the real OpenAI SDK and the
fake server) that answers "no" to every question: it hides the red flags, so the bot under-triages the
stroke and the ankle cases under it alone. The triage bot's own chest-pain flaw fails under every user.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from simulator.analysis.populations import compare_populations
from simulator.analysis.rundata import load_run
from simulator.analysis.simulators import simulators_section
from simulator.cli import main
from simulator.config.suite import load_suite
from simulator.errors import UserError
from simulator.record.folder import RunFolder

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "scenarios" / "triage"
PICKED = ["chest-pain-vague-01", "stroke-face-droop-03", "common-cold-19", "ankle-injury-12"]
DENIER = "test:examples.simulated_patients:denier"


def write_suite(folder: Path, users: str, extra: str = "", runs: int = 2, names: list[str] = PICKED) -> Path:
    scenarios = folder / "scen"
    scenarios.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(TRIAGE / f"{name}.yaml", scenarios)
    suite = folder / "suite.yaml"
    suite.write_text(
        f"""name: simusers
scenarios: {{paths: [scen]}}
bot: {{type: python, factory: examples.triage_bot:make_bot}}
user:
{users}
  vocabulary: {ROOT / "examples" / "triage_vocabulary.yaml"}
judges: {{paths: [{ROOT / "judges" / "triage"}], model: null}}
runs: {runs}
outcome: {{key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}}
high_stakes_tag: high-stakes
{extra}"""
    )
    return suite


SEVERAL = f'  models: [offline, {{denier: "{DENIER}"}}]'


@pytest.fixture
def several(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    suite = write_suite(tmp_path, SEVERAL)
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert "16 conversations" in capsys.readouterr().out
    return tmp_path / "run"


def test_every_scenario_and_repeat_runs_under_each_simulator(several: Path) -> None:
    records = list(RunFolder.open(several).conversations())
    seen = {(r.scenario_id, r.repeat): r.user_model for r in records}
    for name in PICKED:
        for repeat in (0, 1):
            assert seen[(f"{name}~simulator=offline", repeat)] == "offline"
            assert seen[(f"{name}~simulator=denier", repeat)] == DENIER
    assert len(seen) == 16
    denier = [r for r in records if r.user_model == DENIER]
    # The denier really played: an LLM user's messages ("no"), not the offline user's.
    assert all(any(t.text == "no" for t in r.turns if t.role == "user") for r in denier)


def test_a_failure_planted_in_one_simulator_is_attributed_to_it(several: Path) -> None:
    section = simulators_section(load_run(several))
    assert section is not None
    attributed = {s.scenario: (s.attribution, s.failed_under, s.passed_under) for s in section.scenarios}
    # Failed under the denier only, but two vignettes cannot show that the denier makes the bot fail more
    # (the clustered test behind "likely simulator-induced"): no evidence either way.
    assert attributed == {
        "stroke-face-droop-03": ("one simulator, no evidence", ["denier"], ["offline"]),
        "ankle-injury-12": ("one simulator, no evidence", ["denier"], ["offline"]),
        "chest-pain-vague-01": ("robust", ["offline", "denier"], []),  # the bot's documented flaw
    }
    assert (section.robust, section.one_simulator) == (1, 0)
    rows = {r.level: r for r in section.simulators}
    assert (rows["offline"].failed.k, rows["offline"].failed.n) == (2, 8)
    assert (rows["denier"].failed.k, rows["denier"].failed.n) == (6, 8)
    assert rows["denier"].critical_sensitivity is not None and rows["denier"].critical_sensitivity.k == 0
    failed = next(m for m in section.ranges if m.metric == "failed conversations")
    assert (failed.low, failed.lowest, failed.high, failed.highest) == (0.25, "offline", 0.75, "denier")
    [test] = section.tests
    # Only the denier failed in 4 pairs, over 2 vignettes: a clustered test cannot call that significant.
    assert (test.a, test.b, test.pairs, test.only_a_failed, test.only_b_failed) == (
        "offline",
        "denier",
        8,
        0,
        4,
    )
    assert test.scenarios == 4 and 0.05 < test.p == test.p_holm < 1


def test_the_simulators_differ_when_enough_scenarios_flip(tmp_path: Path) -> None:
    """Every emergency case hidden by the denier: the clustered test sees the simulators differ."""
    emergencies = [
        "stroke-face-droop-03", "anaphylaxis-peanut-04", "child-fever-rash-05", "ectopic-risk-06",
        "suicidal-ideation-07", "uti-flank-fever-09", "deep-cut-10", "chest-pain-jaw-elderly-02",
    ]  # fmt: skip
    suite = write_suite(tmp_path, SEVERAL, runs=1, names=emergencies)
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    section = simulators_section(load_run(tmp_path / "run"))
    assert section is not None
    [test] = section.tests
    assert test.only_b_failed >= 4 and test.only_a_failed == 0
    assert test.p_holm < 0.05


def test_reports_carry_the_range_and_the_attribution(
    several: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html, junit, report = tmp_path / "r.html", tmp_path / "j.xml", tmp_path / "r.json"
    args = ["report", str(several), "--html", str(html), "--junit", str(junit), "--json", str(report)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Simulated users: the error rate as a range" in out
    assert "25.0% (offline) – 75.0% (denier)" in out
    assert "denier only: no" in out and "robust: the bot's" in out
    assert "fail under one simulated user only" not in out  # no finding without the test
    page = html.read_text()
    assert 'id="simulators"' in page and "denier only: no evidence either way" in page
    data = json.loads(report.read_text())
    assert [s["level"] for s in data["simulators"]["simulators"]] == ["offline", "denier"]
    details = {f["title"].split(" ", 1)[0]: f["detail"] for f in data["findings"]}
    assert details["chest-pain-vague-01~simulator=denier"].endswith(
        "fails under every simulated user: robust"
    )
    assert details["stroke-face-droop-03~simulator=denier"].endswith("no evidence either way")
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert props["simulator.denier.failed"].startswith("6/8")
    assert (
        props["simulators.failure.stroke-face-droop-03"] == "one simulator, no evidence: failed under denier"
    )
    assert props["simulators.failure.chest-pain-vague-01"] == "robust: failed under offline, denier"


def test_show_a_base_id_lists_it_under_every_simulator(
    several: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(several), "--scenario", "stroke-face-droop-03", "--repeat", "0"]) == 0
    out = capsys.readouterr().out
    assert (
        "stroke-face-droop-03~simulator=offline#0" in out and "stroke-face-droop-03~simulator=denier#0" in out
    )
    assert "#1" not in out
    assert main(["show", str(several), "--scenario", "stroke-face-droop-03~simulator=denier"]) == 0
    assert "simulator=offline" not in capsys.readouterr().out


def test_resume_finds_every_simulator_variant_done(several: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--resume", str(several), "--no-progress"]) == 0
    assert "16 already done" in capsys.readouterr().out


def test_shards_merged_and_workers_give_the_same_attribution(several: Path, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    for i in (1, 2):
        assert (
            main(["run", str(suite), "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}"), "--no-progress"])
            == 0
        )
    shards = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert main(["merge", *shards, "--out", str(tmp_path / "merged")]) == 0
    one, merged = simulators_section(load_run(several)), simulators_section(load_run(tmp_path / "merged"))
    assert one is not None and merged is not None
    assert merged.scenarios == one.scenarios and merged.simulators == one.simulators
    assert main(["run", str(suite), "--workers", "2", "--out", str(tmp_path / "w"), "--no-progress"]) == 0
    workers = simulators_section(load_run(tmp_path / "w"))
    assert workers is not None and workers.scenarios == one.scenarios and workers.tests == one.tests


def test_the_held_out_seal_keeps_a_scenario_under_every_simulator_together(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, SEVERAL, "held_out: {fraction: 0.5, seed: 3}\n"))
    scenarios = suite.scenarios_to_run()
    held = {s.id.split("~", 1)[0] for s in scenarios if "held-out" in s.tags}
    assert 0 < len(held) < len(PICKED)
    for s in scenarios:  # the seal hashes the base id: both simulators of a scenario share its split
        assert ("held-out" in s.tags) == (s.id.split("~", 1)[0] in held)


def test_held_out_variants_stay_sealed_under_every_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path, SEVERAL, "held_out: {fraction: 0.5, seed: 3}\n", runs=1)
    held = sorted(
        {s.id.split("~", 1)[0] for s in load_suite(suite).scenarios_to_run() if "held-out" in s.tags}
    )
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["show", str(tmp_path / "run"), "--scenario", held[0]]) == 0
    out = capsys.readouterr().out
    for level in ("offline", "denier"):  # one per simulator, neither shown
        assert f"{held[0]}~simulator={level}#0" in out
    assert "[sealed: a held-out conversation" in out and "automated triage assistant" not in out
    tuned = next(name for name in PICKED if name not in held)
    assert main(["show", str(tmp_path / "run"), "--scenario", tuned]) == 0
    assert "automated triage assistant" in capsys.readouterr().out  # what the seal hid
    assert main(["report", str(tmp_path / "run"), "--json", str(tmp_path / "r.json"), "--quiet"]) == 0
    simulators = json.loads((tmp_path / "r.json").read_text())["simulators"]
    assert {s["level"] for s in simulators["simulators"]} == {"offline", "denier"}  # aggregates stay


def test_compare_populations_names_the_simulator_closest_to_the_real_users(
    several: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The "real" users here are the offline user's own conversations: it must be named closest."""
    real = write_suite(tmp_path / "real", "  model: offline")
    assert main(["run", str(real), "--out", str(tmp_path / "realrun"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare-populations", str(several), str(tmp_path / "realrun")]) == 0
    out = capsys.readouterr().out
    assert "closest to the real users: offline" in out
    result = compare_populations(several, tmp_path / "realrun")
    closeness = {s.level: s for s in result.simulators}
    assert result.closest == "offline" and closeness["offline"].mean_gap == 0.0
    assert closeness["denier"].mean_gap > 0.1 and closeness["denier"].conversations == 8


@pytest.mark.parametrize(
    ("users", "message", "field"),
    [
        ("  models: []", "user.models is empty", "user.models"),
        ("  models: [offline, offline]", "user.models lists 'offline' twice", "user.models"),
        (
            f'  models: [{{a: offline}}, {{b: "{DENIER}"}}, {{a: "test:default"}}]',
            "lists 'a' twice",
            "user.models",
        ),
        (f'  model: offline\n  models: [offline, "{DENIER}"]', "either user.model", "user.model"),
        ("  models: [offline]", "names one simulated user", "user.models"),
        ("  models: [offline, auto]", "'auto' depends on the keys set", "user.models"),
        ("  models: [offline, {a b: offline}]", "cannot name a simulator", "user.models"),
    ],
)
def test_bad_user_models_are_one_clear_error(tmp_path: Path, users: str, message: str, field: str) -> None:
    with pytest.raises(UserError) as caught:
        load_suite(write_suite(tmp_path, users))
    text = str(caught.value) + "".join(str(p) for p in caught.value.problems)
    assert message in text and f"[{field}]" in text and "suite.yaml:" in text


def test_the_simulator_factor_name_is_reserved(tmp_path: Path) -> None:
    extra = "factors:\n  simulator: [plain, {odd: {persona: odd}}]\n"
    with pytest.raises(UserError) as caught:
        load_suite(write_suite(tmp_path, SEVERAL, extra))
    assert "factor 'simulator' is reserved for user.models" in "".join(map(str, caught.value.problems))


def test_one_user_model_runs_as_before(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, "  model: offline"))
    assert [s.id for s in suite.scenarios_to_run()] == sorted(PICKED)


def test_the_triage_simulators_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/simulators.md: the denier hides red flags (its failures alone), the over-sharer volunteers the
    arm and so hides the bot's chest-pain flaw, which the offline user and the denier both find."""
    suite = ROOT / "scenarios" / "triage-simulators" / "suite.yaml"
    assert main(["run", str(suite), "--runs", "1", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert "66 conversations" in capsys.readouterr().out
    section = simulators_section(load_run(tmp_path / "run"))
    assert section is not None
    chest = next(s for s in section.scenarios if s.scenario == "chest-pain-vague-01")
    assert (chest.attribution, chest.failed_under, chest.passed_under) == (
        "some simulators", ["offline", "denier"], ["sharer"],
    )  # fmt: skip
    assert (section.robust, section.one_simulator) == (0, 12)
    assert all(s.failed_under == ["denier"] for s in section.scenarios if s.attribution == "one simulator")
    tests = {(t.a, t.b): t for t in section.tests}
    assert tests[("offline", "denier")].p_holm < 0.05 and tests[("offline", "sharer")].p_holm > 0.05


def test_the_offline_user_among_several_still_refuses_a_language_it_lacks(tmp_path: Path) -> None:
    """A Spanish scenario with no Spanish phrases: refused when the offline user is one of the simulators,
    run when only LLM users play it."""
    from simulator.engine.roles import suite_language_problems

    suite = write_suite(tmp_path, SEVERAL)
    spanish = (tmp_path / "scen" / "common-cold-19.yaml").read_text().replace("language: en", "writes_in: es")
    (tmp_path / "scen" / "common-cold-19.yaml").write_text(spanish)
    (tmp_path / "vocab.yaml").write_text("synonyms: {pain: [ache]}\n")
    text = suite.read_text().replace(
        str(ROOT / "examples" / "triage_vocabulary.yaml"), str(tmp_path / "vocab.yaml")
    )
    suite.write_text(text)
    problems = suite_language_problems(load_suite(suite))
    assert [p.field for p in problems] == ["writes_in"] and "common-cold-19" in problems[0].file
    llm_only = text.replace("[offline, ", '[{truthful: "test:examples.simulated_patients:over_sharer"}, ')
    suite.write_text(llm_only)
    assert suite_language_problems(load_suite(suite)) == []
