"""Judge calibration against human labels, the labels CSV, and the blind export for labelling."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simulator.analysis.calibrate import calibrate, export_labels, read_labels
from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.errors import UserError
from simulator.stats.basic import cohens_kappa
from tests.test_report_support import make_judged_run, record, verdict, write_run


def _write_labels(
    path: Path,
    rows: list[tuple[str, str, str]],
    header: tuple[str, ...] = ("conversation_id", "criterion_id", "label"),
) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The article's worked example: 100 transcripts, both pass 40, both fail 45, judge passes 10 the human
    fails, judge fails 5 the human passes."""
    root = tmp_path_factory.mktemp("seed")
    pairs = (
        [("pass", "pass")] * 40 + [("fail", "fail")] * 45 + [("fail", "pass")] * 10 + [("pass", "fail")] * 5
    )
    records = [record(f"s{i}") for i in range(100)]
    verdicts = [
        verdict(r, "asks-danger-signs", judge, reasoning=f"judge said {judge}")
        for r, (_, judge) in zip(records, pairs, strict=True)
    ]
    run = write_run(root / "run", records, verdicts)
    labels = _write_labels(
        root / "labels.csv",
        [(r.id, "asks-danger-signs", human) for r, (human, _) in zip(records, pairs, strict=True)],
    )
    return run, labels


def test_the_seed_example_kappa_and_false_passes(seed_run: tuple[Path, Path]) -> None:
    run, labels = seed_run
    result = calibrate(load_run(run), labels)
    (criterion,) = result.criteria
    assert criterion.kappa == pytest.approx(0.70)
    assert (criterion.agreement.k, criterion.agreement.n) == (85, 100)
    assert (criterion.false_pass.k, criterion.false_pass.n) == (
        10,
        55,
    )  # of the human fails, the judge passed 10
    assert (criterion.false_fail.k, criterion.false_fail.n) == (5, 45)
    assert criterion.matrix["fail"]["pass"] == 10 and criterion.matrix["pass"]["fail"] == 5
    # False passes are listed before false fails.
    assert [(d.human, d.judge) for d in criterion.disagreements[:10]] == [("fail", "pass")] * 10
    assert criterion.disagreements[-1].human == "pass"
    assert result.overall is None


