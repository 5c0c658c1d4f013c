"""One agreement computation: `simulator calibrate` (a labels CSV and labels.jsonl), `simulator meta-eval` and
the review desk's calibration page give the same figures on the same labels, n/a included, and those
figures are scikit-learn's (analysis/agreement.py states the n/a rule: n/a is a label like pass and fail)."""

from __future__ import annotations

import csv
import html
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from starlette.testclient import TestClient

from simulator.analysis.calibrate import calibrate, calibrate_labels
from simulator.analysis.meta_eval import meta_evaluate
from simulator.analysis.rundata import load_run
from simulator.record.folder import RunFolder
from simulator.record.models import Label
from simulator.serve import DeskConfig, create_app
from tests.test_report_support import record, verdict, write_run

P, F, NA = "pass", "fail", "not_applicable"

# (human, judge) per conversation; a judge "error" has no label and is left out everywhere.
CASES = {
    "n/a on both sides": [(P, P)] * 6 + [(F, F)] * 4 + [(F, P)] * 2 + [(P, F)] + [(NA, NA)] * 2
    + [(F, NA)] * 2 + [(NA, P), (P, NA), (F, "error")],
    "n/a only from the judge": [(P, P)] * 3 + [(F, F)] * 3 + [(F, NA)] * 3 + [(P, NA)],
    "fail never used": [(P, P)] * 5 + [(P, NA)] * 2 + [(NA, NA)] * 3 + [(NA, P)],
    "no n/a at all": [(P, P)] * 7 + [(F, F)] * 5 + [(F, P)] * 3 + [(P, F)] * 2 + [(P, "error")],
}  # fmt: skip


def _expected(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """scikit-learn's figures on the items both sides labelled."""
    used = [(h, j) for h, j in pairs if j != "error"]
    human, judge = [h for h, _ in used], [j for _, j in used]
    fails = [j for h, j in used if h == F]
    macro = f1_score(human, judge, labels=[P, F], average="macro", zero_division=np.nan)
    return {
        "compared": len(used),
        "kappa": cohen_kappa_score(human, judge),
        "macro_f1": None if np.isnan(macro) else float(macro),
        "false_pass": (fails.count(P), len(fails)),
        "agreement": sum(h == j for h, j in used),
    }


def _labelled_run(root: Path, pairs: list[tuple[str, str]]) -> tuple[Path, Path]:
    """A run whose judge said `judge` on c1 of each conversation, ann's labels in labels.jsonl and the same
    labels in a CSV."""
    records = [record(f"s{i}") for i in range(len(pairs))]
    run = write_run(
        root / "run", records, [verdict(r, "c1", j) for r, (_, j) in zip(records, pairs, strict=True)]
    )
    labels = [
        Label(labeller="ann", labelled_at=datetime.now(UTC), conversation_id=r.id, criterion_id="c1", label=h)  # type: ignore[arg-type]
        for r, (h, _) in zip(records, pairs, strict=True)
    ]
    RunFolder.open(run).append_labels(labels)
    sheet = root / "labels.csv"
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["conversation_id", "criterion_id", "label"])
        writer.writerows(
            [r.id, "c1", "n/a" if h == NA else h] for r, (h, _) in zip(records, pairs, strict=True)
        )
    return run, sheet


def _desk_row(root: Path, run: Path) -> dict[str, str]:
    """The desk's calibration page, judge row against ann, as header -> cell text."""
    (root / "scenarios").mkdir()
    (root / "judges").mkdir()
    app = create_app(DeskConfig(run.parent, root / "scenarios", root / "judges"))
    page = TestClient(app, base_url="http://127.0.0.1").get(f"/runs/{run.name}/calibration").text
    table = page.split("judge against each labeller", 1)[1].split("</table>", 1)[0]
    headers = re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", table)
    (cells,) = [
        re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)[1:]
    ]
    return {h: html.unescape(c) for h, c in zip(headers, cells, strict=True)}


@pytest.mark.parametrize("case", list(CASES))
def test_calibrate_meta_eval_and_the_desk_agree_with_sklearn(tmp_path: Path, case: str) -> None:
    pairs = CASES[case]
    expected = _expected(pairs)
    run_path, sheet = _labelled_run(tmp_path, pairs)
    run = load_run(run_path)

    (csv_row,) = calibrate(run, sheet).criteria
    (desk_pair,) = calibrate_labels(run).criteria[0].judge
    (meta_group,) = meta_evaluate(run, replicates=50).criteria
    (meta_row,) = meta_group.judge

    for compared in (csv_row.compared, desk_pair.compared, meta_row.compared):
        assert compared == expected["compared"]
    for kappa in (csv_row.kappa, desk_pair.kappa, meta_row.kappa.value):
        assert kappa == pytest.approx(expected["kappa"])
    for macro in (csv_row.macro_f1, desk_pair.macro_f1, meta_row.macro_f1.value):
        assert macro == (None if expected["macro_f1"] is None else pytest.approx(expected["macro_f1"]))
    k, n = expected["false_pass"]
    assert (csv_row.false_pass.k, csv_row.false_pass.n) == (k, n)
    assert (desk_pair.false_pass.k, desk_pair.false_pass.n) == (k, n)
    assert (meta_row.false_passes, meta_row.reference_fails) == (k, n)
    assert (csv_row.agreement.k, desk_pair.agreement.k) == (expected["agreement"],) * 2
    errors = sum(j == "error" for _, j in pairs)
    assert csv_row.judge_errors == meta_row.left_out == errors

    # The desk's page shows the very strings `calibrate RUN` prints.
    assert _desk_row(tmp_path, run_path) == desk_pair.cells()


def test_an_na_disagreement_is_counted_against_the_judge(tmp_path: Path) -> None:
    """A judge that calls every human fail "not applicable" never agrees on a fail: F1(fail) is 0."""
    pairs = [(P, P)] * 4 + [(F, NA)] * 4
    run, sheet = _labelled_run(tmp_path, pairs)
    (row,) = calibrate(load_run(run), sheet).criteria
    assert row.compared == 8 and row.agreement.k == 4
    assert row.macro_f1 == pytest.approx((1.0 + 0.0) / 2)
    (meta_row,) = meta_evaluate(load_run(run), replicates=50).criteria[0].judge
    assert meta_row.left_out == 0 and meta_row.macro_f1.value == pytest.approx(0.5)
