"""One rule for which verdicts count (record/selection.py), and every reader counting by it: the report
(load_run), collect's trends (drift and alerts), `simulator show`, the OTel export and the engine's counts
see the same verdict per (conversation, criterion), whatever else the run folder holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.collect.trends import load_observations
from simulator.errors import UserError
from simulator.record.counting import verdict_counts
from simulator.record.models import Verdict
from simulator.record.selection import (
    by_item,
    counted,
    judged_items,
    labels_by_item,
    latest_labels,
    select_verdicts,
)
from tests.test_report_support import record, verdict, write_run

OLD, NEW = "sha256:" + "a" * 64, "sha256:" + "b" * 64
R0, R1 = record("s0"), record("s1")


def _v(rec: object, criterion: str, result: str, judge_set: str = NEW, **fields: object) -> Verdict:
    return verdict(rec, criterion, result, judge_set_hash=judge_set, **fields)  # type: ignore[arg-type]


def test_the_latest_set_is_chosen_and_a_criterion_it_never_judged_is_borrowed() -> None:
    lines = [
        _v(R0, "c1", "fail", OLD),
        _v(R0, "code", "pass", OLD, kind="code"),
        _v(R0, "c1", "pass", NEW),
    ]
    chosen = select_verdicts(lines)
    assert chosen.judge_set == NEW and chosen.judge_sets == [NEW, OLD]
    assert {(v.criterion_id, v.result) for v in chosen.verdicts} == {("c1", "pass"), ("code", "pass")}
    assert chosen.borrowed == {"code": OLD} and [v.criterion_id for v in chosen.own] == ["c1"]
    assert chosen.others == 2 and [len(lines) for lines in chosen.by_set.values()] == [1, 2]


@pytest.mark.parametrize(("asked", "result"), [(OLD, "fail"), ("aaaa", "fail"), ("sha256:bbb", "pass")])
def test_a_judge_set_is_named_by_its_hash_or_a_prefix(asked: str, result: str) -> None:
    lines = [_v(R0, "c1", "fail", OLD), _v(R0, "c1", "pass", NEW)]
    assert [v.result for v in select_verdicts(lines, asked).verdicts] == [result]


@pytest.mark.parametrize(
    ("asked", "message"), [("cccc", "matches no judge set"), ("sha256:", "matches more than one")]
)
def test_an_unknown_or_ambiguous_judge_set_names_the_known_ones(asked: str, message: str) -> None:
    lines = [_v(R0, "c1", "fail", OLD), _v(R0, "c1", "pass", NEW)]
    with pytest.raises(UserError, match=f"{message}.*known sets: bbbbbbbbbbbb, aaaaaaaaaaaa"):
        select_verdicts(lines, asked)
    assert select_verdicts(lines, "sha256:" + "c" * 64, missing_ok=True).own == []


def test_samples_and_fidelity_checks_are_kept_apart_and_the_last_line_wins() -> None:
    lines = [
        _v(R0, "c1", "fail", sample=0),
        _v(R0, "c1", "pass", sample=1),
        _v(R0, "c1", "error"),
        _v(R0, "c1", "pass", aggregate="majority"),  # judged again: the last line is the verdict
        _v(R0, "fidelity.drift", "fail", "sha256:fidelity", kind="fidelity"),
        _v(R1, "c1", "fail"),
    ]
    chosen = select_verdicts(lines, conversations={R0.id})
    assert [(v.conversation_id, v.result) for v in chosen.verdicts] == [(R0.id, "pass")]
    assert [v.sample for v in chosen.samples] == [0, 1]
    assert [v.criterion_id for v in chosen.fidelity] == ["fidelity.drift"]
    assert chosen.strays == [R1.id]
    assert len(counted(lines)) == 4 and verdict_counts(lines) == (3, 1)
    assert judged_items(lines, NEW, result="error") == {(R0.id, "c1")}
    assert by_item(lines)[(R0.id, "c1")].result == "pass"  # the last line of the item, samples or not


def test_the_last_label_of_each_labeller_wins_in_both_shapes() -> None:
    from datetime import UTC, datetime

    from simulator.record.models import Label

    def label(who: str, value: str) -> Label:
        at = datetime.now(UTC)
        return Label(labeller=who, labelled_at=at, conversation_id="s0#0", criterion_id="c1", label=value)  # type: ignore[arg-type]

    labels = [label("ann", "pass"), label("bob", "fail"), label("ann", "fail")]
    assert latest_labels(labels)["ann"][("s0#0", "c1")].label == "fail"
    assert labels_by_item(labels) == {("s0#0", "c1"): {"ann": "fail", "bob": "fail"}}


# Runs whose verdicts.jsonl holds a line that must not count, beside the one that does (s0's `c1` passes).
TRAPS = {
    "an older judge set failed it": [_v(R0, "c1", "fail", OLD), _v(R0, "c1", "pass", NEW)],
    # A set that wrote last overall is the report's, even on an item another set judged after it.
    "another set judged it last": [_v(R0, "c1", "pass", NEW), _v(R0, "c1", "fail", OLD)],
    "a sample failed it": [_v(R0, "c1", "fail", sample=0), _v(R0, "c1", "pass", aggregate="majority")],
    "it was judged twice": [_v(R0, "c1", "fail"), _v(R0, "c1", "pass")],
}


@pytest.mark.parametrize("trap", sorted(TRAPS))
def test_every_reader_counts_the_same_verdicts(
    trap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fidelity = _v(R0, "fidelity.drift", "fail", "sha256:fidelity", kind="fidelity")
    lines = [fidelity, *TRAPS[trap], _v(R1, "c1", "fail")]
    run = write_run(tmp_path / "run", [R0, R1], lines)
    (run / "signals.jsonl").write_text(
        "".join(
            json.dumps({"conversation_id": r.id, "started_at": r.started_at.isoformat()}) + "\n"
            for r in (R0, R1)
        ),
        encoding="utf-8",
    )
    report = {(v.conversation_id, v.criterion_id): v.result for v in load_run(run).verdicts}
    assert report == {(R0.id, "c1"): "pass", (R1.id, "c1"): "fail"}
    trends = {
        (o.conversation.split("/")[-1], c): r for o in load_observations([run]) for c, r in o.results.items()
    }
    assert trends == report  # drift and alerts count what the report counts
    assert main(["show", str(run), "--scenario", "s0", "--all"]) == 0
    shown = capsys.readouterr().out
    assert shown.count("c1") == 1 and "fidelity.drift" in shown  # one verdict, the fidelity check apart
