"""An exact expected level where production has no scenario (docs/outcome-sources.md): the one a trace
carries on a span attribute (`simulator import --expected-attribute`, as `simulator collect` reads it), and
the one a clinician labels (`simulator labels import` with an `expected_level` column). Each outranks the
patient's red-flag floor and gives under- AND over-triage; tested on planted truth."""

from __future__ import annotations

import csv
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
    # Cases against an exact level (a floor's cases are marked by the patient's quote, and kept apart).
    cases = {c.conversation_id.split("#")[0]: c.kind for c in metrics.cases if not c.red_flag_quote}
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


def test_an_expected_value_that_is_not_a_level_is_left_out_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = {"conv-d": "routine", "conv-f": "Same day", "conv-c": " GP "}  # conv-c: a level, spelt otherwise
    source = otel_file(tmp_path / "traces.json", values=odd)
    out = tmp_path / "real"
    args = ["import", str(source), "--out", str(out), "--suite", SUITE]
    assert main([*args, "--expected-attribute", "triage.expected_level"]) == 0
    err = capsys.readouterr().err
    assert "warning: 2 conversations carry an expected triage_level that is not an outcome level" in err
    assert "conv-d ('routine')" in err and "conv-f ('Same day')" in err
    assert main(["judge", str(out), "--suite", SUITE, "--outcome-source", "messages"]) == 0
    metrics = outcome_metrics(load_run(out))
    assert metrics is not None and metrics.without_expectation == 2  # counted as left out
    assert metrics.under_triage.n == len(PLANTED) - 2 and metrics.under_triage.k == len(UNDER) - 2


def test_expected_attribute_on_a_transcript_file_names_the_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = ROOT / "examples/traces/transcripts.jsonl"
    code = main(["import", str(source), "--out", str(tmp_path / "r"), "--expected-attribute", "x"])
    assert code == 2 and "mapping's `expected`" in capsys.readouterr().err


# --- Clinician-labelled levels -----------------------------------------------------------------------------

CRITERION = "outcome.triage_level"


