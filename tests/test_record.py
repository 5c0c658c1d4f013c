"""The typed, versioned run record: migrations from older versions, the version check, readers that never
write, text that cannot be stored as UTF-8, and files that are not ours."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.errors import UserError
from simulator.record.folder import CONVERSATIONS, MANIFEST, VERDICTS, RunFolder, dump_line
from simulator.record.migrations import (
    LATEST,
    golden_manifest_1_to_2,
    golden_result_1_to_2,
    migrate_verdict,
)
from simulator.record.models import SCHEMA_VERSION
from simulator.report.model import build_report

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "runs"


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(DATA / name, target)
    return target


def _snapshot(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


# ---- migrations ------------------------------------------------------------------------------------------


def test_a_version_1_folder_is_read_with_todays_types(tmp_path: Path) -> None:
    run = _copy("v1-simulation", tmp_path)
    manifest = RunFolder.open(run).read_manifest()
    assert manifest.schema_version == SCHEMA_VERSION == LATEST
    assert manifest.models.user == "offline" and manifest.models.bot == "python:examples.triage_bot:make_bot"
    assert manifest.suite is not None and manifest.suite.outcome is not None
    assert manifest.suite.outcome.critical == "emergency" and manifest.suite.runs == 2
    assert [s.id for s in manifest.scenarios][:2] == ["ankle-injury-12", "back-pain-16"]
    assert manifest.judge_set is not None and manifest.judge_set.hash.startswith("sha256:dcf2cad7")
    assert manifest.criterion("asks-age") is not None
    outcome = [v for v in RunFolder.open(run).verdicts() if v.criterion_id == "outcome.triage_level"]
    assert len(outcome) == 18 and all(v.expected is not None for v in outcome)
    vague = [v for v in outcome if v.scenario_id == "chest-pain-vague-01"]
    assert {(v.expected, v.actual, v.result) for v in vague} == {("emergency", "urgent", "fail")}


def _differences(old: Any, new: Any, where: str = "") -> list[str]:
    """Where `new` differs from `old` on everything `old` has (fields added since are allowed)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for key in old for d in _differences(old[key], new.get(key, "<missing>"), f"{where}.{key}")]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            d
            for i, (o, n) in enumerate(zip(old, new, strict=True))
            for d in _differences(o, n, f"{where}[{i}]")
        ]
    return [] if old == new else [f"{where}: {old!r} -> {new!r}"]


def drop_zero_rate_texts(value: Any) -> None:
    """Issue 44's deliberate change: a rate with nothing against it reads as one bound in its own direction
    ("none seen: at most 4.6%"), not an interval and a failure bound. Its text is dropped from a stored and
    a new report alike; every number (k, n, bound, interval) stays compared."""
    if isinstance(value, dict):
        if value.get("bound") is not None and "text" in value:
            value.pop("text")
        for item in value.values():
            drop_zero_rate_texts(item)
    elif isinstance(value, list):
        for item in value:
            drop_zero_rate_texts(item)


