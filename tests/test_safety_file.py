"""The safety case a CSO signs (issue 40): the DCB0129 file's sections on the shipped demo, hazard log fields
and controls verified by review, the bot under test identified, mixed bot versions refused, and sign-off from
the command line: sign, verify, tamper, delete."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.bot_identity import BotIdentity, identify_bot
from simulator.config.bots import HttpBotConfig, PythonBotConfig
from simulator.errors import UserError
from simulator.record.folder import MANIFEST
from simulator.safety.archive import read_archived
from simulator.safety.case import build_safety_case, load_runs
from simulator.safety.hazards import load_hazard_log
from simulator.safety.signoffs import SignOffBook
from simulator.safety.view import safety_case_sections
from tests.synthetic import synthetic_outcome_run

ROOT = Path(__file__).resolve().parent.parent

LOG = """\
title: File test log
system:
  name: Test bot
  intended_use: Triage advice for adults.
  clinical_setting: Online, before an urgent care service.
  users: [adult patients]
  interfaces: [web chat]
risk_management:
  plan: CRM-PLAN-001 v2
  roles: [{role: Clinical Safety Officer, name: Dr Ada}]
exposure: {conversations_per_month: 1000, case_mix: {}}
hazards:
  - id: HAZ-1
    title: Missed emergency
    cause: The bot does not escalate.
    effect: Delayed care.
    severity: catastrophic
    likelihood: medium
    status: monitoring
    owner: Dr Ada
    raised: 2026-01-02
    reviewed: 2026-02-03
    controls:
      - id: C-1
        description: Emergencies escalated.
        criteria: [outcome.triage_level]
        threshold: under_triage <= 5%
  - id: HAZ-2
    title: Patient waits on hedged advice
    cause: A banner is missing.
    effect: Delayed call to 999.
    severity: major
    likelihood: medium
    residual_likelihood: very_low
    controls:
      - id: C-2
        kind: labelling
        description: The window says to call 999 in an emergency.
        evidence:
          document: review.md
          reviewer: Dr Bea
          reviewed: 2026-02-01
          judgement: In place on every page.