def _sheet(run: Path, tmp_path: Path, fill: dict[str, tuple[str, str]]) -> Path:
    """Export the outcome criterion's sheet and fill it: {conversation key: (label, expected_level)}."""
    out = tmp_path / "sheet"
    assert main(["labels", "export", str(run), "--criterion", CRITERION, "--out", str(out)]) == 0
    with (out / "labels.csv").open(encoding="utf-8", newline="") as handle:
        cells = list(csv.reader(handle))
    assert {len(row) for row in cells} == {5}  # every row has every column
    with (out / "labels.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and list(rows[0]) == ["conversation_id", "criterion_id", "label", "expected_level", "notes"]
    for row in rows:
        row["label"], row["expected_level"] = fill.get(row["conversation_id"].split("#")[0], ("", ""))
    with (out / "labels.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out / "labels.csv"


def _planted_fill() -> dict[str, tuple[str, str]]:
    """The clinician's answers: the level each conversation needed, and whether the bot gave it."""
    return {c: ("pass" if e == a else "fail", e) for c, _, e, a in PLANTED}


def test_clinician_labelled_levels_give_imported_conversations_exact_under_and_over_triage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _import(tmp_path, attribute=None)  # no expected level in the trace: only the red-flag floor
    before = outcome_metrics(load_run(run))
    assert before is not None and before.over_triage.n == 0
    sheet = _sheet(run, tmp_path, _planted_fill())
    assert main(["labels", "import", str(run), str(sheet), "--labeller", "Dr Ada"]) == 0
    under, over, n, _ = _triage(run)
    assert (under, over, n) == (UNDER, OVER, len(PLANTED))
    metrics = outcome_metrics(load_run(run))
    assert metrics is not None and metrics.clinician_labelled == len(PLANTED)
    assert (metrics.under_triage.k, metrics.over_triage.k) == (len(UNDER), len(OVER))
    assert metrics.red_flag_under_triage is None  # conv-b's floor (chest pain) is outranked by the label
    capsys.readouterr()
    assert main(["report", str(run)]) == 0
    assert "clinician-labelled" in capsys.readouterr().out
    # Re-judging reads the labelled level too: the outcome verdicts compare against it, same figures.
    assert main(["judge", str(run), "--outcome-source", "messages"]) == 0
    again = load_run(run)
    verdicts = {v.conversation_id.split("#")[0]: v for v in again.verdicts if v.criterion_id == CRITERION}
    assert {c: (v.expected, v.result) for c, v in verdicts.items()} == {
        c: (e, "pass" if e == a else "fail") for c, _, e, a in PLANTED
    }
    assert _triage(run)[:3] == (UNDER, OVER, len(PLANTED))


def test_a_clinician_s_level_outranks_the_trace_s(tmp_path: Path) -> None:
    run = _import(tmp_path, "--expected-attribute", "triage.expected_level")
    # The clinician says conv-a (a cold, told to self-care) needed a GP: now under-triage; the rest agree.
    fill = {c: ("pass" if e == a else "fail", e) for c, _, e, a in PLANTED}
    fill["conv-a"] = ("fail", "gp")
    assert main(["labels", "import", str(run), str(_sheet(run, tmp_path, fill)), "--labeller", "Dr Bo"]) == 0
    assert _triage(run)[0] == UNDER | {"conv-a"}


def test_labellers_who_disagree_on_a_level_leave_it_out_and_are_warned(tmp_path: Path) -> None:
    run = _import(tmp_path, attribute=None)
    first = _sheet(run, tmp_path / "a", {"conv-d": ("fail", "emergency"), "conv-c": ("fail", "gp")})
    assert main(["labels", "import", str(run), str(first), "--labeller", "Dr Ada"]) == 0
    second = _sheet(run, tmp_path / "b", {"conv-d": ("fail", "urgent"), "conv-c": ("fail", "gp")})
    assert main(["labels", "import", str(run), str(second), "--labeller", "Dr Bo"]) == 0
    loaded = load_run(run)
    assert set(loaded.labelled_levels) == {"conv-c#0"}
    assert any("conv-d#0 (emergency / urgent)" in w for w in loaded.warnings)
    under, over, n, _ = _triage(run)
    assert (under, over, n) == (set(), {"conv-c"}, 1)
    metrics = outcome_metrics(loaded)
    floor = metrics.red_flag_under_triage if metrics is not None else None
    assert floor is not None and (floor.k, floor.n) == (1, 1)  # conv-b, unlabelled, is held to its floor


@pytest.mark.parametrize(
    ("fill", "words"),
    [
        (
            {"conv-a": ("pass", "emergncy")},
            "'emergncy' is not an outcome level; write one of self_care, gp, urgent, emergency",
        ),
        ({"conv-a": ("", "gp")}, "expected_level 'gp' without a label"),
    ],
)
def test_a_bad_expected_level_is_one_line_naming_file_row_and_column(
    fill: dict[str, tuple[str, str]], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _import(tmp_path, attribute=None)
    sheet = _sheet(run, tmp_path, fill)
    capsys.readouterr()
    assert main(["labels", "import", str(run), str(sheet), "--labeller", "Dr Ada"]) == 2
    err = capsys.readouterr().err
    row = next(i for i, line in enumerate(sheet.read_text().splitlines(), 1) if "conv-a" in line)
    assert f"{sheet}:{row}" in err and "expected_level" in err and words in err and "Traceback" not in err
    assert not (run / "labels.jsonl").exists()


def test_a_level_on_another_criterion_or_a_simulated_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _import(tmp_path, attribute=None)
    sheet = tmp_path / "other.csv"
    sheet.write_text("conversation_id,criterion_id,label,expected_level\nconv-a#0,safety,pass,gp\n")
    assert main(["labels", "import", str(run), str(sheet), "--labeller", "Dr Ada"]) == 2
    assert f"{sheet}:2 [expected_level]: a level is given on criterion 'safety'" in capsys.readouterr().err
    simulated = tmp_path / "sim"
    assert main(["run", SUITE, "--out", str(simulated), "--runs", "1", "--tags", "injury"]) == 0
    record = next(iter(load_run(simulated).conversations)).id
    sheet.write_text(f"conversation_id,criterion_id,label,expected_level\n{record},{CRITERION},pass,gp\n")
    capsys.readouterr()
    assert main(["labels", "import", str(simulated), str(sheet), "--labeller", "Dr Ada"]) == 2
    assert "is a simulated run" in capsys.readouterr().err


async def test_clinician_labelled_levels_give_live_over_triage_in_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Collected conversations carry no expected level; once a clinician labels them, `simulator drift`
    (and the collector's alerts, which read the same observations) measure under- and over-triage exactly."""
    from simulator.collect.build import build_collector
    from simulator.collect.folders import collected_folders
    from simulator.collect.service import CollectOptions
    from tests._planted_levels import ADVICE
    from tests.collect_helpers import text

    suite = tmp_path / "suite.yaml"
    suite.write_text(LIVE_SUITE.format(vocabulary=ROOT / "examples/triage_vocabulary.yaml"))
    collector = build_collector(CollectOptions(out=tmp_path / "live", idle_s=60, fsync=False), suite=suite)
    collector.start()
    assert collector.judge is not None
    collector.judge.start()
    for number, (key, said, _, advised) in enumerate(PLANTED):
        collector.accept(_export(number, key, [text("user", said)], [text("assistant", ADVICE[advised])]))
    collector.tick(everything=True)
    await collector.judge.drain()
    await collector.judge.stop()
    collector.stop()
    [folder] = collected_folders(tmp_path / "live")
    drift = ["drift", str(tmp_path / "live"), "--period", "100", "--metric", "over_triage"]
    capsys.readouterr()
    assert main(drift) == 2  # no expected level yet: over-triage is not measurable
    from simulator.collect.trends import FollowedFolders, rate_of

    followed = FollowedFolders()  # the collector's alerts read the folders incrementally, tick by tick
    assert rate_of(followed.observations(folder), "over_triage").n == 0
    sheet = _sheet(folder, tmp_path, _planted_fill())
    assert main(["labels", "import", str(folder), str(sheet), "--labeller", "Dr Ada"]) == 0
    over = rate_of(followed.observations(folder), "over_triage")  # labels.jsonl changed: read again
    assert (over.k, over.n) == (len(OVER), len(PLANTED))
    capsys.readouterr()
    assert main([*drift, "--metric", "under_triage"]) == 0
    shown = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[-2] for line in shown.splitlines() if "_triage " in line}
    assert rows == {
        "over_triage": f"{len(OVER)}/{len(PLANTED)}",
        "under_triage": f"{len(UNDER)}/{len(PLANTED)}",
    }
    assert "an exact expected level (clinician-labelled or from the trace)" in shown


LIVE_SUITE = """
name: live-labelled
bot: {{type: python, factory: 'examples.triage_bot:make_bot'}}
user: {{model: offline, vocabulary: '{vocabulary}'}}
judges: {{paths: [], model: null}}
outcome:
  key: triage_level
  levels: [self_care, gp, urgent, emergency]
  source: messages
"""


def _export(
    number: int, key: str, inputs: list[dict[str, object]], outputs: list[dict[str, object]]
) -> dict[str, object]:
    """One conversation as an OTLP JSON export request (one chat span)."""
    import json

    def attr(name: str, value: str) -> dict[str, object]:
        return {"key": name, "value": {"stringValue": value}}

    start = 1_700_000_000_000_000_000 + number * 1000
    span = {
        "traceId": f"{number + 1:032x}",
        "spanId": f"{number + 1:016x}",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 500),
        "attributes": [
            attr("gen_ai.conversation.id", key),
            attr("gen_ai.input.messages", json.dumps(inputs)),
            attr("gen_ai.output.messages", json.dumps(outputs)),
        ],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
