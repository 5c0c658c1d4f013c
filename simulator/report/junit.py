"""JUnit XML for CI systems: one test case per (scenario, criterion), failing when any run failed."""

from __future__ import annotations

__all__ = ["render_junit", "write_junit"]

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from simulator.analysis.simulators import SimulatorsSection
from simulator.plural import plural
from simulator.record.selection import is_fidelity_check
from simulator.report.model import Report, Transcript, TranscriptVerdict, headline_rates
from simulator.stats.rates import pct

_KEY = re.compile(r"[^A-Za-z0-9_.:-]+")
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    """XML 1.0 cannot hold some control characters at all, escaped or not: drop them."""
    return _INVALID_XML.sub("", text)


def _case(
    scenario: str, criterion: str, runs: list[tuple[Transcript, TranscriptVerdict | None]]
) -> ET.Element:
    case = ET.Element("testcase", classname=_clean(scenario), name=_clean(criterion), time="0")
    # A conversation that errored is an error for every check on it, whatever its verdict line says.
    results = [
        "error" if t.stop_reason == "error" else (v.result if v is not None else "not_judged")
        for t, v in runs
    ]
    lines = []
    for (transcript, verdict), result in zip(runs, results, strict=True):
        line = f"{transcript.id}: {result}"
        if verdict is not None and verdict.reasoning:
            line += f" — {verdict.reasoning}"
        if verdict is not None:
            line += "".join(
                f'\n    evidence: "{ev.quote}"' + ("" if ev.found else " (NOT FOUND)")
                for ev in verdict.evidence
            )
        if transcript.error and result == "error":
            line += f"\n    {transcript.error}"
        lines.append(line)
    detail = _clean("\n".join(lines))
    fails, errors, n = results.count("fail"), results.count("error"), len(results)
    if fails:
        ET.SubElement(
            case, "failure", message=f"failed {fails} of {plural(n, 'run')}", type="fail"
        ).text = detail
    elif errors:
        ET.SubElement(
            case, "error", message=f"{errors} of {plural(n, 'run')} errored (never a pass)", type="error"
        ).text = detail
    elif "pass" not in results:
        ET.SubElement(
            case,
            "skipped",
            message=f"no pass or fail in {plural(n, 'run')} ({', '.join(sorted(set(results)))})",
        )
    ET.SubElement(case, "system-out").text = detail
    return case


def _stats_properties(report: Report) -> list[tuple[str, str]]:
    """Clustered intervals, errored-case bounds, flaky sources, worst-at-k and spread, as suite properties."""
    props = []
    for name, value in headline_rates(report):
        key = _KEY.sub("_", name).strip("_")
        props.append((f"clustered.{key}", value.text))
        if value.errored:
            props.append((f"missing.{key}", value.missing_short))
    props += [(f"missing.warning.{i}", w) for i, w in enumerate(report.missing.warnings, 1)]
    props += [(f"flaky.{row.id}", row.flaky_source.label) for row in report.scenarios if row.flaky_source]
    for row in report.pass_hat_k:
        props.append((f"pass_hat_k.{row.k}", f"{pct(row.value)} {row.over()}"))
        if row.worst_at_k is not None:
            props.append((f"worst_at_k.{row.k}", f"{pct(row.worst_at_k)} {row.over(worst=True)}"))
    for spread in report.spread:
        props.append(
            (
                f"spread.{_KEY.sub('_', spread.metric).strip('_')}",
                f"mean {pct(spread.mean)}, SD {pct(spread.sd)}, {pct(spread.low)}–{pct(spread.high)} "
                f"over {plural(spread.repeats, 'repeat')}",
            )
        )
    return props + _simulator_properties(report)


def _simulator_properties(report: Report) -> list[tuple[str, str]]:
    """Several simulated users: each one's key rates, each rate's range, and the failures attributed."""
    section: SimulatorsSection | None = report.analysis("simulators")
    if section is None:
        return []
    props = []
    for row in section.simulators:
        for metric, value in (
            ("failed", row.failed),
            ("under_triage", row.under_triage),
            ("critical_sensitivity", row.critical_sensitivity),
        ):
            if value is not None:
                props.append((f"simulator.{row.level}.{metric}", value.text))
    for m in section.ranges:
        key = _KEY.sub("_", m.metric).strip("_")
        props.append((f"simulators.range.{key}", f"{pct(m.low)} ({m.lowest}) – {pct(m.high)} ({m.highest})"))
    for s in section.scenarios:
        props.append(
            (f"simulators.failure.{s.scenario}", f"{s.attribution}: failed under {', '.join(s.failed_under)}")
        )
    for t in section.tests:
        props.append(
            (f"simulators.test.{t.a}_vs_{t.b}", f"clustered McNemar p {t.p:.3g}, Holm {t.p_holm:.3g}")
        )
    return props


def render_junit(report: Report) -> str:
    """The JUnit XML document; the report must carry its transcripts (it always does when built)."""
    root = ET.Element("testsuites", name="simulator")
    suite = ET.SubElement(root, "testsuite", name=_clean(f"{report.run.suite} ({report.run.run_id})"))
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("run_id", report.run.run_id),
        ("bot", report.run.bot),
        ("judge_set", report.run.judge_set or ""),
        ("overall", report.overall.text),
        *_stats_properties(report),
    ):
        ET.SubElement(props, "property", name=name, value=_clean(value))
    by_scenario: dict[str, dict[str, list[tuple[Transcript, TranscriptVerdict | None]]]] = {}
    criteria_of: dict[str, set[str]] = {}
    for transcript in report.transcripts:
        for verdict in transcript.verdicts:
            if not is_fidelity_check(verdict):  # the simulated user's checks are not the bot's tests
                criteria_of.setdefault(transcript.scenario_id, set()).add(verdict.criterion_id)
    for transcript in report.transcripts:
        verdicts = {v.criterion_id: v for v in transcript.verdicts}
        for criterion in sorted(criteria_of.get(transcript.scenario_id, set())):
            by_scenario.setdefault(transcript.scenario_id, {}).setdefault(criterion, []).append(
                (transcript, verdicts.get(criterion))
            )
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for scenario, criteria in by_scenario.items():
        for criterion, runs in criteria.items():
            case = _case(scenario, criterion, runs)
            suite.append(case)
            counts["tests"] += 1
            for tag, key in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
                counts[key] += int(case.find(tag) is not None)
    for element in (root, suite):
        for key, count in counts.items():
            element.set(key, str(count))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(report: Report, path: Path) -> None:
    """Write the JUnit XML to `path`."""
    path.write_text(render_junit(report), encoding="utf-8")