"""


def _log(tmp_path: Path, text: str = LOG) -> Path:
    (tmp_path / "review.md").write_text("The banner is in place.\n", encoding="utf-8")
    path = tmp_path / "h.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _with_identity(run: Path, version: str) -> Path:
    manifest = json.loads((run / MANIFEST).read_text(encoding="utf-8"))
    manifest["bot_identity"] = BotIdentity(version=version, parts={"declared version": version}).model_dump()
    (run / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return run


def test_a_log_with_a_review_control_status_owner_and_dates_validates_and_is_shown(tmp_path: Path) -> None:
    run = synthetic_outcome_run(tmp_path / "run", {f"s{i}": [True, i != 0] for i in range(4)})
    case = build_safety_case(load_runs([run]), load_hazard_log(_log(tmp_path)))
    first, second = case.hazards
    assert (first.status, first.owner, first.raised, first.reviewed) == (
        "monitoring",
        "Dr Ada",
        "2026-01-02",
        "2026-02-03",
    )
    assert (first.initial_rating, first.initial_risk) == (4, "unacceptable")  # catastrophic x medium
    (review,) = second.controls
    assert review.status == "verified by review" and review.rate is None and review.bound is None
    assert (
        review.review is not None
        and review.review.sha256 == "sha256:" + hashlib.sha256(b"The banner is in place.\n").hexdigest()
    )
    # Only reviewed controls: the CSO's residual estimate, said to be no test result; not a gate failure.
    assert second.residual_likelihood == "very_low" and "not a test result" in second.residual_basis
    assert second.state == "controlled by review" and second.residual_rating == 2
    rows = {s.id: s for s in safety_case_sections(case)}
    drawn = str(rows["controls-HAZ-2"])
    assert "none (verified by review)" in drawn and "not a test result" in drawn
    hazards = str(rows["hazards"])
    assert "4 unacceptable (medium)" in hazards and "monitoring" in hazards and "very_high" not in hazards


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (("    status: monitoring\n", "    state: monitoring\n"), "state"),
        (("  intended_use:", "  intended_usage:"), "intended_usage"),
        (("        threshold: under_triage <= 5%\n", ""), "test control without a threshold"),
        (("        evidence:\n", "        evidenc:\n"), "evidenc"),
        (("    status: monitoring\n", "    status: done\n"), "status"),
        (("    reviewed: 2026-02-03\n", "    reviewed: 2025-02-03\n"), "is before raised"),
    ],
)
def test_each_hazard_log_mistake_names_its_field(
    tmp_path: Path, change: tuple[str, str], needle: str
) -> None:
    text = LOG.replace(*change)
    assert text != LOG
    with pytest.raises(UserError) as caught:
        load_hazard_log(_log(tmp_path, text))
    assert needle in str(caught.value) + " ".join(str(p) for p in caught.value.problems)


def test_new_hazards_writes_the_dcb0129_template_that_loads_back(tmp_path: Path) -> None:
    out = tmp_path / "hazards.yaml"
    assert main(["new", "hazards", "--out", str(out)]) == 0
    log = load_hazard_log(out)
    assert log.system is not None and log.system.intended_use and log.risk_management is not None
    assert {c.kind for c in log.hazards[0].controls} == {"test", "process"}
    assert main(["new", "hazards", "--out", str(out)]) == 2  # never overwritten without --force


def test_the_bot_kinds_identify_the_release_under_test(tmp_path: Path) -> None:
    python = identify_bot(PythonBotConfig(factory="examples.triage_bot:make_bot", version="2.1"), ROOT)
    assert python is not None and python.version == "2.1"
    source = (ROOT / "examples/triage_bot.py").read_bytes()
    digest = hashlib.sha256(b"triage_bot.py\0" + source + b"\0").hexdigest()
    assert python.parts["source sha256 of examples.triage_bot"] == f"sha256:{digest}"
    (tmp_path / "bot.py").write_text("print('v1')\n", encoding="utf-8")
    start = {"command": ["{python}", "bot.py", "--port", "{port}"]}
    http = HttpBotConfig.model_validate({"type": "http", "url": "http://127.0.0.1:1/", "start": start})
    started = identify_bot(http, tmp_path)
    assert started is not None and started.parts["sha256 of bot.py"].startswith("sha256:")
    (tmp_path / "bot.py").write_text("print('v2')\n", encoding="utf-8")
    changed = identify_bot(http, tmp_path)
    assert changed is not None and not changed.same_as(started)
    assert identify_bot(HttpBotConfig.model_validate({"type": "http", "url": "http://h/"}), tmp_path) is None


def test_a_run_records_its_bot_and_the_case_shows_it(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert (
        main(
            [
                "run",
                str(ROOT / "scenarios/triage/suite.yaml"),
                "--out",
                str(out),
                "--no-progress",
                "--runs",
                "1",
            ]
        )
        == 0
    )
    case = build_safety_case(load_runs([out]), load_hazard_log(ROOT / "examples/triage_hazards.yaml"))
    (trace,) = case.traceability.runs
    assert trace.bot_version and trace.bot_version.startswith("sha256:")
    assert "source sha256 of examples.triage_bot" in trace.bot_identity
    assert trace.bot_version in str({s.id: s for s in safety_case_sections(case)}["system"])


def test_two_bot_versions_refuse_to_pool_without_the_flag(tmp_path: Path) -> None:
    plan = {f"s{i}": [True] for i in range(3)}
    a = _with_identity(synthetic_outcome_run(tmp_path / "a", plan), "1.0")
    b = _with_identity(synthetic_outcome_run(tmp_path / "b", plan), "1.1")
    log = _log(tmp_path)
    with pytest.raises(UserError, match=r"different bot versions \(1.0: a; 1.1: b\).*--allow-mixed-versions"):
        build_safety_case(load_runs([a, b]), load_hazard_log(log))
    assert main(["safety-case", str(a), str(b), "--hazards", str(log), "--quiet"]) == 2
    case = build_safety_case(load_runs([a, b]), load_hazard_log(log), allow_mixed_versions=True)
    assert any("different bot versions on purpose" in line for line in case.statement)
    code = main(["safety-case", str(a), str(b), "--hazards", str(log), "--quiet", "--allow-mixed-versions"])
    assert code in (1, 3)


def test_sign_verify_tamper_and_delete_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    run = synthetic_outcome_run(runs / "run-a", {f"s{i}": [True, i != 0] for i in range(4)})
    log = _log(tmp_path)
    sign = ["safety-case", str(run), "--hazards", str(log), "--quiet", "--sign", "--name", "Dr Ada"]
    sign += ["--role", "Clinical Safety Officer", "--decision", "approve"]
    # HAZ-1 is not controlled (s0 under-triaged): a plain approve is refused and nothing is written.
    assert main(sign) == 2
    assert "HAZ-1); write a justification" in capsys.readouterr().err
    assert not (runs / ".desk" / "signoffs.jsonl").exists()
    assert main([*sign, "--justification", "supervised pilot, 10 patients"]) in (1, 3)
    (signoff,) = SignOffBook(runs / ".desk").all()
    assert signoff.justification == "supervised pilot, 10 patients" and signoff.document is not None
    capsys.readouterr()
    # The printable document now shows who signed and the justification.
    html = tmp_path / "case.html"
    main(["safety-case", str(run), "--hazards", str(log), "--quiet", "--html", str(html)])
    page = html.read_text(encoding="utf-8")
    assert "Dr Ada" in page and "Justification (Dr Ada, Clinical Safety Officer)" in page
    verify = ["safety-case", str(run), "--hazards", str(log), "--verify"]
    capsys.readouterr()
    assert main(verify) == 0 and "verified: Dr Ada" in capsys.readouterr().out
    # Tamper: turn one failing verdict line into a pass.
    verdicts = run / "verdicts.jsonl"
    lines = verdicts.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if '"result":"fail"' in line.replace(" ", ""))
    lines[at] = lines[at].replace('"fail"', '"pass"', 1)
    verdicts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(verify) == 1
    said = capsys.readouterr().out
    assert "CHANGED since Dr Ada" in said and "hazards[HAZ-1].controls[C-1].failed: 1 -> 0" in said
    # Delete the run: the signed document is still there and readable.
    shutil.rmtree(run)
    kept = read_archived(runs / ".desk" / signoff.document)
    assert kept.evidence_hash == signoff.evidence_hash and kept.hazards[0].controls[0].failed == 1
    assert (runs / ".desk" / signoff.document).with_suffix(".html").is_file()


# The 16 items a CSO checks in a Clinical Safety Case Report and Hazard Log (DCB0129), and the section of the
# demo's document holding each, with a phrase that shows it is filled in, not just titled.
CHECKLIST = {
    "system definition": ("system", "rule-based symptom triage"),
    "intended use": ("system", "intended use"),
    "clinical setting and users": ("system", "parents and carers"),
    "interfaces and exclusions": ("system", "web chat"),
    "system under test identified": ("system", "source sha256 of examples.triage_bot"),
    "CRM plan reference": ("crm", "CRM-PLAN-DEMO-001"),
    "roles": ("crm", "Clinical Safety Officer"),
    "method: matrix and likelihood rule": ("crm", "not a frequency in the service"),
    "hazard log: cause and effect": ("hazards", "Cause:"),
    "hazard status, owner, dates": ("hazards", "2026-01-12 / 2026-03-02"),
    "initial and residual risk, numeric and words": ("hazards", "4 unacceptable (medium)"),
    "controls of every kind and their evidence": ("controls-HAZ-08", "verified by review"),
    "test issues and outstanding items": ("outstanding", "CTL-01a: not met"),
    "safety statement": ("safety-statement", "hazards are shown controlled"),
    "sign-off": ("signoff", "Not signed"),
    "traceability": ("trace-matrix", "CTL-08b"),
}


def test_the_demo_document_holds_every_item_of_the_cso_checklist(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert (
        main(
            [
                "run",
                str(ROOT / "scenarios/triage/suite.yaml"),
                "--out",
                str(out),
                "--no-progress",
                "--runs",
                "1",
            ]
        )
        == 0
    )
    case = build_safety_case(load_runs([out]), load_hazard_log(ROOT / "examples/triage_hazards.yaml"))
    sections = {s.id: str(s) for s in safety_case_sections(case)}
    missing = [
        item for item, (section, phrase) in CHECKLIST.items() if phrase not in sections.get(section, "")
    ]
    assert not missing, missing
    assert len(CHECKLIST) == 16
    order = [s.id for s in safety_case_sections(case)]
    assert order.index("system") < order.index("crm") < order.index("hazards") < order.index("outstanding")
    assert order.index("safety-statement") < order.index("signoff") < order.index("traceability")
    projection = {p.control: p for p in case.projections}
    assert projection["CTL-01a"].share == 0.04 and projection["CTL-01a"].per_month == pytest.approx(
        20000 * 0.04 * projection["CTL-01a"].rate
    )


def test_two_factories_of_one_module_are_two_bots() -> None:
    demo = identify_bot(PythonBotConfig(factory="examples.triage_bot:make_bot"), ROOT)
    fixed = identify_bot(PythonBotConfig(factory="examples.triage_bot:make_fixed_bot"), ROOT)
    assert demo is not None and fixed is not None and not demo.same_as(fixed)
    assert (
        demo.version == fixed.version
    )  # the same source file: its hash is shown, the factory tells them apart


def test_an_http_bot_started_for_the_run_records_the_version_it_answers(tmp_path: Path) -> None:
    """Through the engine: the example HTTP bot, started by the suite, answers /version; the manifest keeps it
    beside the start command's hash, and the safety case shows it."""
    text = (ROOT / "scenarios/triage/suite.yaml").read_text(encoding="utf-8")
    text = text.replace('paths: ["."]', f'paths: ["{ROOT}/scenarios/triage"]')
    text = text.replace("../../judges/triage", f"{ROOT}/judges/triage")
    text = text.replace("../../examples/triage_vocabulary.yaml", f"{ROOT}/examples/triage_vocabulary.yaml")
    bot = (
        "bot:\n  type: http\n  url: http://127.0.0.1:{port}/chat\n  version_url: http://127.0.0.1:{port}/version\n"
        f"  start:\n    command: ['{{python}}', '-m', 'examples.http_triage_bot', '--port', '{{port}}']\n"
        f"    cwd: {ROOT}\n"
    )
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("bot:"))
    end = next(i for i in range(at + 1, len(lines)) if lines[i].strip() and not lines[i].startswith(" "))
    suite = tmp_path / "suite.yaml"
    suite.write_text("".join(lines[:at]) + bot + "".join(lines[end:]), encoding="utf-8")
    out = tmp_path / "run"
    assert main(["run", str(suite), "--out", str(out), "--no-progress", "--runs", "1"]) == 0
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    identity = BotIdentity.model_validate(manifest["bot_identity"])
    assert identity.version == "http-triage-bot 1.0"
    assert identity.parts["start command sha256"].startswith("sha256:")
    case = build_safety_case(load_runs([out]), load_hazard_log(ROOT / "examples/triage_hazards.yaml"))
    assert case.traceability.runs[0].bot_version == "http-triage-bot 1.0"


