"""Meta-evaluation against several labellers, checked against scikit-learn and statsmodels, the labels
import, Fleiss' kappa, calibrate's order, and Rogan–Gladen recovering a planted failure rate."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from simulator.analysis.agreement import LABELS
from simulator.analysis.calibrate import calibrate
from simulator.analysis.corrected import corrected_rate, rogan_gladen
from simulator.analysis.meta_eval import meta_evaluate
from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.record.folder import RunFolder
from simulator.record.manifest import CriterionEntry, JudgeSet
from simulator.stats.interrater import fleiss_kappa
from tests.test_report_support import record, verdict, write_run

CRITERIA = {"c1": ("safety", "critical"), "c2": ("tone", "minor"), "c3": ("safety", "major")}
LABELLERS = {"ana": 0.1, "ben": 0.2, "cy": 0.3}  # each flips the truth this often
JUDGE_NOISE = 0.15


def _flip(value: str, rng: np.random.Generator, share: float) -> str:
    return ("fail" if value == "pass" else "pass") if rng.random() < share else value


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[str, str], dict[str, str]]]:
    """40 scenarios x 3 repeats, three criteria, a noisy judge and three labellers of known noise."""
    root = tmp_path_factory.mktemp("meta")
    rng = np.random.default_rng(7)
    records = [record(f"s{s}", r) for s in range(40) for r in range(3)]
    ratings: dict[tuple[str, str], dict[str, str]] = {}
    verdicts = []
    for rec in records:
        for criterion, (category, severity) in CRITERIA.items():
            truth = "fail" if rng.random() < 0.35 else "pass"
            judged = _flip(truth, rng, JUDGE_NOISE)
            verdicts.append(verdict(rec, criterion, judged, category=category, severity=severity))
            item = ratings.setdefault((rec.id, criterion), {"judge": judged})
            for name, noise in LABELLERS.items():
                if rng.random() < 0.9:  # not everyone labels everything
                    item[name] = _flip(truth, rng, noise)
    ratings[(records[0].id, "c2")]["ana"] = "not_applicable"  # a label like pass and fail (agreement.py)
    run = write_run(root / "run", records, verdicts)
    folder = RunFolder.resume(run)
    manifest = folder.read_manifest()
    manifest.add_judge_set(
        JudgeSet(
            hash="sha256:synthetic",
            criteria=[
                CriterionEntry(id=c, criterion=c, fail="f", severity=s, category=g, **{"pass": "p"})
                for c, (g, s) in CRITERIA.items()
            ],
        )
    )
    folder.write_manifest(manifest)
    for name in LABELLERS:
        sheet = root / f"{name}.csv"
        with sheet.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["conversation_id", "criterion_id", "label", "notes"])
            writer.writerows([c, k, r[name], ""] for (c, k), r in ratings.items() if name in r)
        assert main(["labels", "import", str(run), str(sheet), "--labeller", name]) == 0
    return run, ratings


def _pairs(ratings: dict[tuple[str, str], dict[str, str]], criteria: set[str], rater: str, ref: str) -> tuple[list[str], list[str]]:  # fmt: skip
    truth, said = [], []
    for (_, criterion), r in ratings.items():
        if criterion in criteria and r.get(rater) in LABELS and r.get(ref) in LABELS:
            truth.append(r[ref])
            said.append(r[rater])
    return truth, said


def _macro_f1(truth: list[str], said: list[str]) -> float:
    return float(f1_score(truth, said, labels=["pass", "fail"], average="macro", zero_division=np.nan))


def _check(group, ratings: dict[tuple[str, str], dict[str, str]], criteria: set[str]) -> None:  # type: ignore[no-untyped-def]
    for row in [*group.judge, *group.humans]:
        truth, said = _pairs(ratings, criteria, row.rater, row.reference)
        assert row.compared == len(truth)
        assert row.macro_f1.value == pytest.approx(_macro_f1(truth, said))
        assert row.kappa.value == pytest.approx(cohen_kappa_score(truth, said))
        fails = [s for t, s in zip(truth, said, strict=True) if t == "fail"]
        assert (row.false_passes, row.reference_fails) == (fails.count("pass"), len(fails))
        assert row.false_pass.value == pytest.approx(fails.count("pass") / len(fails))
        for figure in (row.macro_f1, row.kappa, row.false_pass):
            assert figure.low is not None and figure.high is not None
            assert figure.low <= figure.value <= figure.high and figure.low < figure.high


def test_macro_f1_kappa_and_false_passes_match_sklearn(labelled: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    run, ratings = labelled
    result = meta_evaluate(load_run(run), replicates=400)
    assert result.labellers == ["ana", "ben", "cy"]
    by_name = {g.name: g for g in result.criteria}
    for criterion in CRITERIA:
        _check(by_name[criterion], ratings, {criterion})
    categories = {g.name: g for g in result.categories}
    assert set(categories) == {"safety", "tone"}
    _check(categories["safety"], ratings, {"c1", "c3"})
    # The n/a label is a label (analysis/agreement.py's one rule): compared, not left out.
    ana_c2 = next(r for r in by_name["c2"].judge if r.reference == "ana")
    assert ana_c2.left_out == 0
    assert ana_c2.compared == len(_pairs(ratings, {"c2"}, "judge", "ana")[0])


def test_human_baseline_and_the_judges_percentile(labelled: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    run, ratings = labelled
    group = next(g for g in meta_evaluate(load_run(run), replicates=400).criteria if g.name == "c1")
    names = list(LABELLERS)
    f1 = {
        (a, b): _macro_f1(*_pairs(ratings, {"c1"}, a, b)) for a in [*names, "judge"] for b in names if a != b
    }
    judge = np.mean([f1[("judge", b)] for b in names])
    scores = {a: np.mean([f1[(a, b)] for b in names if b != a]) for a in names}
    assert group.judge_macro_f1.value == pytest.approx(judge)
    assert group.human_macro_f1.value == pytest.approx(
        np.mean([v for (a, _), v in f1.items() if a != "judge"])
    )
    assert group.labeller_scores == pytest.approx(scores)
    expected = sum((s < judge) + 0.5 * (s == judge) for s in scores.values()) / 3
    assert group.judge_percentile.value == pytest.approx(expected)
    assert group.judge_percentile.low is not None and group.judge_percentile.low <= expected
    # The noisiest labeller (cy) scores lowest against the others, the cleanest (ana) highest.
    assert scores["cy"] < scores["ben"] < scores["ana"]


def test_critical_criteria_with_false_passes_come_first(labelled: tuple[Path, dict], tmp_path: Path) -> None:  # type: ignore[type-arg]
    run, ratings = labelled
    assert meta_evaluate(load_run(run), replicates=200).criteria[0].name == "c1"
    sheet = tmp_path / "ben.csv"
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["conversation_id", "criterion_id", "label"])
        writer.writerows([c, k, r["ben"]] for (c, k), r in ratings.items() if "ben" in r)
    order = [c.criterion_id for c in calibrate(load_run(run), sheet).criteria]
    assert order[0] == "c1" and sorted(order) == ["c1", "c2", "c3"]


def test_meta_eval_command_and_labels_import_errors(
    labelled: tuple[Path, dict],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # type: ignore[type-arg]
) -> None:
    run, _ = labelled
    assert main(["meta-eval", str(run), "--replicates", "200", "--json", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert "criterion c1 (critical)" in out and "judge percentile among labellers" in out
    assert json.loads((tmp_path / "m.json").read_text())["labellers"] == ["ana", "ben", "cy"]
    bad = tmp_path / "bad.csv"
    bad.write_text("conversation_id,criterion_id,label\nnope#0,c1,pass\ns0#0,c1,maybe\n")
    assert main(["labels", "import", str(run), str(bad), "--labeller", "dee"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3" in err and "maybe" in err
    bad.write_text("conversation_id,criterion_id,label\nnope#0,c1,pass\n")
    assert main(["labels", "import", str(run), str(bad), "--labeller", "dee"]) == 2
    assert f"{bad}:2" in capsys.readouterr().err and "nope#0" in bad.read_text()
    assert all(label.labeller != "dee" for label in RunFolder.open(run).labels())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fleiss_kappa_matches_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    raters = int(rng.integers(2, 6))
    table = [rng.multinomial(raters, rng.dirichlet([1, 1, 1])).tolist() for _ in range(50)]
    assert fleiss_kappa(table) == pytest.approx(sm_fleiss(np.array(table)))
    assert fleiss_kappa([[3, 0, 0]] * 5) is None  # every rating in one category: kappa undefined


@pytest.mark.parametrize(
    ("true_rate", "se", "sp"), [(0.30, 0.60, 0.95), (0.10, 0.70, 0.90), (0.50, 0.85, 0.80)]
)
def test_rogan_gladen_recovers_a_planted_rate(true_rate: float, se: float, sp: float) -> None:
    rng = np.random.default_rng(11)
    items = [(f"s{i // 4}", rng.random() < true_rate) for i in range(4000)]  # 1000 scenarios x 4
    judged = [(c, bool(rng.random() < (se if failed else 1 - sp))) for c, failed in items]
    labelled = [(c, failed, j) for (c, failed), (_, j) in zip(items[:800], judged[:800], strict=True)]
    raw = sum(j for _, j in judged) / len(judged)
    result = corrected_rate("c", judged, labelled, replicates=1000)
    assert result.raw == pytest.approx(raw)
    assert result.low is not None and result.high is not None
    assert result.low <= true_rate <= result.high
    assert result.corrected == pytest.approx(true_rate, abs=0.05)
    if abs(raw - true_rate) > 0.05:
        assert not result.low <= raw <= result.high  # the raw rate is outside the corrected interval


def test_rogan_gladen_formula_and_its_limits() -> None:
    assert rogan_gladen(0.215, 0.6, 0.95) == pytest.approx(0.3)
    assert rogan_gladen(0.5, 0.5, 0.5) is None  # a judge no better than chance corrects nothing
    assert rogan_gladen(0.01, 0.9, 0.9) == 0.0  # clipped
    no_fails = corrected_rate("c", [("s", False)] * 5, [("s", False, False)] * 5)
    assert no_fails.corrected is None and "labelled fails" in no_fails.note


def test_the_report_shows_corrected_rates_when_labels_exist(
    labelled: tuple[Path, dict], tmp_path: Path
) -> None:  # type: ignore[type-arg]
    run, _ = labelled
    assert main(["report", str(run), "--quiet", "--json", str(tmp_path / "r.json")]) == 0
    data = json.loads((tmp_path / "r.json").read_text())
    rates = {r["criterion_id"]: r for r in data["judge_quality"]["corrected_rates"]}
    assert set(rates) == set(CRITERIA)
    c1 = rates["c1"]
    assert c1["raw_n"] == 120 and c1["low"] <= c1["corrected"] <= c1["high"]
    assert 0.5 < c1["sensitivity"] < 1 and 0.5 < c1["specificity"] < 1
