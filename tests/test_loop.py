"""The loop: a failing criterion becomes a proposed change, the suite is re-run with it, and the verdict says
whether it helped (simulator propose / simulator try, docs/loop.md). Everything runs offline: the chat bot
is the scripted triage model on the fake LLM server, judges are scripted responders."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.errors import UserError
from simulator.loop.failures import group_failures, load_hazards
from simulator.loop.proposal import PromptEdit, apply_edits, load_proposal
from simulator.record.models import Evidence
from tests.loop_support import chat_suite

CHEST_ANCHOR = "- chest: Are you short of breath, or is your breathing difficult?"
PUFFS_LINE = "- breathing: Is your blue reliever inhaler helping, and how many puffs have you taken?\n"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The chat triage suite (one repeat) and its run: the cardiac flaw fails outcome.triage_level."""
    root = tmp_path_factory.mktemp("loop")
    suite = chat_suite(root / "suite")
    assert main(["run", str(suite), "--out", str(root / "base"), "--no-progress"]) == 0
    return suite, root / "base"


def _propose(run: Path, out: Path, *extra: str) -> list[Path]:
    assert main(["propose", str(run), "--out", str(out), *extra]) == 0
    return sorted(out.glob("*.yaml"))


def test_failures_are_grouped_by_criterion_and_tag_with_clustered_bounds(baseline: tuple[Path, Path]) -> None:
    groups = group_failures(load_run(baseline[1]))
    assert [(g.criterion_id, g.group) for g in groups] == [("outcome.triage_level", "tag:cardiac")]
    group = groups[0]
    # The group is every cardiac scenario, passing ones included: 1 of 2 scenarios, 1 of 2 conversations.
    assert group.scenarios == ["chest-pain-jaw-elderly-02", "chest-pain-vague-01"]
    assert (group.failed, group.judged, group.failing_scenarios) == (1, 2, ["chest-pain-vague-01"])
    assert group.rate.clustered is not None and group.rate.clustered.scenarios == 2
    # The key facts never asked for are named, the one told in the opening message is not.
    assert [f.text for f in group.missed_facts] == [
        "The ache spreads into my left arm.",
        "My skin is a bit clammy.",
    ]
    assert group.last_questions == [("Are you short of breath, or is your breathing difficult?", 1)]
    assert group.outcomes == ["expected emergency, recorded urgent (1)"]


def test_evidence_ranks_verified_quotes_first_and_merges_repeats(baseline: tuple[Path, Path]) -> None:
    run = load_run(baseline[1])
    failing = [v for v in run.verdicts if v.result == "fail"]
    # Plant an unverified quote before the verified one: ranking must still put verified first.
    failing[0].evidence = [Evidence(quote="words nobody wrote", found=False), *failing[0].evidence]
    failing[0].evidence_verified = None
    groups = group_failures(run)
    sources = [q.source for q in groups[0].evidence]
    assert sources == ["judge_verified", "transcript", "transcript", "judge_unverified"]
    assert groups[0].evidence[-1].verified is False


def test_hazard_log_names_the_hazards_of_each_group(baseline: tuple[Path, Path], tmp_path: Path) -> None:
    log = tmp_path / "hazards.yaml"
    log.write_text(
        "hazards:\n  - {id: H1, title: missed ACS, criteria: [outcome.triage_level]}\n  - {id: H2, criteria: [x]}\n"
    )
    assert group_failures(load_run(baseline[1]), load_hazards(log))[0].hazards == ["H1"]
    log.write_text("hazards:\n  - {title: no id}\n")
    with pytest.raises(UserError, match="hazard 1 needs an `id`"):
        load_hazards(log)


