"""The report renderers (terminal, JSON with its schema, JUnit, HTML escaping) and the `report` command."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.record.models import Evidence
from simulator.report.html import render_html
from simulator.report.html_parts import highlight
from simulator.report.json_report import report_json, report_schema
from simulator.report.junit import render_junit
from simulator.report.model import (
    REPORT_SCHEMA_VERSION,
    Report,
    ReportOptions,
    build_report,
    full_report_model,
)
from simulator.report.terminal import render_terminal
from tests.test_report_support import SCRIPT, make_judged_run, record, verdict, write_run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_judged_run(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def report(run_path: Path) -> Report:
    return build_report(load_run(run_path), ReportOptions(target=0.05))


def _terminal(report: Report) -> str:
    console = Console(width=300, record=True, color_system=None)
    render_terminal(report, console)
    return console.export_text()


def test_findings_list_high_stakes_failures_as_bugs(report: Report) -> None:
    bugs = [f.title for f in report.findings if f.level == "bug"]
    assert bugs[:2] == [
        "chest-pain failed 1 of 3 runs (high-stakes)",
        "thunderclap-headache failed 3 of 3 runs (high-stakes)",
    ]
    assert "4 of 6 emergency conversations were not escalated" in bugs
    # Severity drives findings: the critical criterion that failed is a bug on any scenario.
    assert "critical criterion asks-danger-signs failed in 4 of 18 conversations (2 of 6 vignettes)" in bugs
    titles = [f.title for f in report.findings]
    assert "flaky (mixed outcomes): 3 vignettes" in titles
    assert any(t.startswith("unverified evidence: 3/56") for t in titles)
    assert (report.overall.k, report.overall.n) == (4, 17)


def test_every_rate_in_the_terminal_report_comes_with_counts_and_an_interval(report: Report) -> None:
    text = _terminal(report)
    assert "under-triage" in text
    assert (
        "6/18 = 33.3% (95% CI 7.9%–74.3% over 6 vignettes, vignette-clustered; per conversation 16.3%–56.3%)"
        in text
    )
    assert "needs 59 failure-free runs for ≤5.0% (42 more)" not in text or "tone" in text
    percent = re.compile(r"\d+\.\d%")
    pass_hat_rows = re.compile(r"^│ \d │")
    checked = 0
    averages = False  # worst-at-k and run-to-run spread: averages of rates shown above with their counts
    for line in text.splitlines():
        if line.startswith(("worst-at-k:", "Run-to-run spread:")):
            averages = True
        elif line and line[0].isalpha():
            averages = False
        if not percent.search(line) or pass_hat_rows.match(line) or averages:
            continue  # pass^k is an average over scenarios, shown with its scenario count and bootstrap CI
        if "prices as of" in line:
            continue
        checked += 1
        assert re.search(r"\d+/\d+", line), line
        assert re.search(r"\d+\.\d%\s?–\s?\d+\.\d%|n/a|[≤≥]\d+\.\d%", line), line  # an interval, or one bound
    assert checked > 30


def test_terminal_report_shows_each_section(report: Report) -> None:
    text = _terminal(report)
    for title in (
        "Outcome 'triage_level': expected (rows) × actual (columns)",
        "Errors of omission",
        "Scenarios: a conversation passes when no verdict failed",
        "Tag groups",
        "pass^k",
        "Run health",
        "Tokens and cost",
        "Latency",
        "Failure rates by role",
    ):
        assert title in text
    assert "BUG FLAKY" in text and "bot_exception" in text


def test_json_report_validates_against_its_model_and_the_checked_in_schema(report: Report) -> None:
    data = report_json(report)
    assert data["schema_version"] == 2 and data["kind"] == "simulator.report"
    assert data["transcripts"] == []
    assert data["outcome"]["under_triage"]["k"] == 6 and data["criteria"][0]["counts"]["total"] == 21
    assert data["outcome"]["under_triage_decided"]["k"] == 4
    # Schema 2: every pooled rate carries its vignette-clustered interval and its errored-case bounds.
    clustered = data["outcome"]["critical_sensitivity"]["clustered"]
    assert clustered["scenarios"] == 2 and clustered["low"] <= 2 / 6 <= clustered["high"]
    assert data["overall"]["errored"] == 4 and data["missing"]["errored"] == 3  # + a judge error
    assert data["spread"][0]["metric"] == "pass rate (conversations)"
    data.pop("transcripts")
    data["criteria"] = [
        {**c, "counts": {k: v for k, v in c["counts"].items() if k != "total"}} for c in data["criteria"]
    ]
    restored = full_report_model().model_validate({**data, "omissions": [], "scenarios": [], "tags": []})
    assert restored.outcome == report.outcome
    with_transcripts = report_json(report, transcripts=True)
    assert len(with_transcripts["transcripts"]) == 21
    checked_in = json.loads((ROOT / "docs" / "report-schema.json").read_text(encoding="utf-8"))
    assert checked_in == report_schema(), (
        "regenerate docs/report-schema.json with `simulator report --json-schema`"
    )
    assert set(report_schema()["required"]) >= {
        "schema_version",
        "run",
        "outcome",
        "criteria",
        "health",
        "cost",
        "missing",
        "spread",
    }
    rate_fields = report_schema()["$defs"]["RateView"]["properties"]
    assert {"clustered", "errored", "worst", "best"} <= set(rate_fields)
    assert report_schema()["properties"]["schema_version"]["default"] == REPORT_SCHEMA_VERSION == 2


def test_junit_has_one_case_per_scenario_and_criterion(report: Report) -> None:
    root = ET.fromstring(render_junit(report))
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    assert len(cases) == int(root.get("tests", "0")) == 26
    failure = cases[("chest-pain", "outcome.triage_level")].find("failure")
    assert failure is not None and failure.get("message") == "failed 1 of 3 runs"
    assert cases[("bot-crash", "outcome.triage_level")].find("error") is not None
    assert cases[("ankle-sprain", "asks-pregnancy")].find("skipped") is not None
    assert cases[("ankle-sprain", "tone")].find("error") is not None  # a judge error is never a pass
    assert cases[("rash-script", "tone")].find("failure") is None
    out = cases[("rash-script", "asks-pregnancy")].findtext("system-out") or ""
    assert SCRIPT in out and "(NOT FOUND)" in out
    assert (root.get("failures"), root.get("errors"), root.get("skipped")) == ("8", "3", "5")


def test_junit_drops_characters_xml_cannot_hold(tmp_path: Path) -> None:
    rec = record("s\x01", turns=[])
    write_run(tmp_path / "r", [rec], [verdict(rec, "c\x02", "fail", reasoning="bad \x0b byte")])
    text = render_junit(build_report(load_run(tmp_path / "r")))
    case = ET.fromstring(text).find(".//testcase")
    assert case is not None and case.get("classname") == "s" and case.get("name") == "c"


def test_html_escapes_every_transcript_string(report: Report) -> None:
    page = render_html(report)
    assert page.count("<script") == 1  # the report's own script, nothing from a transcript
    assert "window.__pwned = 1</script>" not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=" in page
    assert re.search(r"(src|href|action)=\"?(https?:)?//", page) is None  # nothing to fetch
    for section in (
        "summary",
        "outcome",
        "omissions",
        "criteria",
        "scenarios",
        "health",
        "cost",
        "transcripts",
    ):
        assert f'<section id="{section}">' in page


REORDERING = {
    "right-to-left override": "\u202e",
    "left-to-right override": "\u202d",
    "right-to-left embedding": "\u202b",
    "right-to-left isolate": "\u2067",
    "first-strong isolate": "\u2068",
    "right-to-left mark": "\u200f",
    "escape": "\x1b",
    "one-byte CSI": "\x9b",
}


@pytest.mark.parametrize("name", sorted(REORDERING))
def test_html_shows_text_reordering_and_control_characters_never_obeys_them(
    tmp_path: Path, name: str
) -> None:
    """A bot's `call 999` with an override before it reads `999 llac` in a browser that obeys it: in the
    report every such character is its visible escape, in messages, reasoning, quotes and final state."""
    char = REORDERING[name]
    hostile = f"please {char}call 999 now{char} ok"
    turns = [
        {"index": 0, "role": "user", "messages": [hostile], "started_at": "2026-01-01T00:00:00Z"},
        {"index": 1, "role": "bot", "messages": [f"bot: {hostile}"], "started_at": "2026-01-01T00:00:01Z"},
    ]
    rec = record("s", turns=turns, final_state={"triage_level": hostile})
    found = [verdict(rec, "c", "fail", reasoning=hostile, evidence=[Evidence(quote=hostile, found=True)])]
    write_run(tmp_path / "r", [rec], found)
    page = render_html(build_report(load_run(tmp_path / "r")))
    assert char not in page
    escape = f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    assert f"please {escape}call 999 now{escape} ok" in page


def test_highlight_marks_quoted_passages_and_escapes_them() -> None:
    text = "Call 999 <now> & do not wait. Call 999."
    marked = highlight(
        text, [("Call 999", "c1", "fail"), ("999 <now>", "c2", "pass"), ("absent", "c3", "pass")]
    )
    assert marked.count("<mark") == 2  # the overlapping quotes merge; both occurrences are marked
    assert 'data-criteria="c1|c2"' in marked
    assert "Call 999 &lt;now&gt;</mark> &amp; do not wait." in marked
    assert highlight("plain <b>", []) == "plain &lt;b&gt;"


def test_report_command_writes_every_format(
    run_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html, js, junit = tmp_path / "r.html", tmp_path / "s.json", tmp_path / "j.xml"
    code = main(
        [
            "report",
            str(run_path),
            "--html",
            str(html),
            "--json",
            str(js),
            "--junit",
            str(junit),
            "--target",
            "1%",
        ]
    )
    assert code == 0
    out = capsys.readouterr()
    assert "under-triage" in out.out and "wrote HTML" in out.err
    assert html.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert json.loads(js.read_text(encoding="utf-8"))["target"] == 0.01
    assert ET.parse(junit).getroot().tag == "testsuites"
    assert main(["report", str(run_path), "--quiet", "--json", str(js), "--json-transcripts"]) == 0
    assert capsys.readouterr().out == ""
    assert len(json.loads(js.read_text(encoding="utf-8"))["transcripts"]) == 21


def test_report_command_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert "is not a run folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path), "--target", "2"])
    assert main(["report", "--json-schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"].startswith("simulator report, schema version 2")


def test_a_run_without_verdicts_still_reports(tmp_path: Path) -> None:
    write_run(tmp_path / "r", [record("s1")], [])
    report = build_report(load_run(tmp_path / "r"))
    assert report.findings[0].title == "no verdicts: this run was not judged"
    assert report.scenarios[0].statuses["not_judged"] == 1
    assert "<section" in render_html(report) and render_junit(report).count("<testcase") == 0


def test_the_report_reads_expected_outcomes_from_the_manifest_not_the_files(tmp_path: Path) -> None:
    """Scenario files edited or deleted after a run do not change its report."""
    import asyncio

    from simulator.analysis.rundata import load_run as load_run_data
    from simulator.config.loading import load_scenarios
    from simulator.config.suite import load_suite
    from simulator.engine.runner import RunOptions, run_suite

    root = Path(__file__).resolve().parent.parent
    folder = tmp_path / "scenarios"
    folder.mkdir()
    for name in ("chest-pain-vague-01.yaml", "common-cold-19.yaml"):
        (folder / name).write_text((root / "scenarios" / "triage" / name).read_text())
    (folder / "suite.yaml").write_text((root / "scenarios" / "triage" / "suite.yaml").read_text())
    suite = load_suite(folder / "suite.yaml", {"runs": 1, "judges": {"paths": []}})
    suite.user.vocabulary = str(root / "examples" / "triage_vocabulary.yaml")
    out = tmp_path / "run"
    asyncio.run(run_suite(suite, load_scenarios([folder]), RunOptions(out=out, progress=False)))
    for path in folder.glob("*.yaml"):
        path.unlink()  # the files are gone; the manifest remembers what was expected
    run = load_run_data(out)
    assert run.expected["chest-pain-vague-01"] == {"triage_level": "emergency"}
    assert run.expected["common-cold-19"] == {"triage_level": "self_care"}


def test_every_renderer_carries_the_clustered_intervals_missing_data_and_flaky_sources(
    report: Report,
) -> None:
    """Terminal, HTML and JUnit show the vignette-clustered interval, the errored bounds and who varied."""
    text = _terminal(report)
    under = report.outcome.under_triage if report.outcome else None
    assert under is not None and under.clustered is not None
    clustered = f"{100 * under.clustered.low:.1f}%–{100 * under.clustered.high:.1f}%"
    assert "vignette-clustered 95% intervals" in text and clustered in text
    assert "under-triage, decided cases only" in text and "4/13 = 30.8%" in text
    assert "FLAKY-" in text and "Run-to-run spread" in text and "worst-at-k" in text
    assert "3 of 21 conversations errored" in text
    html = render_html(report)
    assert '<section id="stats">' in html and clustered in html and "FLAKY-" in html
    assert "under-triage incl. no decision" in html
    root = ET.fromstring(render_junit(report).split("\n", 1)[1])
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert clustered in props["clustered.under-triage_incl._no_decision"]
    assert props["missing.under-triage_incl._no_decision"].startswith("if the 3 errored had all failed")
    assert props["flaky.chest-pain"] and props["spread.pass_rate_conversations"].startswith("mean")
    assert props["worst_at_k.1"].endswith("vignettes")


@pytest.mark.parametrize("cap", [0, 3, 7])
def test_html_samples_passing_transcripts_and_says_what_it_left_out(
    tmp_path_factory: pytest.TempPathFactory, cap: int
) -> None:
    run = make_judged_run(tmp_path_factory.mktemp("sampled"), runs=4)
    data = load_run(run)
    full = build_report(data)
    sampled = build_report(data, ReportOptions(passing_transcripts=cap))
    passing = [t.id for t in full.transcripts if t.status == "pass"]
    kept = [t for t in sampled.transcripts if t.status == "pass"]
    # Every failing, errored and undecided conversation is in, unchanged.
    assert [t for t in full.transcripts if t.status != "pass"] == [
        t for t in sampled.transcripts if t.status != "pass"
    ]
    scenarios = {t.scenario_id for t in full.transcripts if t.status == "pass"}
    per = max(1, cap // len({t.scenario_id for t in full.transcripts}))
    assert {t.scenario_id for t in kept} == scenarios  # every scenario that passed shows a passing one
    assert all(sum(t.scenario_id == s for t in kept) <= per for s in scenarios)
    gone = sampled.transcripts_left_out
    assert gone is not None and gone.passing_left_out == len(passing) - len(kept) > 0
    assert gone.passing_shown == len(kept) and gone.per_scenario == per
    page = render_html(sampled)
    assert f"{gone.passing_left_out} passing conversations are not shown" in page
    assert f"simulator show {run} --scenario ID --repeat N" in page
    assert full.transcripts_left_out is None
    assert "passing conversations are not shown" not in render_html(full)


def test_report_command_samples_only_the_html(tmp_path: Path) -> None:
    run = make_judged_run(tmp_path / "cli", runs=4)
    html, junit = tmp_path / "r.html", tmp_path / "r.xml"
    assert main(["report", str(run), "--quiet", "--html", str(html), "--passing-transcripts", "1"]) == 0
    assert "passing conversations are not shown" in html.read_text(encoding="utf-8")
    assert main(["report", str(run), "--quiet", "--html", str(html), "--passing-transcripts", "all"]) == 0
    assert "passing conversations are not shown" not in html.read_text(encoding="utf-8")
    # JUnit carries every conversation: with it, nothing is sampled.
    assert main(["report", str(run), "--quiet", "--html", str(html), "--junit", str(junit)]) == 0
    assert "passing conversations are not shown" not in html.read_text(encoding="utf-8")
