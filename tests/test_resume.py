"""Resume: an interrupted run (half-written line, lost verdicts, kill -9) finishes without redoing or
duplicating anything; --retry-errors re-runs only errored items."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from simulator.config.loading import load_scenarios
from simulator.config.scenario import Scenario
from simulator.config.suite import Suite, load_suite
from simulator.engine.runner import RunOptions, RunResult, run_suite
from simulator.record.folder import CONVERSATIONS, VERDICTS, RunFolder
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from tests._reliability_fixtures import (
    FIDELITY,
    conversation_ids,
    triage_responder,
    verdict_keys,
    write_suite,
)

ROOT = Path(__file__).resolve().parent.parent
ALL_IDS = sorted(f"{s}#{r}" for s in ("chest", "rash", "cough") for r in range(2))


def _load(path: Path) -> tuple[Suite, list[Scenario]]:
    suite = load_suite(path)
    return suite, load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])


async def _run(suite_path: Path, out: Path, **options: bool) -> RunResult:
    suite, scenarios = _load(suite_path)
    resume = options.pop("resume", False)
    return await run_suite(suite, scenarios, RunOptions(out=out, resume=resume, progress=False, **options))


def _bot_calls(server: FakeLLMServer) -> int:
    return sum(1 for call in server.calls if call.tools)


async def test_a_half_written_last_line_is_dropped_and_its_item_run_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    async with FakeLLMServer(triage_responder) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url)
        await _run(suite, out)
        lines = (out / CONVERSATIONS).read_text().splitlines(keepends=True)
        last = json.loads(lines[-1])["id"]
        # The process died while writing the last conversation, before its verdicts.
        (out / CONVERSATIONS).write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
        kept = [line for line in (out / VERDICTS).read_text().splitlines(keepends=True) if last not in line]
        (out / VERDICTS).write_text("".join(kept))
        assert [r.id for r in RunFolder(out).conversations()] == [json.loads(x)["id"] for x in lines[:-1]]
        before = _bot_calls(server)
        result = await _run(suite, out, resume=True)
        assert _bot_calls(server) - before == 3  # that one conversation again, nothing else
    assert (result.finished, result.skipped) == (1, 5)
    assert sorted(conversation_ids(out)) == ALL_IDS
    assert Counter(verdict_keys(out)) == Counter(
        (i, c) for i in ALL_IDS for c in ("outcome.triage_level", *FIDELITY)
    )
    assert (out / CONVERSATIONS).read_text().startswith("".join(lines[:-1]))  # finished work untouched


def test_a_partial_line_longer_than_the_read_window_is_cut(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    (run / CONVERSATIONS).write_text('{"a": 1}\n{"b": 2}\n' + "x" * 200_000)
    (run / VERDICTS).write_text("partial")
    RunFolder.open(run)  # a reader changes nothing
    assert (run / CONVERSATIONS).read_text().endswith("x" * 200_000)
    assert (run / VERDICTS).read_text() == "partial"
    RunFolder.resume(run)  # the writer cuts what a killed writer left half-written
    assert (run / CONVERSATIONS).read_text() == '{"a": 1}\n{"b": 2}\n'
    assert (run / VERDICTS).read_text() == ""


async def test_resume_judges_conversations_that_lost_their_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "run"
    async with FakeLLMServer(triage_responder) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url)
        await _run(suite, out)
        lines = (out / VERDICTS).read_text().splitlines(keepends=True)
        bot = [i for i, line in enumerate(lines) if '"kind":"fidelity"' not in line.replace(" ", "")][:2]
        kept = [line for i, line in enumerate(lines) if i not in bot]
        (out / VERDICTS).write_text("".join(kept))  # written, but killed before two were judged
        calls = len(server.calls)
        result = await _run(suite, out, resume=True)
        assert len(server.calls) == calls
    assert (result.finished, result.rejudged, result.verdicts) == (0, 2, 2)
    assert Counter(verdict_keys(out)) == Counter(
        (i, c) for i in ALL_IDS for c in ("outcome.triage_level", *FIDELITY)
    )
    assert RunFolder(out).read_manifest().status == "complete"


class _Flaky:
    """The triage bot, failing every chest conversation while `broken`."""

    def __init__(self) -> None:
        self.broken = True

    def __call__(self, call: FakeCall) -> FakeReply | str:
        users = [m.content for m in call.messages if m.role == "user"]
        if self.broken and call.tools and "chest" in users[0]:
            return FakeReply(status=500, text="down")
        return triage_responder(call)


async def test_retry_errors_reruns_only_errored_items_and_keeps_one_record_each(tmp_path: Path) -> None:
    out = tmp_path / "run"
    bot = _Flaky()
    async with FakeLLMServer(bot) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url, provider={"max_attempts": 2})
        first = await _run(suite, out)
        assert first.errors == 2
        bot.broken = False
        calls = len(server.calls)
        plain = await _run(suite, out, resume=True)  # without --retry-errors, errors are results
        assert (plain.finished, len(server.calls)) == (0, calls)
        retried = await _run(suite, out, resume=True, retry_errors=True)
        assert _bot_calls(server) - calls == 2 * 3  # the two chest conversations, nothing else
    assert (retried.finished, retried.skipped, retried.errors) == (2, 4, 0)
    assert sorted(conversation_ids(out)) == ALL_IDS
    assert Counter(verdict_keys(out)) == Counter(
        (i, c) for i in ALL_IDS for c in ("outcome.triage_level", *FIDELITY)
    )
    folder = RunFolder(out)
    assert {r.id: r.stop_reason for r in folder.conversations()} == dict.fromkeys(ALL_IDS, "bot_closed")
    assert {v.result for v in folder.verdicts() if v.kind != "fidelity"} == {"pass"}
    manifest = folder.read_manifest()
    assert manifest.counts.errors == 0 and [s.command for s in manifest.sessions] == [
        "run",
        "resume",
        "resume",
    ]
    assert manifest.total_calls()["openai"].failed == 2  # summed over the three sessions


def _wait_for_lines(path: Path, count: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} never reached {count} lines")


def test_kill_9_then_resume_yields_exactly_one_record_per_item(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "simulator", "run"]
    with FakeLLMServer(triage_responder, latency=0.02) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url, runs=10, concurrency=3, criteria=2)
        child = subprocess.Popen(
            [*command, str(suite), "--out", str(out), "--no-progress"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_lines(out / CONVERSATIONS, 5)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL
        written = (out / CONVERSATIONS).read_bytes()
        finished = written[: written.rfind(b"\n") + 1]
        judged_before = sum(1 for key in verdict_keys_complete(out) if key[1].startswith("rule-"))
        assert json.loads((out / "manifest.json").read_text())["status"] == "running"
        before = len(server.calls)
        resumed = subprocess.run(
            [*command, "--resume", str(out), "--no-progress"], env=env, capture_output=True, text=True
        )
        judge_calls = sum(1 for call in server.calls[before:] if call.schema is not None)
    assert resumed.returncode == 0, resumed.stderr
    assert "already done" in resumed.stdout
    ids = conversation_ids(out)
    expected = sorted(f"{s}#{r}" for s in ("chest", "rash", "cough") for r in range(10))
    assert sorted(ids) == expected  # every item, none twice
    criteria = ("outcome.triage_level", "rule-0", "rule-1")
    assert Counter(verdict_keys(out)) == Counter((i, c) for i in expected for c in (*criteria, *FIDELITY))
    assert (out / CONVERSATIONS).read_bytes().startswith(finished)  # finished work was not redone
    assert judge_calls == 30 * 2 - judged_before  # nor were finished judgements
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def verdict_keys_complete(folder: Path) -> list[tuple[str, str]]:
    """(conversation, criterion) of the whole lines of verdicts.jsonl (a killed writer may leave half a line)."""
    text = (folder / VERDICTS).read_text() if (folder / VERDICTS).exists() else ""
    lines = text.split("\n")[:-1]
    return [(json.loads(x)["conversation_id"], json.loads(x)["criterion_id"]) for x in lines if x.strip()]