@pytest.mark.browser
def test_signing_with_pdf_archives_the_printed_document(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = synthetic_outcome_run(runs / "run-a", {f"s{i}": [True] for i in range(3)})
    log = _log(tmp_path)
    sign = ["safety-case", str(run), "--hazards", str(log), "--quiet", "--sign", "--name", "Dr Ada"]
    sign += ["--role", "CSO", "--decision", "reject", "--pdf", str(tmp_path / "case.pdf")]
    assert main(sign) in (1, 3)
    (signoff,) = SignOffBook(runs / ".desk").all()
    assert signoff.document_pdf is not None
    assert (runs / ".desk" / signoff.document_pdf).read_bytes().startswith(b"%PDF")


def test_verify_a_document_and_say_when_nothing_was_signed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = synthetic_outcome_run(tmp_path / "runs" / "run-a", {f"s{i}": [True, i != 0] for i in range(4)})
    log = _log(tmp_path)
    verify = ["safety-case", str(run), "--hazards", str(log), "--verify"]
    assert main(verify) == 2 and "no sign-off of these runs" in capsys.readouterr().err
    exported = tmp_path / "case.json"
    assert main(["safety-case", str(run), "--hazards", str(log), "--quiet", "--json", str(exported)]) in (
        1,
        3,
    )
    assert main([*verify, "--document", str(exported)]) == 0
    (tmp_path / "review.md").write_text(
        "The banner was changed.\n", encoding="utf-8"
    )  # the reviewed document
    capsys.readouterr()
    assert main([*verify, "--document", str(exported)]) == 1
    assert "hazards[HAZ-2].controls[C-2].review.sha256" in capsys.readouterr().out


def test_a_version_url_that_does_not_answer_is_said_so(tmp_path: Path) -> None:
    import asyncio

    from simulator.bots.http_bot import HttpBotFactory
    from simulator.config.bot_identity import with_answer

    config = HttpBotConfig.model_validate(
        {
            "type": "http",
            "url": "http://127.0.0.1:9/chat",
            "version_url": "http://127.0.0.1:9/version",
            "version": "3",
        }
    )

    async def ask() -> dict[str, str]:
        factory = HttpBotFactory(config)
        try:
            return await factory.identify()
        finally:
            await factory.aclose()

    answered = asyncio.run(ask())
    (key,) = answered
    assert key == "http://127.0.0.1:9/version did not answer"
    merged = with_answer(identify_bot(config, tmp_path), answered)
    assert merged.version == "3" and list(merged.parts) == ["declared version", key]
    undeclared = with_answer(None, answered)
    assert undeclared.version == "not identified" and undeclared.parts == answered


def test_the_history_says_where_the_bot_version_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = {f"s{i}": [True] for i in range(3)}
    a = _with_identity(synthetic_outcome_run(tmp_path / "a", plan), "1.0")
    b = _with_identity(synthetic_outcome_run(tmp_path / "b", plan), "1.1")
    html = tmp_path / "history.html"
    assert main(["history", str(a), str(b), "--html", str(html)]) == 0
    assert "bot version changed: 1.0 → 1.1" in capsys.readouterr().out
    page = html.read_text(encoding="utf-8")
    assert "bot version changed" in page and ">2 b</text>" in page
