"""An exact expected level where production has no scenario (docs/outcome-sources.md): the one a trace
carries on a span attribute (`simulator import --expected-attribute`, as `simulator collect` reads it), and
the one a clinician labels (`simulator labels import` with an `expected_level` column). Each outranks the
patient's red-flag floor and gives under- AND over-triage; tested on planted truth."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.analysis.outcome import outcome_metrics
from simulator.analysis.rundata import load_run
from simulator.cli import main
from tests._planted_levels import OVER, PLANTED, UNDER, otel_file

ROOT = Path(__file__).resolve().parent.parent
SUITE = str(ROOT / "scenarios/triage/suite.yaml")


def _import(tmp_path: Path, *extra: str, attribute: str | None = "triage.expected_level") -> Path:
    source = otel_file(tmp_path / "traces.json", attribute)
    out = tmp_path / "real"
    assert main(["import", str(source), "--out", str(out), "--suite", SUITE, *extra]) == 0
    assert main(["judge", str(out), "--suite", SUITE, "--outcome-source", "messages"]) == 0
    return out


def _triage(out: Path) -> tuple[set[str], set[str], int, int]:
    metrics = outcome_metrics(load_run(out))
    assert metrics is not None
    cases = {c.conversation_id.split("#")[0]: c.kind for c in metrics.cases}
    assert metrics.under_triage.n == metrics.over_triage.n
    return (
        {c for c, kind in cases.items() if kind == "under"},
        {c for c, kind in cases.items() if kind == "over"},
        metrics.under_triage.n,
        metrics.red_flag_left_out,
    )


def test_an_otel_span_attribute_gives_imported_traces_exact_under_and_over_triage(tmp_path: Path) -> None:
    out = _import(tmp_path, "--expected-attribute", "triage.expected_level")
    under, over, n, _ = _triage(out)
    assert (under, over, n) == (UNDER, OVER, len(PLANTED))
    metrics = outcome_metrics(load_run(out))
    assert metrics is not None and metrics.red_flag_under_triage is None  # conv-b's chest pain: outranked
    assert (metrics.under_triage.k, metrics.over_triage.k) == (len(UNDER), len(OVER))


def test_the_import_mapping_names_the_attribute_as_well(tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("expected: {triage_level: app.nurse_level}\n", encoding="utf-8")
    out = _import(tmp_path, "--mapping", str(mapping), attribute="app.nurse_level")
    assert _triage(out)[:3] == (UNDER, OVER, len(PLANTED))


def test_without_the_attribute_only_the_red_flag_floor_is_left(tmp_path: Path) -> None:
    out = _import(tmp_path, attribute=None)
    metrics = outcome_metrics(load_run(out))
    assert metrics is not None and metrics.over_triage.n == 0 and metrics.under_triage.n == 0
    floor = metrics.red_flag_under_triage
    # conv-b (chest pain, told to book a GP) is under-triage against the floor: the exact level said gp.
    assert floor is not None and (floor.k, floor.n) == (1, 1)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--expected-attribute", "triage.expected_level"], "needs --suite"),
        (["--expected-attribute", "triage.level_typo", "--suite", SUITE], "no span or resource"),
    ],
)
def test_a_wrong_expected_attribute_is_one_clear_error(
    extra: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = otel_file(tmp_path / "traces.json")
    assert main(["import", str(source), "--out", str(tmp_path / "real"), *extra]) == 2
    err = capsys.readouterr().err
    assert words in err and "--expected-attribute" in err and "Traceback" not in err
    assert not (tmp_path / "real").exists()


def test_expected_attribute_on_a_transcript_file_names_the_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = ROOT / "examples/traces/transcripts.jsonl"
    code = main(["import", str(source), "--out", str(tmp_path / "r"), "--expected-attribute", "x"])
    assert code == 2 and "mapping's `expected`" in capsys.readouterr().err