def _rate_texts(value: Any, path: str = "") -> dict[str, str]:
    """Every rate's `text` in a report's JSON by where it is, each popped from its rate."""
    found: dict[str, str] = {}
    if isinstance(value, dict):
        if {"k", "n", "text"} <= value.keys():
            found[path] = value.pop("text")
        for key, item in value.items():
            found |= _rate_texts(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found |= _rate_texts(item, f"{path}[{index}]")
    return found


def assert_rate_texts_lead_with_their_interval(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Deliberate change (one interval per rate, tests/test_one_interval_text.py): a rate's text leads with its
    interval clustered over vignettes, the per-conversation one only labelled; the same count and rate. Pops
    every rate's text from both reports."""
    was_texts, now_texts = _rate_texts(old), _rate_texts(new)
    for path in was_texts.keys() & now_texts.keys():
        was, now = was_texts[path], now_texts[path]
        assert now.split(" (")[0] == was.split(" (")[0], (path, was, now)
        assert "n/a" in now or "per conversation" in now or was == now, (path, was, now)


def assert_cost_counts_requests_made(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Issue 31's one rule for calls: only requests actually made count. A stored report of a run with the
    offline user and no judge model counted their turns as calls; today they are 0 and have no failure
    rows. Every other cost figure is the same."""
    drop_zero_rate_texts(old)
    drop_zero_rate_texts(new)
    before, after = old.pop("cost"), new.pop("cost")
    for was, now in zip(before["roles"], after["roles"], strict=True):
        made = now["role"] == "bot"  # the offline user and a judge without a model send no request
        assert now["calls"] == (was["calls"] if made else 0)
        assert not _differences({**was, "calls": 0}, {**now, "calls": 0})
    assert not _differences([f for f in before["failures"] if f["role"] == "bot"], after["failures"])
    rest = [k for k in before if k not in ("roles", "failures")]
    assert not _differences({k: before[k] for k in rest}, {k: after[k] for k in rest})


def test_a_version_1_folder_reports_as_the_version_that_wrote_it(tmp_path: Path) -> None:
    """Every figure the v1 report printed (stored beside the folder) comes out the same from today's reader."""
    run = _copy("v1-simulation", tmp_path)
    old = json.loads((DATA / "v1-simulation.report.json").read_text(encoding="utf-8"))
    new = json.loads(build_report(load_run(run)).model_dump_json())
    for volatile in ("generated_at", "run", "schema_version", "transcripts"):  # transcripts: HTML only
        old.pop(volatile)
    # Deliberate changes: the headline findings on escalation and under-triage carry the vignette-clustered
    # interval (report schema 2), and since issue 31 as THE interval, the per-conversation one after it,
    # labelled. Every figure stays the same; under-triage now counts no-decision cases (none in this run).
    assert_cost_counts_requests_made(old, new)
    assert_rate_texts_lead_with_their_interval(old, new)
    changed = _differences(old, new)
    assert [d.split(":")[0] for d in changed] == [".findings[1].detail", ".findings[2].title"]
    assert old["findings"][1]["detail"] == "emergency sensitivity 2/4 = 50.0% (95% CI 15.0%–85.0%)"
    assert new["findings"][1]["detail"] == (
        "emergency sensitivity 2/4 = 50.0% (95% CI 0.2%–99.8% over 2 vignettes, vignette-clustered; "
        "per conversation 15.0%–85.0%)"
    )
    assert new["findings"][2]["title"] == (
        "under-triage: 2/18 = 11.1% (95% CI 1.4%–51.8% over 9 vignettes, vignette-clustered; "
        "per conversation 3.1%–32.8%)"
    )


def test_a_version_1_folder_without_expectations_gets_them_from_its_outcome_verdicts(tmp_path: Path) -> None:
    run = _copy("v1-simulation", tmp_path)
    manifest = json.loads((run / MANIFEST).read_text())
    for entry in manifest["scenarios"]:
        entry.pop("expected")
    (run / MANIFEST).write_text(json.dumps(manifest))
    assert load_run(run).expected["chest-pain-vague-01"] == {"triage_level": "emergency"}


@pytest.mark.parametrize(
    ("reasoning", "expected", "actual"),
    [
        ("expected triage_level='emergency', the bot recorded 'urgent'", "emergency", "urgent"),
        (
            "expected triage_level='emergency'; the bot recorded no triage_level (final state: none)",
            "emergency",
            None,
        ),
        (
            "expected triage_level='emergency'; the conversation stopped with 'max_turns'",
            "emergency",
            "max_turns",
        ),
        ("expected handover=True; the conversation stopped with 'handover'", True, "handover"),
        ("expected triage_level='a, b; c', the bot recorded 'x, y'", "a, b; c", "x, y"),
        ("expected score=3, the bot recorded 4", 3, 4),
    ],
)
def test_version_1_outcome_verdicts_get_expected_and_actual_fields(
    reasoning: str, expected: Any, actual: Any
) -> None:
    old = {"schema_version": 1, "criterion_id": "outcome.x", "reasoning": reasoning}
    new = migrate_verdict(old, "verdicts.jsonl:1")
    assert new["schema_version"] == LATEST and new["expected"] == expected and new.get("actual") == actual


def test_a_version_1_golden_folder_reports_its_old_figures(tmp_path: Path) -> None:
    """Simulator 0.1's golden engine wrote manifest kind golden + results.jsonl: today's reader sees it as
    conversations and verdicts, and the report gives the figures the old report printed."""
    run = _copy("v1-golden", tmp_path)
    before = _snapshot(run)
    old = json.loads((DATA / "v1-golden.report.json").read_text(encoding="utf-8"))
    report = build_report(load_run(run))
    golden = report.golden
    assert golden is not None and report.run.user_model == "scripted"
    assert (
        (golden.passed, golden.failed, golden.errors)
        == (old["passed"], old["failed"], old["errors"])
        == (
            36,
            12,
            0,
        )
    )
    assert (report.overall.k, report.overall.n) == (36, 48)
    assert (golden.exact_match.k, golden.assertions.k, golden.gate_pass.k) == (
        old["exact_match"]["k"],
        old["assertions"]["k"],
        old["gate_pass"]["k"],
    )
    assert golden.means["token_f1"] == pytest.approx(old["mean_token_f1"])
    assert golden.means["rouge_l"] == pytest.approx(old["mean_rouge_l"])
    assert golden.means["difflib_ratio"] == pytest.approx(old["mean_difflib_ratio"])
    assert [(r.intent, r.passed, r.failed) for r in golden.intents] == [
        (r["intent"], r["passed"], r["failed"]) for r in old["intents"]
    ]
    assert {f.item_id for f in golden.failed_items} == {f["item_id"] for f in old["failed_items"]}
    assert [r.shares["token_f1"].k for r in golden.sweep] == [
        r["shares"]["token_f1"]["k"] for r in old["sweep"]
    ]
    assert _snapshot(run) == before  # readers never write


def test_version_1_golden_steps_are_small_functions(tmp_path: Path) -> None:
    """One v1 result line becomes one conversation per sample and the verdicts today's code checks write."""
    manifest = {"run_id": "r", "started_at": "2026-01-01T00:00:00Z", "bot": "m:f", "samples": 2}
    sample = {
        "sample": 0,
        "messages": ["out"],
        "context_replies": ["hi"],
        "passed": False,
        "exact_match": False,
    }
    sample.update(
        token_f1=0.5, rouge_l=0.4, difflib_ratio=0.3, assertions_passed=True, failures=["not exact"]
    )
    errored = {"sample": 1, "error": {"source": "bot", "kind": "bot_exception", "message": "down"}}
    result = {"item_id": "rb", "intent": "readback", "kind": "exact", "samples": [sample, errored]}
    conversations, verdicts = golden_result_1_to_2(result, manifest)
    assert [(c["id"], c["stop_reason"]) for c in conversations] == [("rb#0", "user_done"), ("rb#1", "error")]
    assert [t["messages"] for t in conversations[0]["turns"]] == [["hi"], ["out"]]
    by_id = {(v["conversation_id"], v["criterion_id"]): v for v in verdicts}
    assert by_id[("rb#0", "exact_match")]["result"] == "fail"
    assert by_id[("rb#0", "metric.assertions")]["score"] == 1.0
    assert by_id[("rb#0", "metric.token_f1")]["score"] == 0.5
    assert by_id[("rb#1", "exact_match")]["result"] == "not_judged"
    new = golden_manifest_1_to_2({**manifest, "items_file": "items.yaml", "n_items": 1}, [result])
    assert new["kind"] == "golden" and new["planned"] == 2 and new["counts"]["errors"] == 1
    assert new["scenarios"] == [
        {"id": "rb", "file": "items.yaml", "sha256": None, "intent": "readback", "item_kind": "exact"}
    ]


def test_a_version_1_golden_folder_compares_with_a_run_of_today(tmp_path: Path) -> None:
    """The same bot over the same items, then and now: nothing flips."""
    from simulator.analysis.compare import compare_runs
    from simulator.engine.golden import GoldenOptions, run_golden

    old = _copy("v1-golden", tmp_path)
    items = ROOT / "scenarios" / "golden" / "parcels.yaml"
    options = GoldenOptions(out=tmp_path / "now", progress=False)
    now = asyncio.run(run_golden(items, "examples.parcel_bot:bot_a", options)).folder
    comparison = compare_runs(old, Path(now))
    passes = next(m for m in comparison.metrics if m.name == "conversation passes")
    assert (passes.pairs, passes.both_pass, passes.only_a, passes.only_b) == (48, 36, 0, 0)
    assert comparison.golden is not None
    assert {row.name: row.a == row.b for row in comparison.golden.metrics}["verdict (pass)"]


def test_a_version_1_golden_folder_is_not_resumed(tmp_path: Path) -> None:
    run = _copy("v1-golden", tmp_path)
    with pytest.raises(UserError, match=r"golden run from simulator 0\.1: it can be reported and compared"):
        RunFolder.resume(run)
    assert main(["run", "--resume", str(run)]) == 2
    assert main(["judge", str(run)]) == 2
    assert not (run / VERDICTS).exists()
    (run / "results.jsonl").unlink()
    with pytest.raises(UserError, match=r"without its results\.jsonl"):
        RunFolder.open(run).read_manifest()


@pytest.mark.parametrize("where", [MANIFEST, CONVERSATIONS, VERDICTS])
def test_a_newer_schema_version_is_one_clear_error(tmp_path: Path, where: str) -> None:
    run = _copy("v1-simulation", tmp_path)
    path = run / where
    if where == MANIFEST:
        data = json.loads(path.read_text())
        data["schema_version"] = LATEST + 1
        path.write_text(json.dumps(data))
    else:
        first, rest = path.read_text().split("\n", 1)
        record = json.loads(first)
        record["schema_version"] = LATEST + 7
        path.write_text(json.dumps(record) + "\n" + rest)
    assert main(["report", str(run)]) == 2
    with pytest.raises(
        UserError, match=rf"newer simulator \(schema version {LATEST + (1 if where == MANIFEST else 7)}"
    ):
        load_run(run)


# ---- readers never write ---------------------------------------------------------------------------------


def test_readers_never_modify_a_run_being_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose writer is mid-line: report, show, compare, labels and calibrate read it and change no
    byte; the half line is skipped in memory, and the writer's resume still finds it to repair."""
    run = _copy("v1-simulation", tmp_path)
    with (run / CONVERSATIONS).open("a", encoding="utf-8") as handle:
        handle.write('{"schema_version":2,"id":"half')
    with (run / VERDICTS).open("a", encoding="utf-8") as handle:
        handle.write('{"schema_version":2,"conv')
    before = _snapshot(run)
    assert main(["report", str(run)]) == 0
    assert main(["show", str(run), "--scenario", "chest-pain-vague-01"]) == 0
    assert main(["compare", str(run), str(run)]) == 0
    assert (
        main(
            [
                "labels",
                "export",
                str(run),
                "--criterion",
                "outcome.triage_level",
                "--out",
                str(tmp_path / "l"),
            ]
        )
        == 0
    )
    assert len(load_run(run).conversations) == 18
    capsys.readouterr()
    assert _snapshot(run) == before
    RunFolder.resume(run)
    assert (run / CONVERSATIONS).read_bytes().endswith(b"\n") and (run / VERDICTS).read_bytes().endswith(
        b"\n"
    )


def test_a_reader_cannot_write() -> None:
    folder = RunFolder.open(DATA / "v1-simulation")
    with pytest.raises(RuntimeError, match="opened for reading"):
        folder.append_verdicts([])


# ---- what a file may hold --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "content"),
    [
        (MANIFEST, b"\xff\xfe not utf-8"),
        (MANIFEST, b"{ not json"),
        (MANIFEST, b"[1, 2]"),
        (CONVERSATIONS, b"\x89PNG\r\n\x1a\n binary\n"),
        (CONVERSATIONS, b"not json at all\n"),
        (VERDICTS, b'{"schema_version": 2, "conversation_id": 5}\n'),
    ],
)
def test_damaged_files_are_one_clear_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, content: bytes
) -> None:
    run = _copy("v1-simulation", tmp_path)
    (run / where).write_bytes(content)
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(run / where) in err and "Traceback" not in err


def test_any_python_string_is_recordable() -> None:
    """Lone surrogates anywhere in a record (messages, state, errors, reasoning) become U+FFFD, flagged."""
    from simulator.record.models import ConversationRecord, ErrorInfo, Verdict
    from simulator.record.transcript import Turn

    now = "2026-01-01T00:00:00Z"
    turn = Turn(index=0, role="bot", messages=["ok \ud800 then \udfff", "\ud83d\ude00"], started_at=now)  # type: ignore[arg-type]
    assert turn.messages == ["ok \ufffd then \ufffd", "\U0001f600"] and turn.text_repaired
    record = ConversationRecord(
        id="s#0",
        scenario_id="s",
        repeat=0,
        stop_reason="error",
        turns=[turn],
        final_state={"level\udc80": "x\ud800"},
        error=ErrorInfo(source="bot", kind="k", message="bad \udbff"),
        started_at=now,  # type: ignore[arg-type]
        ended_at=now,  # type: ignore[arg-type]
    )
    line = dump_line(record)
    line.encode("utf-8")
    back = ConversationRecord.model_validate_json(line)
    assert back.text_repaired and back.final_state == {"level\ufffd": "x\ufffd"}
    assert back.error is not None and back.error.message == "bad \ufffd"
    verdict = Verdict(
        conversation_id="s#0",
        scenario_id="s",
        repeat=0,
        criterion_id="c",
        kind="llm",
        result="pass",
        reasoning="\ud800 quoted",
    )
    assert Verdict.model_validate_json(dump_line(verdict)).reasoning == "\ufffd quoted"


SURROGATE_BOT = """
class Bot:
    def send(self, text):
        return "Call 999 now \\ud800 please"

    def final_state(self):
        return {"triage_level": "emergency\\udfff"}


def make_bot():
    return Bot()
"""


def test_a_run_with_surrogates_finishes_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "surrogate_bot.py").write_text(SURROGATE_BOT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "s.yaml").write_text(
        "id: s1\npersona: A person \ud800 who types oddly.\ngoal: Get help.\nfacts: [I am 40.]\n"
        "expected: {triage_level: emergency}\n".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
        encoding="utf-8",
    )
    (tmp_path / "suite.yaml").write_text(
        "bot: {type: python, factory: 'surrogate_bot:make_bot'}\nuser: {model: offline}\nruns: 2\n",
        encoding="utf-8",
    )
    suite = load_suite(tmp_path / "suite.yaml")
    scenarios = load_scenarios([tmp_path / "s.yaml"])
    out = tmp_path / "run"
    result = asyncio.run(run_suite(suite, scenarios, RunOptions(out=out, progress=False)))
    assert result.status == "complete" and result.finished == 2
    records = list(RunFolder.open(out).conversations())
    assert all(r.text_repaired and r.final_state == {"triage_level": "emergency\ufffd"} for r in records)
    assert all("\ufffd" in t.text for r in records for t in r.turns if t.role == "bot")
    again = asyncio.run(run_suite(suite, scenarios, RunOptions(out=out, resume=True, progress=False)))
    assert again.status == "complete" and again.skipped == 2


def test_bot_conversation_ids_are_unique_per_run_and_attempt(tmp_path: Path) -> None:
    suite = load_suite(ROOT / "scenarios" / "triage" / "suite.yaml", {"runs": 2})
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])[:3]
    ids: list[str] = []
    for name in ("a", "b"):
        asyncio.run(run_suite(suite, scenarios, RunOptions(out=tmp_path / name, progress=False)))
        records = list(RunFolder.open(tmp_path / name).conversations())
        ids += [r.bot_conversation_id or "" for r in records]
        assert all((r.bot_conversation_id or "").startswith(f"{name}/{r.id}/") for r in records)
    assert len(set(ids)) == len(ids) == 12