def test_calibrate_command_prints_false_passes_first(
    seed_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run, labels = seed_run
    assert main(["calibrate", str(run), str(labels)]) == 0
    out = capsys.readouterr().out
    assert out.index("false pass") < out.index("raw agreement")
    assert "0.70" in out and "10/55" in out


def test_judge_errors_missing_verdicts_and_unknown_conversations_are_counted_apart(tmp_path: Path) -> None:
    recs = [record(f"s{i}") for i in range(4)]
    verdicts = [
        verdict(recs[0], "c1", "pass"),
        verdict(recs[1], "c1", "fail"),
        verdict(recs[2], "c1", "error"),
        verdict(recs[0], "c2", "not_applicable"),
        verdict(recs[1], "c2", "pass"),
    ]
    write_run(tmp_path / "r", recs, verdicts)
    labels = _write_labels(
        tmp_path / "l.csv",
        [
            ("s0#0", "c1", "pass"),
            ("s1#0", "c1", "Pass"),
            ("s2#0", "c1", "fail"),
            ("s3#0", "c1", "fail"),
            ("s0#0", "c2", "n/a"),
            ("s1#0", "c2", "pass"),
            ("nope#0", "c1", "pass"),
            ("s3#0", "c2", ""),
        ],
    )
    result = calibrate(load_run(tmp_path / "r"), labels)
    c1, c2 = result.criteria
    assert (c1.labelled, c1.compared, c1.judge_errors, c1.no_verdict) == (4, 2, 1, 1)
    assert c1.kappa == pytest.approx(cohens_kappa(["pass", "pass"], ["pass", "fail"])) or c1.kappa is None
    assert c2.agreement.k == c2.agreement.n == 2 and c2.kappa == pytest.approx(1.0)
    assert result.unknown_conversations == ["nope#0"]
    assert result.overall is not None and result.overall.compared == 4


def test_kappa_is_none_when_every_label_is_the_same(tmp_path: Path) -> None:
    recs = [record(f"s{i}") for i in range(3)]
    write_run(tmp_path / "r", recs, [verdict(r, "c", "pass") for r in recs])
    labels = _write_labels(tmp_path / "l.csv", [(r.id, "c", "pass") for r in recs])
    (criterion,) = calibrate(load_run(tmp_path / "r"), labels).criteria
    assert criterion.kappa is None and criterion.agreement.k == 3
    assert criterion.false_pass.n == 0


def test_label_file_mistakes_name_the_line(tmp_path: Path) -> None:
    bad_header = _write_labels(
        tmp_path / "h.csv", [("a#0", "c", "pass")], header=("conversation", "criterion_id", "label")
    )
    with pytest.raises(UserError, match=r"h.csv:1: the header needs columns .*missing conversation_id"):
        read_labels(bad_header)
    bad_label = _write_labels(tmp_path / "b.csv", [("a#0", "c", "pass"), ("b#0", "c", "maybe")])
    with pytest.raises(UserError) as info:
        read_labels(bad_label)
    assert "b.csv:3 [label]: label 'maybe' is not pass, fail or n/a" in info.value.render()
    conflict = _write_labels(tmp_path / "c.csv", [("a#0", "c", "pass"), ("a#0", "c", "fail")])
    with pytest.raises(UserError) as info:
        read_labels(conflict)
    assert "conflicting label" in info.value.render()
    with pytest.raises(UserError, match="no such labels file"):
        read_labels(tmp_path / "missing.csv")
    empty = _write_labels(tmp_path / "e.csv", [("a#0", "c", "")])
    write_run(tmp_path / "r", [record("a")], [])
    with pytest.raises(UserError, match="no labelled rows yet"):
        calibrate(load_run(tmp_path / "r"), empty)


def test_blind_export_then_calibrate_round_trip(tmp_path: Path) -> None:
    run = make_judged_run(tmp_path / "tiny")
    data = load_run(run)
    transcripts, labels, count = export_labels(data, "asks-danger-signs", tmp_path / "out", seed=3)
    assert count == 18  # the 3 crashed conversations were not judged: nothing to label
    text = transcripts.read_text(encoding="utf-8")
    assert "never asked about danger signs" not in text and "asked about breathing" not in text  # no verdicts
    assert "triage_level" not in text  # no final state, no expectation
    assert "USER:" in text and "BOT:" in text
    rows = list(csv.DictReader(labels.open(encoding="utf-8")))
    assert [r["label"] for r in rows] == [""] * 18
    again, _, _ = export_labels(data, "asks-danger-signs", tmp_path / "again", seed=3)
    assert again.read_text(encoding="utf-8") == text  # seeded: the same order
    # Fill the sheet with the judge's own verdicts: perfect agreement.
    judge = {v.conversation_id: v.result for v in data.verdicts if v.criterion_id == "asks-danger-signs"}
    for row in rows:
        row["label"] = judge[row["conversation_id"]]
    with labels.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (criterion,) = calibrate(data, labels).criteria
    assert criterion.agreement.k == criterion.agreement.n == 18 and criterion.kappa == pytest.approx(1.0)
    _, _, sampled = export_labels(data, "asks-danger-signs", tmp_path / "sample", sample=5)
    assert sampled == 5
    with pytest.raises(UserError, match=r"criteria in this run: .*asks-pregnancy"):
        export_labels(data, "no-such-criterion", tmp_path / "x")


def test_labels_export_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_judged_run(tmp_path / "tiny")
    out = tmp_path / "labels"
    assert (
        main(["labels", "export", str(run), "--criterion", "tone", "--out", str(out), "--sample", "4"]) == 0
    )
    assert "wrote 4 blind transcripts" in capsys.readouterr().out
    assert (
        (out / "labels.csv")
        .read_text(encoding="utf-8")
        .startswith("conversation_id,criterion_id,label,notes")
    )
    assert main(["labels", "export", str(run), "--criterion", "tone", "--sample", "0"]) == 2


def test_blind_export_shows_the_rubric_the_run_recorded(tmp_path: Path) -> None:
    """The judge stage writes each criterion's wording into the manifest; the labelling sheet shows it."""
    import asyncio

    from simulator.config.loading import load_scenarios
    from simulator.config.suite import load_suite
    from simulator.engine.runner import RunOptions, run_suite
    from simulator.record.folder import RunFolder
    from simulator.record.models import Verdict

    root = Path(__file__).resolve().parent.parent
    suite = load_suite(root / "scenarios" / "triage" / "suite.yaml", {"runs": 1})
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])[:2]
    out = tmp_path / "run"
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=out, progress=False)))
    folder = RunFolder.resume(out)
    first = next(iter(folder.conversations()))
    folder.append_verdicts(
        [
            Verdict(
                conversation_id=first.id,
                scenario_id=first.scenario_id,
                repeat=0,
                criterion_id="asks-age",
                kind="llm",
                result="pass",
                reasoning="JUDGE-REASONING-7",
            )
        ],
    )
    transcripts, _, count = export_labels(load_run(out), "asks-age", tmp_path / "labels")
    text = transcripts.read_text()
    assert count == 1
    assert "## The criterion" in text and "age" in text.split("## 1.")[0].lower()
    assert "**fail**" in text and "JUDGE-REASONING-7" not in text  # the verdict itself stays hidden


