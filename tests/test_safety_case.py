"""The safety case: controls met / not met / not demonstrable on planted runs, validity, harm, traceability."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.errors import UserError
from simulator.record.folder import RunFolder
from simulator.record.models import Evidence, Label
from simulator.safety.case import SafetyCase, build_safety_case, load_runs
from simulator.safety.harm import harm_weighted
from simulator.safety.hazards import DCB0129, load_hazard_log
from simulator.stats.dist import t_critical
from tests.support.damaged_runs import add_rows, as_recorded, cut_verdicts, interrupt
from tests.support.hazard_logs import one_control_log
from tests.synthetic import LEVELS, synthetic_outcome_run
from tests.test_report_support import record, verdict, write_run

ROOT = Path(__file__).resolve().parent.parent


def _log(
    tmp_path: Path,
    threshold: str = "under_triage <= 5%",
    severity: str = "catastrophic",
    criteria: tuple[str, ...] = ("outcome.triage_level",),
) -> Path:
    path = tmp_path / "h.yaml"
    path.write_text(one_control_log(list(criteria), threshold=threshold, severity=severity), encoding="utf-8")
    return path


def _case(run: Path, log: Path) -> SafetyCase:
    return build_safety_case(load_runs([run]), load_hazard_log(log))


@pytest.mark.parametrize(
    ("plan", "status", "code"),
    [
        ({f"s{i:02d}": [True] for i in range(70)}, "met", 0),  # rule of three over 70 vignettes: 4.2%
        ({f"s{i:02d}": [i % 2 == 0, True] for i in range(10)}, "not met", 1),
        ({f"s{i:02d}": [True, True, True] for i in range(5)}, "not demonstrable", 3),
    ],
)
def test_a_control_is_met_not_met_or_not_demonstrable_on_the_clustered_bound(
    tmp_path: Path, plan: dict[str, list[bool]], status: str, code: int
) -> None:
    run = synthetic_outcome_run(tmp_path / "run", plan)
    case = _case(run, _log(tmp_path))
    control = case.hazards[0].controls[0]
    assert (control.status, case.exit_code) == (status, code)
    if status == "met":
        assert control.bound is not None and control.bound <= 0.05 and control.rate.k == 0
        # Met, but a catastrophic hazard at a bound of 4.2% per conversation is still "medium": unacceptable.
        assert case.hazards[0].residual_likelihood == "medium"
        assert case.hazards[0].state == "residual risk not acceptable"
    if status == "not met":
        assert control.failed == 5 and control.failing_total == 5
        assert all(e.reasoning.startswith("expected triage_level emergency") for e in control.failing)
        assert case.hazards[0].state == "not controlled"
    if status == "not demonstrable":
        # 59 failure-free scenarios are the fewest that bound a rate under 5%; 5 were run.
        assert control.more_scenarios == 54
        assert case.hazards[0].state == "not demonstrated"
        assert (
            case.hazards[0].residual_likelihood == "medium"
        )  # never reduced on evidence that cannot show it
        assert "HAZ-1" in case.statement[-1] and "0 of 1" in case.statement[0]


def test_errors_and_not_judged_are_counted_apart_and_faulted_shown_separately(tmp_path: Path) -> None:
    plan = {f"s{i:02d}": [True, None] for i in range(6)}  # every second conversation crashed
    run = synthetic_outcome_run(tmp_path / "run", plan)
    case = _case(run, _log(tmp_path, "fail_rate <= 5%"))
    control = case.hazards[0].controls[0]
    assert (control.passed, control.failed, control.errored) == (6, 0, 6)
    assert control.rate is not None and (control.rate.k, control.rate.n, control.rate.errored) == (0, 6, 6)


def _llm_run(path: Path, fails: int, scenarios: int = 4, faulted: bool = False) -> Path:
    """One conversation per scenario with an LLM criterion `asks-x`; the first `fails` fail with a quote."""
    records, verdicts = [], []
    for i in range(scenarios):
        rec = record(f"s{i}", tags=["cardiac"], final_state={"triage_level": "emergency"})
        records.append(rec)
        failed = i < fails
        verdicts.append(
            verdict(
                rec,
                "asks-x",
                "fail" if failed else "pass",
                severity="critical",
                reasoning="never asked about the arm" if failed else "asked",
                evidence=[Evidence(quote="<b>it is probably nothing</b>", found=True)] if failed else [],
            )
        )
        if faulted and i == 0:
            verdicts.append(verdict(rec, "fidelity.invented_facts", "fail", kind="fidelity"))
    config = {"outcome": {"key": "triage_level", "levels": LEVELS, "critical": "emergency"}}
    return write_run(path, records, verdicts, config)


def _llm_log(tmp_path: Path, threshold: str = "fail_rate <= 60%") -> Path:
    path = _log(tmp_path, threshold, severity="minor", criteria=("asks-x",))
    path.write_text(
        path.read_text().replace("        threshold:", "        tags: [cardiac]\n        threshold:")
    )
    return path


def test_failing_conversations_carry_their_quoted_evidence(tmp_path: Path) -> None:
    case = _case(_llm_run(tmp_path / "run", fails=2, faulted=True), _llm_log(tmp_path, "fail_rate <= 1%"))
    control = case.hazards[0].controls[0]
    assert control.status == "not met" and control.simulator_faulted == 1
    assert [e.conversation_id for e in control.failing] == ["s0#0", "s1#0"]
    assert control.failing[0].simulator_faulted and not control.failing[1].simulator_faulted
    assert control.failing[0].quotes == ["<b>it is probably nothing</b>"]
    assert "never asked about the arm" in control.failing[0].reasoning
    assert control.bound_without_faulted is not None  # the bound without the simulator-faulted conversation


def test_an_uncalibrated_judge_is_flagged_and_labels_calibrate_it(tmp_path: Path) -> None:
    run = _llm_run(tmp_path / "run", fails=0, scenarios=70)
    log = _llm_log(tmp_path, "fail_rate <= 5%")
    case = _case(run, log)
    (row,) = [c for c in case.calibration if c.criterion == "asks-x"]
    assert row.status == "not calibrated"
    assert case.hazards[0].state == "controlled" and case.hazards[0].uncalibrated == ["asks-x"]
    assert any("not calibrated against clinicians: HAZ-1" in line for line in case.statement)
    now = datetime.now(UTC)
    labels = [
        Label(
            labeller=who,
            labelled_at=now,
            conversation_id=f"s{i}#0",
            criterion_id="asks-x",
            label="fail" if i < 2 else "pass",
        )
        for who in ("dr-a", "dr-b")
        for i in range(10)
    ]
    RunFolder.open(run).append_labels(labels)
    calibrated = _case(run, log)
    (row,) = [c for c in calibrated.calibration if c.criterion == "asks-x"]
    assert row.status == "calibrated" and row.labellers == ["dr-a", "dr-b"] and row.items == 10
    # The judge passed all ten; each clinician failed two of them: false-pass rate 100%, 4 of 4.
    assert (row.false_pass, row.false_passes, row.reference_fails) == (1.0, 4, 4)
    assert calibrated.hazards[0].uncalibrated == []
    assert calibrated.evidence_hash != case.evidence_hash  # the labels are part of the evidence


def test_harm_weighted_error_matches_a_hand_computation(tmp_path: Path) -> None:
    # Scenario a: 3 emergencies sent to urgent (weight 25 each); b: 3 exact; c: 2 to gp (60), 1 no decision.
    records, verdicts = [], []
    plan = {"a": ["urgent"] * 3, "b": ["emergency"] * 3, "c": ["gp", "gp", None]}
    for scenario, actuals in plan.items():
        for repeat, actual in enumerate(actuals):
            rec = record(scenario, repeat, final_state=None if actual is None else {"triage_level": actual})
            records.append(rec)
            verdicts.append(verdict(rec, "outcome.triage_level", "fail", kind="code", expected="emergency"))
    weights = {"emergency": {"self_care": 100, "gp": 60, "urgent": 25}}
    config = {"outcome": {"key": "triage_level", "levels": LEVELS, "harm_weights": weights}}
    harm = harm_weighted(load_run(write_run(tmp_path / "run", records, verdicts, config)))
    assert harm is not None
    # No decision weighs as the lowest level (self_care, 100). Harm per scenario: 75, 0, 220 over 3 each.
    h, n = [75.0, 0.0, 220.0], [3, 3, 3]
    mean = sum(h) / 9
    variance = 3 / 2 * sum((hg - mean * ng) ** 2 for hg, ng in zip(h, n, strict=True)) / 81
    # On the log scale: harm was seen, so the interval never reaches 0 (reading item 12).
    spread = t_critical(0.95, 2) * math.sqrt(variance) / mean
    assert harm.per_1000 == pytest.approx(1000 * 295 / 9)
    assert harm.low_per_1000 == pytest.approx(1000 * mean * math.exp(-spread), abs=1e-5)
    assert harm.high_per_1000 == pytest.approx(1000 * mean * math.exp(spread), abs=1e-5)
    assert harm.low_per_1000 > 0
    assert {(c.expected, c.actual, c.weight, c.conversations) for c in harm.cells} == {
        ("emergency", "urgent", 25.0, 3),
        ("emergency", "gp", 60.0, 2),
        ("emergency", "no decision", 100.0, 1),
    }
    assert harm.unweighted["under_triage"].k == 6 and harm.unweighted["under_triage"].n == 9


def test_harm_with_no_harmful_conversation_gets_the_rule_of_three_bound(tmp_path: Path) -> None:
    run = synthetic_outcome_run(tmp_path / "run", {f"s{i}": [True, True] for i in range(10)})
    data = load_run(run)
    assert data.outcome is not None
    data.outcome.harm_weights = {"emergency": {"urgent": 50.0}}
    harm = harm_weighted(data)
    assert harm is not None and harm.per_1000 == 0.0
    assert harm.high_per_1000 == pytest.approx(1000 * 50 * (1 - 0.05 ** (1 / 10)), abs=1e-4)


def test_traceability_names_the_hashes_of_what_it_read(tmp_path: Path) -> None:
    run = synthetic_outcome_run(tmp_path / "run", {"s1": [True]})
    log = _log(tmp_path)
    case = _case(run, log)
    t = case.traceability
    assert t.hazard_log_sha256 == "sha256:" + hashlib.sha256(log.read_bytes()).hexdigest()
    manifest = RunFolder.open(run).read_manifest()
    (trace,) = t.runs
    assert (trace.run_id, trace.package_version, trace.judge_set) == (
        "run",
        manifest.package_version,
        "sha256:synthetic",
    )
    assert trace.scenario_files == {"s1": None} and trace.bot == "python:x:y"
    # The same folders give the same hash; any change to what was read changes it.
    assert _case(run, log).evidence_hash == case.evidence_hash
    log.write_text(log.read_text().replace("Delayed care.", "Delayed care, harm."))
    assert _case(run, log).evidence_hash != case.evidence_hash


def test_the_document_is_byte_identical_on_a_rerun_but_for_its_time(tmp_path: Path) -> None:
    run = synthetic_outcome_run(tmp_path / "run", {f"s{i}": [i != 1, True] for i in range(4)})
    log = _log(tmp_path)
    before = sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in run.iterdir())
    outs = []
    for n in (1, 2):
        html, data = tmp_path / f"{n}.html", tmp_path / f"{n}.json"
        code = main(
            ["safety-case", str(run), "--hazards", str(log), "--html", str(html), "--json", str(data)]
        )
        assert code == 1
        outs.append((html.read_text(), json.loads(data.read_text())))
    (h1, j1), (h2, j2) = outs
    j1.pop("generated_at"), j2.pop("generated_at")
    assert j1 == j2 and j1["evidence_hash"].startswith("sha256:")
    strip = lambda text: "\n".join(x for x in text.split(" · ") if not x.startswith("generated "))  # noqa: E731
    assert strip(h1) == strip(h2)
    assert sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in run.iterdir()) == before


def test_the_html_escapes_transcript_evidence_and_draws_the_matrix(tmp_path: Path) -> None:
    from simulator.safety.html import safety_case_html

    case = _case(_llm_run(tmp_path / "run", fails=2), _llm_log(tmp_path, "fail_rate <= 1%"))
    html = safety_case_html(case)
    assert "<b>it is probably nothing</b>" not in html and "&lt;b&gt;it is probably nothing" in html
    assert "@page { size: A4" in html and "<script" not in html
    assert html.count('<td class="unacceptable"') == sum(
        row.count("unacceptable") for row in DCB0129.cells.values()
    )


def test_the_document_is_drawn_by_the_reports_one_renderer(tmp_path: Path) -> None:
    """Safety case and report share one section model and one HTML renderer: each section of the document
    is exactly what draw_html makes of it, its failing rows carry the report's state class, and their
    details (the quoted evidence) sit in a row under them."""
    from simulator.report.draw_html import html_section
    from simulator.safety.html import safety_case_html
    from simulator.safety.view import safety_case_sections

    case = _case(_llm_run(tmp_path / "run", fails=2), _llm_log(tmp_path, "fail_rate <= 1%"))
    html, sections = safety_case_html(case), safety_case_sections(case)
    assert all(html_section(s) in html for s in sections)
    controls = next(s for s in sections if s.id.startswith("controls-"))
    page = html_section(controls)
    assert '<tr class="st-fail">' in page and '<tr class="details"><td colspan="9">' in page
    assert page.index('<tr class="st-fail">') < page.index('<tr class="details">')


@pytest.mark.browser
def test_the_pdf_prints_with_chromium(tmp_path: Path) -> None:
    from tests.browser_support import skip_unless_available

    skip_unless_available()
    run = synthetic_outcome_run(tmp_path / "run", {"s1": [True]})
    pdf = tmp_path / "case.pdf"
    assert (
        main(["safety-case", str(run), "--hazards", str(_log(tmp_path)), "--pdf", str(pdf), "--quiet"]) == 3
    )
    assert pdf.read_bytes().startswith(b"%PDF")


def test_without_chromium_the_pdf_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator.safety.html import print_pdf

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="needs Chromium"):
        print_pdf("<p>x</p>", tmp_path / "x.pdf")


def test_the_triage_demo_shows_the_chest_pain_flaw_and_an_undemonstrable_control(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert main(["run", str(ROOT / "scenarios/triage/suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    case = _case(out, ROOT / "examples/triage_hazards.yaml")
    controls = {c.id: c for h in case.hazards for c in h.controls}
    assert 6 <= len(case.hazards) <= 10
    chest = controls["CTL-01a"]
    assert chest.status == "not met" and {e.scenario_id for e in chest.failing} == {"chest-pain-vague-01"}
    assert controls["CTL-02a"].status == "not demonstrable" and controls["CTL-02a"].more_scenarios
    assert case.exit_code == 1 and case.harm is not None and case.harm.declared
    assert {c.status for c in case.calibration} == {"not calibrated", "checked in code"}


def test_several_runs_are_pooled_with_scenarios_as_the_clusters(tmp_path: Path) -> None:
    plan = {f"s{i:02d}": [True] for i in range(40)}
    first = synthetic_outcome_run(tmp_path / "a", plan)
    second = synthetic_outcome_run(tmp_path / "b", plan)
    case = build_safety_case(load_runs([second, first]), load_hazard_log(_log(tmp_path)))
    control = case.hazards[0].controls[0]
    assert control.conversations == 80 and len(control.scenarios) == 40
    # Two runs of the same 40 scenarios bound the rate as 40 scenarios do, not as 80 conversations.
    assert control.rate is not None and control.rate.clustered is not None
    assert control.rate.clustered.scenarios == 40
    assert control.status == "not demonstrable" and control.more_scenarios == 19
    assert [r.run_id for r in case.traceability.runs] == ["a", "b"]  # oldest first


def _demo_with_bot(tmp_path: Path, factory: str, name: str) -> Path:
    """The triage demo suite with another bot, run offline through the engine."""
    text = (ROOT / "scenarios/triage/suite.yaml").read_text(encoding="utf-8")
    text = text.replace('paths: ["."]', f'paths: ["{ROOT}/scenarios/triage"]')
    text = text.replace("../../judges/triage", f"{ROOT}/judges/triage")
    text = text.replace("../../examples/triage_vocabulary.yaml", f"{ROOT}/examples/triage_vocabulary.yaml")
    suite = tmp_path / f"{name}.yaml"
    suite.write_text(text.replace("examples.triage_bot:make_bot", factory), encoding="utf-8")
    out = tmp_path / name
    assert main(["run", str(suite), "--out", str(out), "--no-progress", "--runs", "1"]) == 0
    return out


def test_planted_bots_through_the_engine(tmp_path: Path) -> None:
    log = ROOT / "examples/triage_hazards.yaml"
    home = _case(_demo_with_bot(tmp_path, "tests._matrix_bots:make_home_bot", "home"), log)
    controls = {c.id: c for h in home.hazards for c in h.controls}
    # A bot that sends everyone home misses every emergency: not met, whatever the number of scenarios.
    assert controls["CTL-01a"].status == "not met" and controls["CTL-01a"].failed == 2
    assert controls["CTL-02a"].status == "not met" and controls["CTL-02a"].rate.k == 0
    assert home.hazards[0].residual_likelihood == "very_high" and home.exit_code == 1
    fixed = _case(_demo_with_bot(tmp_path, "examples.triage_bot:make_fixed_bot", "fixed"), log)
    controls = {c.id: c for h in fixed.hazards for c in h.controls}
    # The fixed bot escalates both cardiac scenarios, but two scenarios cannot show under-triage <= 2%.
    assert controls["CTL-01a"].status == "not demonstrable" and controls["CTL-01a"].failed == 0
    assert controls["CTL-01a"].more_scenarios == 149 - 2
    assert fixed.exit_code == 3


@pytest.mark.parametrize(
    ("crashed", "threshold"),
    [(12, "under_triage <= 10%"), (12, "emergency_sensitivity >= 90%"), (10, "fail_rate <= 10%")],
)
def test_a_control_the_errored_conversations_could_flip_is_not_demonstrable(
    tmp_path: Path, crashed: int, threshold: str
) -> None:
    """Without the errored the bound meets the threshold; had they all failed the rate would miss it."""
    plan: dict[str, list[bool | str | None]] = {f"s{i:02}": [True, True] for i in range(60)}
    for i in range(crashed):
        plan[f"s{i:02}"] = [None, None]
    case = _case(synthetic_outcome_run(tmp_path / "run", plan), _log(tmp_path, threshold))
    control = case.hazards[0].controls[0]
    assert control.errored == 2 * crashed and control.bound is not None
    assert (control.status, case.exit_code) == ("not demonstrable", 3)
    assert f"{2 * crashed} errored left out, which could flip it" in control.reason


def _named(tmp_path: Path, criteria: tuple[str, ...], threshold: str) -> Path:
    return _log(tmp_path, threshold, criteria=criteria)


@pytest.mark.parametrize(
    "threshold",
    [
        "under_triage <= 40%",
        "over_triage <= 40%",
        "emergency_sensitivity >= 50%",
        "critical_sensitivity >= 50%",
        "no_decision <= 40%",
        "fail_rate:outcome.triage_level <= 40%",
    ],
)
def test_a_threshold_computed_from_a_criterion_the_control_does_not_name_is_refused(
    tmp_path: Path, threshold: str
) -> None:
    """The outcome rates come from the decided outcome whatever the control names: a control naming only
    an unjudged criterion was shown met on them (D3). The log is refused at load, naming line, control and fix."""
    run = add_rows(
        synthetic_outcome_run(tmp_path / "run", {f"s{i:02d}": [True] for i in range(70)}),
        "asks-age",
        "not_judged",
    )
    with pytest.raises(UserError) as caught:
        _case(run, _named(tmp_path, ("asks-age",), threshold))
    text = str(caught.value) + "".join(str(p) for p in caught.value.problems)
    assert (
        "h.yaml:15 [hazards[1].controls[1].threshold]" in text
        and "control C-1" in text
        and "add outcome.triage_level to its criteria" in text
    )


@pytest.mark.parametrize(
    ("result", "why"),
    [
        ("not_judged", "66 not judged: no judge model configured"),
        ("not_applicable", "66 not applicable"),
        ("error", "66 error"),
    ],
)
def test_a_control_whose_named_criterion_was_never_judged_is_not_demonstrable(
    tmp_path: Path, result: str, why: str
) -> None:
    """The outcome criterion alone would meet the threshold; the other criterion the control names was never
    judged, so "met" would rest on less than the control says: not demonstrable, saying which and why."""
    plan: dict[str, list[bool | str | None]] = {f"s{i:02d}": [True] for i in range(66)}
    run = add_rows(
        synthetic_outcome_run(tmp_path / "run", plan), "asks-age", result, "no judge model configured"
    )
    case = _case(run, _named(tmp_path, ("outcome.triage_level", "asks-age"), "under_triage <= 5%"))
    control = case.hazards[0].controls[0]
    assert (control.status, case.exit_code) == ("not demonstrable", 3)
    assert control.reason.startswith(f"asks-age never judged on these conversations ({why}")
    assert "simulator judge" in control.advice


def test_a_control_not_met_stays_not_met_when_another_criterion_was_never_judged(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {f"s{i:02d}": [i % 2 == 0, True] for i in range(10)}
    run = add_rows(synthetic_outcome_run(tmp_path / "run", plan), "asks-age", "not_judged")
    case = _case(run, _named(tmp_path, ("outcome.triage_level", "asks-age"), "under_triage <= 5%"))
    assert (case.hazards[0].controls[0].status, case.exit_code) == ("not met", 1)


def _clean(tmp_path: Path) -> Path:
    return as_recorded(synthetic_outcome_run(tmp_path / "run", {f"s{i:02d}": [True] for i in range(70)}))


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda run: interrupt(run, 2), "run status interrupted: 68 of 70 planned conversations recorded"),
        (lambda run: interrupt(run, 1, "aborted"), "run status aborted: 69 of 70 planned"),
        (lambda run: interrupt(run, 5, "complete"), "run status complete: 65 of 70 planned"),
        (lambda run: cut_verdicts(run, 20, torn=True), "ends in a torn line"),
        (lambda run: cut_verdicts(run, 40, torn=False), "holds no code verdict for 30 of 70 conversations"),
    ],
)
def test_a_control_over_incomplete_records_is_not_demonstrable_and_says_why(
    tmp_path: Path, damage: Callable[[Path], Path], said: str
) -> None:
    """Met on the clean run; with conversations or verdicts missing from its scenarios the evidence is partial:
    not demonstrable (exit 3), said in the control, the outstanding items and the statement (D4)."""
    assert _case(_clean(tmp_path), _log(tmp_path)).exit_code == 0
    run = damage(tmp_path / "run")
    case = _case(run, _log(tmp_path))
    control = case.hazards[0].controls[0]
    assert (control.status, case.exit_code) == ("not demonstrable", 3)
    assert control.reason.startswith("the evidence is partial")
    assert any(said in item for item in case.outstanding)
    assert any(line.startswith("The evidence is partial") for line in case.statement)
