"""Agreement between raters on labels.jsonl: the numbers behind the desk's calibration page and
`simulator calibrate RUN` (one computation, one set of strings)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.analysis.agreement import macro_f1, pair_agreement, panel
from simulator.analysis.calibrate import calibrate_labels
from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.errors import UserError
from simulator.record.folder import RunFolder
from simulator.record.models import Label
from simulator.record.selection import latest_labels
from tests.test_report_support import record, verdict, write_run

# The worked example: both pass 40, both fail 45, reference fail / rater pass 10, reference pass / rater fail 5.
PAIRS = [("pass", "pass")] * 40 + [("fail", "fail")] * 45 + [("fail", "pass")] * 10 + [("pass", "fail")] * 5


def _label(labeller: str, conversation: str, value: str, criterion: str = "c1") -> Label:
    return Label(
        labeller=labeller,
        labelled_at=datetime.now(UTC),
        conversation_id=conversation,
        criterion_id=criterion,
        label=value,  # type: ignore[arg-type]
    )


def test_pair_agreement_on_the_worked_example() -> None:
    reference = {(f"s{i}", "c1"): human for i, (human, _) in enumerate(PAIRS)}
    rater = {(f"s{i}", "c1"): judge for i, (_, judge) in enumerate(PAIRS)}
    pair = pair_agreement("ann", reference, "judge", rater)
    assert pair.compared == 100
    assert (pair.false_pass.k, pair.false_pass.n) == (10, 55)
    assert (pair.agreement.k, pair.agreement.n) == (85, 100)
    assert pair.kappa == pytest.approx(0.7)
    # F1(pass) = 2*40 / (2*40 + 10 + 5); F1(fail) = 2*45 / (2*45 + 5 + 10)
    assert pair.macro_f1 == pytest.approx((80 / 95 + 90 / 105) / 2)
    assert pair.cells()["kappa"] == "0.70" and pair.cells()["macro-F1"] == "0.85"


@pytest.mark.parametrize(
    ("reference", "rater", "expected"),
    [
        (["pass", "pass"], ["pass", "pass"], 1.0),  # fail never used: only F1(pass) counts
        (["pass", "fail"], ["fail", "pass"], 0.0),
        (["not_applicable"], ["not_applicable"], None),  # neither pass nor fail: undefined
        (["pass", "fail", "not_applicable"], ["pass", "not_applicable", "not_applicable"], (1.0 + 0.0) / 2),
    ],
)
def test_macro_f1_leaves_out_classes_nobody_used(
    reference: list[str], rater: list[str], expected: float | None
) -> None:
    got = macro_f1(reference, rater)
    assert got == expected if expected is None else got == pytest.approx(expected)


def test_only_items_both_labelled_are_compared_and_kappa_is_none_when_not_measurable() -> None:
    pair = pair_agreement("a", {("x", "c"): "pass", ("y", "c"): "pass"}, "b", {("x", "c"): "pass"})
    assert pair.compared == 1 and pair.kappa is None and pair.false_pass.n == 0
    empty = pair_agreement("a", {}, "b", {("x", "c"): "pass"})
    assert empty.compared == 0 and empty.agreement.rate is None and empty.macro_f1 is None


def test_the_last_label_of_a_labeller_wins_and_labellers_stay_apart() -> None:
    labels = [_label("ann", "s1", "pass"), _label("bob", "s1", "fail"), _label("ann", "s1", "fail")]
    latest = latest_labels(labels)
    assert latest["ann"][("s1", "c1")].label == "fail" and latest["bob"][("s1", "c1")].label == "fail"


@pytest.fixture
def labelled_run(tmp_path: Path) -> Path:
    records = [record(f"s{i}") for i in range(len(PAIRS))]
    verdicts = [verdict(r, "c1", judge) for r, (_, judge) in zip(records, PAIRS, strict=True)]
    verdicts.append(verdict(records[0], "c2", "error"))
    run = write_run(tmp_path / "run", records, verdicts)
    folder = RunFolder.open(run)
    folder.append_labels(_label("ann", r.id, human) for r, (human, _) in zip(records, PAIRS, strict=True))
    # bob agrees with ann except on the first 4 items, and labels only 60
    bob = [
        _label("bob", r.id, ("fail" if human == "pass" else "pass") if i < 4 else human)
        for i, (r, (human, _)) in enumerate(zip(records[:60], PAIRS[:60], strict=True))
    ]
    folder.append_labels(bob)
    folder.append_labels([_label("ann", records[0].id, "pass", "c2")])
    return run


def test_calibrate_labels_reads_labels_jsonl_per_criterion_and_pair(labelled_run: Path) -> None:
    result = calibrate_labels(load_run(labelled_run))
    assert result.labellers == ["ann", "bob"]
    c1, c2 = result.criteria
    assert c1.criterion_id == "c1" and c1.items == 100
    ann_judge = next(p for p in c1.judge if p.reference == "ann")
    assert (ann_judge.false_pass.k, ann_judge.false_pass.n, ann_judge.kappa) == (10, 55, pytest.approx(0.7))
    (between,) = c1.between_labellers
    assert (between.reference, between.rater, between.compared, between.agreement.k) == ("ann", "bob", 60, 56)
    # c2: the judge's only verdict is an error: left out, so nothing to compare
    assert c2.judge[0].compared == 0


def test_the_command_prints_the_same_numbers_and_json(
    labelled_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # no wrapped table cells
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(labelled_run), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    expected = calibrate_labels(load_run(labelled_run))
    for criterion in expected.criteria:
        for pair in criterion.judge + criterion.between_labellers:
            for value in pair.cells().values():
                assert value in printed
    written = type(expected).model_validate_json(out.read_text())
    assert written.model_dump(exclude={"labels_file"}) == expected.model_dump(exclude={"labels_file"})


def test_no_labels_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", [record("s")], [verdict(record("s"), "c1", "pass")])
    with pytest.raises(UserError, match=r"labels\.jsonl: no labels yet"):
        calibrate_labels(load_run(run))
    assert main(["calibrate", str(run)]) == 2
    assert "no labels yet" in capsys.readouterr().err


def test_panel_of_no_labels_is_empty() -> None:
    assert panel("r", "f", None, [], []).criteria == []


def test_labels_are_read_once_with_the_run_and_every_builder_reads_them_from_it(labelled_run: Path) -> None:
    from simulator.analysis.corrected import run_corrected_rates
    from simulator.analysis.fidelity_labels import labels_from_run
    from simulator.analysis.meta_eval import meta_evaluate
    from simulator.record.hashing import sha256_file

    run = load_run(labelled_run)
    assert len(run.labels) == 100 + 60 + 1 and run.labels_sha256 == sha256_file(labelled_run / "labels.jsonl")

    def built() -> list[object]:
        return [
            calibrate_labels(run).model_dump(),
            meta_evaluate(run, replicates=50).model_dump(),
            [r.model_dump() for r in run_corrected_rates(run, replicates=50)],
            labels_from_run(run, "bob"),
        ]

    before = built()
    (labelled_run / "labels.jsonl").unlink()  # nothing reads the folder again in the middle of a report
    assert built() == before
    assert load_run(labelled_run).labels == [] and load_run(labelled_run).labels_sha256 is None


def test_the_desk_reads_new_labels_without_rebuilding_the_report(labelled_run: Path) -> None:
    from simulator.serve.runs_index import RunIndex

    index = RunIndex(labelled_run.parent)
    run, report = index.load(labelled_run.name)
    RunFolder.open(labelled_run).append_labels([_label("cy", "s0#0", "fail")])
    again, same = index.load(labelled_run.name)
    assert same is report and again is run and len(again.labels) == 100 + 60 + 1 + 1
    assert calibrate_labels(again).labellers == ["ann", "bob", "cy"]