def test_offline_proposal_for_a_chat_bot_is_a_prompt_edit_naming_the_missing_question(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = baseline[1]
    before = {p.name: p.stat().st_mtime_ns for p in run.iterdir()}
    [path] = _propose(run, tmp_path / "p")
    proposal = load_proposal(path)
    assert proposal.status == "proposed" and proposal.author == "offline-template"
    assert proposal.change is not None and proposal.change.kind == "prompt_edit"
    assert "left arm" in proposal.change.question
    [edit] = proposal.change.edits
    assert edit.find == CHEST_ANCHOR and edit.replace.startswith(CHEST_ANCHOR + "\n- chest: Can I check")
    assert set(proposal.read) == {"manifest.json", "conversations.jsonl", "verdicts.jsonl"}
    markdown = path.with_suffix(".md").read_text()
    assert "```diff" in markdown and "+- chest: Can I check" in markdown
    assert {p.name: p.stat().st_mtime_ns for p in run.iterdir()} == before  # the run folder is untouched
    assert main(["propose", str(run), "--out", str(run / "proposals")]) == 2
    assert "never written into the run folder" in capsys.readouterr().err


def test_offline_proposal_for_a_python_bot_is_a_change_request(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert (
        main(["run", "scenarios/triage/suite.yaml", "--runs", "1", "--out", str(run), "--no-progress"]) == 0
    )
    [path] = _propose(run, tmp_path / "p")
    change = load_proposal(path).change
    assert change is not None and change.kind == "missing_question" and not change.edits
    assert "left arm" in change.question and "short of breath" in change.where


def test_try_for_a_python_bot_needs_the_bot_version_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert (
        main(["run", "scenarios/triage/suite.yaml", "--tags", "cardiac", "--out", str(run), "--no-progress"])
        == 0
    )
    [path] = _propose(run, tmp_path / "p")
    assert main(["try", str(path), "--out", str(tmp_path / "never")]) == 2
    assert "--bot-version" in capsys.readouterr().err and not (tmp_path / "never").exists()
    # The bot was not changed: the re-run finds no evidence of a fix, and the record names the version.
    assert (
        main(
            [
                "try",
                str(path),
                "--bot-version",
                "v1.2-unchanged",
                "--out",
                str(tmp_path / "b"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert "verdict: NO EVIDENCE" in capsys.readouterr().out
    [record] = (tmp_path / "p").glob("*.try-*.json")
    assert '"bot_version": "v1.2-unchanged"' in record.read_text()


def test_model_written_proposal_is_parsed_and_validated(baseline: tuple[Path, Path], tmp_path: Path) -> None:
    run = baseline[1]
    [good] = _propose(run, tmp_path / "good", "--model", "test:tests.loop_support:good_proposal")
    proposal = load_proposal(good)
    assert proposal.author == "model:test:tests.loop_support:good_proposal"
    assert proposal.change is not None and proposal.change.edits[0].find == CHEST_ANCHOR
    assert [r.criterion for r in proposal.at_risk] == ["asks-age"]
    assert len(proposal.evidence) == 1  # the item the model cited


def test_a_change_of_the_decision_tool_description_is_applied_to_the_run_not_the_file(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    suite, run = baseline
    suite_before = suite.read_text()
    [path] = _propose(run, tmp_path / "t", "--model", "test:tests.loop_support:tool_change")
    proposal = load_proposal(path)
    assert proposal.change is not None and proposal.change.kind == "tool_description"
    assert (
        "+Record the triage level once you have decided it. Record emergency"
        in path.with_suffix(".md").read_text()
    )
    assert main(["try", str(path), "--out", str(tmp_path / "after"), "--no-progress"]) == 0
    manifest = json.loads((tmp_path / "after" / "manifest.json").read_text())
    assert manifest["suite"]["bot"]["decision_tool"]["description"].endswith("spreading to the arm.")
    assert suite.read_text() == suite_before
    [record] = (tmp_path / "t").glob("*.try-*.json")
    assert "tool_description_after" in record.read_text()


@pytest.mark.parametrize(
    ("responder", "problem"),
    [("not_json", "not a JSON object"), ("wrong_find", "does not occur in the prompt")],
)
def test_malformed_model_output_is_recorded_as_an_error_and_never_applied(
    baseline: tuple[Path, Path],
    tmp_path: Path,
    responder: str,
    problem: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    [path] = _propose(baseline[1], tmp_path / "bad", "--model", f"test:tests.loop_support:{responder}")
    proposal = load_proposal(path)
    assert proposal.status == "error" and proposal.change is None
    assert proposal.error and problem in proposal.error
    assert proposal.raw_output
    assert "## Error: no change proposed" in path.with_suffix(".md").read_text()
    assert main(["try", str(path), "--out", str(tmp_path / "never")]) == 2
    assert "never applied" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_try_applies_the_change_to_a_copy_and_finds_the_fix(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One failure fixed is no evidence (a sign test needs 5 flips one way at 5%): on one repeat the same
    # fix reads "no evidence either way"; on five repeats of the cardiac scenarios it reads FIXED.
    suite, run = baseline
    [once] = _propose(run, tmp_path / "once")
    capsys.readouterr()
    assert main(["try", str(once), "--out", str(tmp_path / "after-once"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "verdict: NO EVIDENCE" in out and "1 failures before, 0 after (1 fixed, 0 broken" in out
    assert "at least 5 flips all one way are needed" in out
    suite = chat_suite(tmp_path / "suite", runs=5)
    run = tmp_path / "base"
    assert main(["run", str(suite), "--out", str(run), "--tags", "cardiac", "--no-progress"]) == 0
    prompt_before = (suite.parent / "prompt.md").read_text()
    [path] = _propose(run, tmp_path / "p")
    capsys.readouterr()
    assert main(["try", str(path), "--out", str(tmp_path / "after"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "verdict: FIXED" in out and "5 failures before, 0 after (5 fixed, 0 broken" in out
    assert "nothing got significantly worse" in out
    assert (suite.parent / "prompt.md").read_text() == prompt_before  # the user's prompt is never edited
    copy = tmp_path / "p" / f"{load_proposal(path).id}.prompt.md"
    assert "Can I check" in copy.read_text()
    [record] = (tmp_path / "p").glob("*.try-*.json")
    assert '"verdict": "fixed"' in record.read_text()


@pytest.mark.parametrize("change", ["added", "edited"])
def test_try_refuses_a_changed_scenario_set(
    tmp_path: Path, change: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = chat_suite(tmp_path / "suite")
    run = tmp_path / "base"
    assert main(["run", str(suite), "--out", str(run), "--tags", "cardiac", "--no-progress"]) == 0
    [path] = _propose(run, tmp_path / "p")
    scenarios = suite.parent / "scenarios"
    if change == "added":
        text = (
            (scenarios / "chest-pain-vague-01.yaml")
            .read_text()
            .replace("chest-pain-vague-01", "chest-pain-new-99")
        )
        (scenarios / "chest-pain-new-99.yaml").write_text(text)
        expected = "chest-pain-new-99 added"
    else:
        with (scenarios / "chest-pain-jaw-elderly-02.yaml").open("a") as handle:
            handle.write("# a clinician's edit\n")
        expected = "chest-pain-jaw-elderly-02 edited"
    assert main(["try", str(path), "--out", str(tmp_path / "after")]) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "after").exists()


def test_a_change_that_fixes_one_criterion_and_breaks_another_is_reported_as_broke_something(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Eight repeats: the deleted question flips every asthma conversation, 8 flips one way, significant
    # at 5% after Bonferroni over the paired metrics (a sign test on 8 gives p = 0.004).
    suite = chat_suite(tmp_path / "suite", runs=8, judged=True)
    run = tmp_path / "base"
    assert main(["run", str(suite), "--out", str(run), "--tags", "cardiac,respiratory", "--no-progress"]) == 0
    [path] = [p for p in _propose(run, tmp_path / "p", "--offline") if "asks-spread" in p.name]
    data = yaml.safe_load(path.read_text())
    # Planted: the chest question that fixes asks-spread, and the asthma question deleted (breaks asks-puffs).
    data["change"]["edits"] = [
        {
            "find": CHEST_ANCHOR,
            "replace": CHEST_ANCHOR + "\n- chest: Does the pain spread to your arm, jaw or back?",
        },
        {"find": PUFFS_LINE, "replace": ""},
    ]
    path.write_text(yaml.safe_dump(data))
    capsys.readouterr()
    assert main(["try", str(path), "--out", str(tmp_path / "after"), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "verdict: BROKE SOMETHING" in out
    assert "WORSE asks-puffs" in out and "flipped to fail: asthma-inhaler-08#0" in out
    assert "better asks-spread" in out


def test_apply_edits_refuses_an_ambiguous_or_missing_passage() -> None:
    prompt = "a\nb\na\n"
    assert apply_edits(prompt, [PromptEdit(find="b", replace="c")]) == "a\nc\na\n"
    assert apply_edits(prompt, [PromptEdit(find="", replace="z")]) == "a\nb\na\nz\n"
    with pytest.raises(UserError, match="occurs 2 times"):
        apply_edits(prompt, [PromptEdit(find="a", replace="c")])
    with pytest.raises(UserError, match="does not occur"):
        apply_edits(prompt, [PromptEdit(find="q", replace="c")])


def test_the_scripted_chat_model_asks_exactly_the_questions_its_prompt_lists() -> None:
    from examples.triage_chat_model import parse_prompt_questions, rules_from_prompt

    prompt = (Path(__file__).parent.parent / "scenarios/triage-chat/prompt.md").read_text()
    listed = parse_prompt_questions(prompt)
    assert listed["chest"] == [("Are you short of breath, or is your breathing difficult?", None)]
    assert (
        "Did the headache come on suddenly, like the worst headache ever, or is there a stiff neck?",
        "headache",
    ) in listed["neuro"]
    chest = next(c for c in rules_from_prompt(prompt).complaints if c.name == "chest")
    assert [q.key for q in chest.questions] == ["breathing"]  # a known question keeps its red flags
    added = prompt.replace(CHEST_ANCHOR, CHEST_ANCHOR + "\n- chest: Does it spread to your arm?")
    chest = next(c for c in rules_from_prompt(added).complaints if c.name == "chest")
    assert [q.text for q in chest.questions][1] == "Does it spread to your arm?"
    removed = prompt.replace(CHEST_ANCHOR + "\n", "")
    assert next(c for c in rules_from_prompt(removed).complaints if c.name == "chest").questions == ()
