"""Nothing accepted silently (issue 30, item 14): a shard still `running` is not merged, a label `yes` is
refused, verdicts for conversations the run does not have are said, not silently dropped."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.plural import plural
from simulator.record.folder import VERDICTS
from tests.test_report_support import make_judged_run


@pytest.mark.parametrize("label", ["yes", "no", "Yes", "NO"])
def test_a_yes_or_no_label_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str) -> None:
    run = make_judged_run(tmp_path / "tiny")
    out = tmp_path / "sheet"
    assert main(["labels", "export", str(run), "--criterion", "tone", "--out", str(out)]) == 0
    sheet = out / "labels.csv"
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    rows[0]["label"] = label
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert main(["calibrate", str(run), str(sheet)]) == 2
    err = capsys.readouterr().err
    assert f"label '{label}' is not pass, fail or n/a" in err and "labels.csv:2" in err


@pytest.mark.parametrize("strays", [1, 7])
def test_verdicts_for_conversations_the_run_lacks_are_said(tmp_path: Path, strays: int) -> None:
    run = make_judged_run(tmp_path / "tiny")
    lines = [json.loads(x) for x in (run / VERDICTS).read_text().splitlines()]
    line = next(v for v in lines if v["criterion_id"] == "tone")
    extra = [json.dumps({**line, "conversation_id": f"ghost-{i}#0"}) + "\n" for i in range(strays)]
    with (run / VERDICTS).open("a", encoding="utf-8") as handle:
        handle.writelines(extra)
    data = load_run(run)
    (warning,) = [w for w in data.warnings if "does not have" in w]
    assert f"verdicts for {plural(strays, 'conversation')}" in warning and "ghost-0#0" in warning
    assert all(not v.conversation_id.startswith("ghost") for v in data.verdicts)


@pytest.mark.parametrize("which", [0, 1])
def test_a_running_shard_is_not_merged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], which: int
) -> None:
    suite = make_judged_run(tmp_path / "tiny").parent / "suite.yaml"
    shards = []
    for index in (1, 2):
        out = tmp_path / f"shard{index}"
        assert main(["run", str(suite), "--shard", f"{index}/2", "--out", str(out), "--no-progress"]) == 0
        shards.append(out)
    manifest = json.loads((shards[which] / "manifest.json").read_text())
    manifest["status"] = "running"
    (shards[which] / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "all")]) == 2
    err = capsys.readouterr().err
    assert str(shards[which]) in err and "running" in err and "--resume" in err
    assert not (tmp_path / "all").exists()


@pytest.mark.parametrize(
    ("expected_key", "warned"), [("triage_levle", True), ("urgency", True), ("triage_level", False)]
)
def test_an_expected_key_the_bot_never_set_is_said_in_the_report(
    suite_dir: Path, capsys: pytest.CaptureFixture[str], expected_key: str, warned: bool
) -> None:
    """A python bot's state keys are known only once it ran: a key it set in no conversation is a report
    warning naming it (likely a misspelling), beside its fails."""
    scenario = suite_dir / "chest.yaml"
    scenario.write_text(scenario.read_text().replace("triage_level: emergency", f"{expected_key}: emergency"))
    out = suite_dir.parent / "run"
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    warnings = [w for w in load_run(out).warnings if "never set" in w]
    assert bool(warnings) == warned
    if warned:
        (warning,) = warnings
        assert (
            f"never set {expected_key} in any of the 3 conversations" in warning and "triage_level" in warning
        )
        capsys.readouterr()
        main(["report", str(out)])
        assert f"never set {expected_key}" in capsys.readouterr().out.replace("\n", " ")