# ---- a low kappa beside a high agreement says why (issue 31, item 13) -----------------------------------------


@pytest.mark.parametrize(
    ("pairs", "kappa", "note"),
    [
        # The case: the humans passed all 10, the judge called one "not applicable": 90% agreement,
        # macro-F1 0.95 (fail used by neither side), kappa 0.00.
        ([("pass", "pass")] * 9 + [("pass", "not_applicable")], 0.0, "the humans gave one label only (pass)"),
        ([("pass", "pass")] * 9 + [("fail", "pass")], 0.0, "the judge gave one label only (pass)"),
        (
            [("pass", "pass")] * 17 + [("fail", "fail")] + [("fail", "pass"), ("pass", "fail")],
            pytest.approx(0.4444, abs=1e-3),
            "prevalence: 90% of the labels are pass, so chance agreement is 82%",
        ),
        ([("pass", "pass")] * 5, None, "not measurable: both gave every item the same label (pass)"),
        ([("pass", "pass")] * 5 + [("fail", "fail")] * 5, 1.0, ""),  # balanced: nothing to explain
    ],
)
def test_kappa_says_why_it_is_low_where_it_is_shown(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pairs: list[tuple[str, str]],
    kappa: float | None,
    note: str,
) -> None:
    recs = [record(f"s{i}") for i in range(len(pairs))]
    verdicts = [verdict(r, "c", judge) for r, (_, judge) in zip(recs, pairs, strict=True)]
    run = write_run(tmp_path / "r", recs, verdicts)
    labels = _write_labels(
        tmp_path / "l.csv", [(r.id, "c", human) for r, (human, _) in zip(recs, pairs, strict=True)]
    )
    (criterion,) = calibrate(load_run(run), labels).criteria
    assert criterion.kappa == kappa
    assert criterion.kappa_note.startswith(note) if note else criterion.kappa_note == ""
    if pairs[-1] == ("pass", "not_applicable"):
        assert criterion.macro_f1 == pytest.approx(18 / 19) and criterion.agreement.k == 9
    assert main(["calibrate", str(run), str(labels)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    if note:
        assert f"({note}" in out  # printed beside the kappa it explains


def test_the_desk_and_meta_eval_rows_carry_the_same_note() -> None:
    from simulator.analysis.agreement import pair_agreement

    items = [(f"s{i}#0", "c") for i in range(10)]
    human = dict.fromkeys(items, "pass")
    judge = {**human, items[-1]: "not_applicable"}
    row = pair_agreement("nurse", human, "judge", judge)
    assert row.kappa == 0.0 and row.agreement.k == 9
    assert row.cells()["kappa"].startswith("0.00 (nurse gave one label only (pass): chance agreement is 90%")
