"""The collector survives restarts without losing or duplicating a conversation: a conversation spread
over two runs of the collector, a crash between the journal's marker and the record, spans sent again
after a restart, and `kill -9` of the real command mid-stream."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.collect_helpers import collector, genai_turns, receiver, records, tracer, wait_for
from tests.traces_helpers import ROOT

TURNS = [("my child has a fever", "How old is your child?"), ("she is 3", "How long has she had it?")]
MORE = [("two days", "Please see your GP today.")]


def test_a_conversation_spanning_a_restart_is_one_record(tmp_path: Path) -> None:
    out = tmp_path / "live"
    first = collector(out, idle_s=60)
    with receiver(first) as url:
        provider = tracer(url)
        genai_turns(provider, "kid", TURNS)
        provider.shutdown()
        wait_for(lambda: first.assembler.spans == 2)
    assert records(out) == []  # still open when the collector stopped
    second = collector(out, idle_s=0.3)
    with receiver(second) as url:
        wait_for(lambda: second.counts["conversations"] == 1)  # reopened from the spool, then idle
    (record,) = records(out)
    assert [t.text for t in record.turns] == [m for pair in TURNS for m in pair]


def test_spans_held_over_a_restart_and_new_ones_join_the_same_conversation(tmp_path: Path) -> None:
    out = tmp_path / "live"
    first = collector(out, idle_s=60)
    with receiver(first) as url:
        provider = tracer(url)
        genai_turns(provider, "kid", TURNS)
        provider.shutdown()
        wait_for(lambda: first.assembler.spans == 2)
    second = collector(out, idle_s=1.0)
    with receiver(second) as url:
        provider = tracer(url)
        # The next turn repeats the history, as an instrumented app does.
        genai_turns(provider, "kid", TURNS + MORE)
        provider.shutdown()
        wait_for(lambda: second.counts["conversations"] == 1)
    (record,) = records(out)
    assert len(record.turns) == 6 and record.turns[-1].text == "Please see your GP today."


def test_a_crash_between_marker_and_record_is_finished_once(tmp_path: Path) -> None:
    out = tmp_path / "live"
    first = collector(out, idle_s=60)
    first.start()
    doc = _document(TURNS)
    first.accept(doc)

    class Killed(BaseException):
        """The process dying here (an Exception would be quarantined: the close loop is supervised)."""

    def crash(*args: object) -> None:
        raise Killed

    first.folders.write = crash  # type: ignore[method-assign,assignment]
    with pytest.raises(Killed):
        first.tick(everything=True)
    assert records(out) == [] and (out / ".collect" / "closed.jsonl").read_text().count("\n") == 1
    for _ in range(2):  # starting twice writes it once
        again = collector(out, idle_s=60)
        again.start()
        again.stop()
    (record,) = records(out)
    assert len(record.turns) == 4
    # The same spans sent again after the restart are recognised: no second record.
    third = collector(out, idle_s=60)
    third.start()
    assert third.accept(doc).fresh == 0
    third.tick(everything=True)
    third.stop()
    assert len(records(out)) == 1


def _document(turns: list[tuple[str, str]]) -> dict[str, object]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from simulator.traces.otlp_json import spans_to_json

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    genai_turns(provider, "kid", turns)
    return spans_to_json(memory.get_finished_spans())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(out: Path, port: int, idle: str, stderr: int | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "simulator", "collect", "--port", str(port), "--out", str(out)]
    process = subprocess.Popen([*command, "--idle-s", idle], env=env, cwd=ROOT, stderr=stderr)
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/status", timeout=1)
            return process
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise AssertionError("simulator collect did not start") from None
            time.sleep(0.1)


def test_kill_9_mid_stream_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    out, port = tmp_path / "live", _free_port()
    url = f"http://127.0.0.1:{port}"
    process = _start(out, port, "60")
    try:
        provider = tracer(url)
        genai_turns(provider, "kid", TURNS)
        provider.shutdown()
        assert httpx.get(f"{url}/status").json()["open_spans"] == 2
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(20)
    process = _start(out, port, "1")
    try:
        provider = tracer(url)
        genai_turns(provider, "kid", TURNS + MORE)
        provider.shutdown()
        wait_for(lambda: httpx.get(f"{url}/status").json()["counts"].get("conversations") == 1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(20)
    (record,) = records(out)
    assert [t.role for t in record.turns] == ["user", "bot"] * 3


def test_rolling_folders_every_n_conversations_and_across_a_restart(tmp_path: Path) -> None:
    from simulator.collect.folders import Roll, collected_folders
    from simulator.record.folder import RunFolder

    out = tmp_path / "live"
    for batch in (range(5), range(5, 8)):  # two runs of the collector
        c = collector(out, idle_s=60, roll=Roll(every=2))
        c.start()
        for number in batch:
            doc = _document([(f"question {number}", "answer")])
            for rs in doc["resourceSpans"]:  # type: ignore[attr-defined]
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        for attr in span["attributes"]:
                            if attr["key"] == "gen_ai.conversation.id":
                                attr["value"] = {"stringValue": f"k{number}"}
            c.accept(doc)
        c.tick(everything=True)
        c.stop()
    folders = collected_folders(out)
    sizes = [len(list(RunFolder.open(f).conversations())) for f in folders]
    assert sizes == [2, 2, 2, 2] and sum(sizes) == 8
    manifests = [RunFolder.open(f).read_manifest() for f in folders]
    # Rolled over: complete; the last one's collector stopped (cleanly): interrupted, the next start goes on.
    assert [m.status for m in manifests] == ["complete", "complete", "complete", "interrupted"]
    assert [len(m.scenarios) for m in manifests] == [2, 2, 2, 2]
    assert {r.bot_conversation_id for f in folders for r in RunFolder.open(f).conversations()} == {
        f"k{n}" for n in range(8)
    }


# ----------------------------------------------------------------------------------------- group commit


def _one_span_each(count: int) -> list[Any]:
    """`count` conversations of one GenAI span each, made by the real SDK (each is one export request)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for number in range(count):
        genai_turns(provider, f"one-{number}", [(f"question {number}", "answer")])
    return list(memory.get_finished_spans())


def _line_ends(spool: Path) -> dict[str, int]:
    """Each spooled span's id and where its line ends in the file (bytes); a line still being written (no
    newline yet) is not counted."""
    ends, offset = {}, 0
    for line in spool.read_bytes().splitlines(keepends=True):
        offset += len(line)
        if line.endswith(b"\n"):
            ends[json.loads(line)["s"]] = offset
    return ends


@contextmanager
def _released(gates: list[threading.Event]) -> Iterator[None]:
    """Every held sync let go on the way out, also when an assertion failed (the server can then stop)."""
    try:
        yield
    finally:
        for gate in gates:
            gate.set()


def test_concurrent_requests_share_a_sync_and_none_is_answered_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight real OTLP exporters each send one span at once while the first sync is held (a slow disk): all
    eight lines are written and none is answered; releasing the first sync answers only requests whose lines
    it covered, and one more sync answers the rest (two syncs for eight requests)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from simulator.collect import spool as spool_module

    real = spool_module._datasync
    gates = [threading.Event() for _ in range(3)]
    synced: list[int] = []  # each sync's file size when it began: the bytes it covers

    def held_sync(fd: int) -> None:
        number = len(synced)
        synced.append(os.fstat(fd).st_size)
        assert gates[number].wait(20)
        real(fd)

    monkeypatch.setattr(spool_module, "_datasync", held_sync)
    spans = _one_span_each(8)
    out = tmp_path / "live"
    c = collector(out, fsync=True, idle_s=60)
    answers: dict[str, SpanExportResult] = {}

    def export(span: Any) -> None:
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=15)
        answers[format(span.context.span_id, "016x")] = exporter.export([span])
        exporter.shutdown()

    with receiver(c) as url, _released(gates):
        threads = [threading.Thread(target=export, args=(span,)) for span in spans]
        for thread in threads:
            thread.start()
        wait_for(lambda: len(_line_ends(c.spool.spool_path)) == 8)  # every request has written its line
        time.sleep(0.3)  # room for a wrong early answer to arrive
        assert answers == {} and len(synced) == 1  # ... and waits for the one sync in flight
        ends = _line_ends(c.spool.spool_path)
        covered = {span_id for span_id, end in ends.items() if end <= synced[0]}  # written before it began
        gates[0].set()
        wait_for(lambda: len(answers) >= 1)
        time.sleep(0.3)
        assert set(answers) <= covered  # the first sync answers only requests whose lines it covered
        gates[1].set()
        gates[2].set()
        for thread in threads:
            thread.join(20)
    assert answers == dict.fromkeys(ends, SpanExportResult.SUCCESS)
    assert len(synced) <= 2 and synced[-1] == c.spool.spool_path.stat().st_size
    assert c.counts["spans"] == 8


def test_a_failed_sync_is_refused_and_the_spool_rewritten_before_the_next_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync that fails (the disk full) answers 503 with why, never 200; the next request rewrites the
    spool from what the collector holds, so the exporter's retry is answered 200 once the spans are on disk,
    and the conversation is written once."""
    import errno

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from simulator.collect import spool as spool_module

    real = spool_module._datasync
    failures = [OSError(errno.ENOSPC, "No space left on device")]

    def full_once(fd: int) -> None:
        if failures:
            raise failures.pop()
        real(fd)

    monkeypatch.setattr(spool_module, "_datasync", full_once)
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    genai_turns(provider, "kid", TURNS)
    body = encode_spans(memory.get_finished_spans()).SerializeToString()
    out = tmp_path / "live"
    c = collector(out, fsync=True, idle_s=3)  # not closed before the retry
    headers = {"Content-Type": "application/x-protobuf"}
    with receiver(c) as url:
        refused = httpx.post(f"{url}/v1/traces", content=body, headers=headers)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
        assert "could not write its spool to disk (No space left on device)" in refused.text
        assert "retry later" in refused.text
        assert c.spool.broken is not None and c.counts["refused_disk"] == 1
        retried = httpx.post(f"{url}/v1/traces", content=body, headers=headers)
        assert retried.status_code == 200 and c.spool.broken is None  # rewritten (and synced) first
        assert set(_line_ends(c.spool.spool_path)) == {
            format(s.context.span_id, "016x") for s in memory.get_finished_spans()
        }
        assert "No space left on device" in httpx.get(f"{url}/status").json()["health"]["last_problem"]
        wait_for(lambda: c.counts["conversations"] == 1)
    (record,) = records(out)
    assert [t.text for t in record.turns] == [m for pair in TURNS for m in pair]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_collector_marks_its_folder_interrupted_and_says_how_to_go_on(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """Ctrl-C (or SIGTERM): the day's folder is `interrupted`, not left `running`, and the message names
    what works (a start with the same --out; collect has no --resume). The next start goes on with it."""
    from simulator.collect.folders import collected_folders
    from simulator.record.folder import RunFolder

    out, port = tmp_path / "live", _free_port()
    url = f"http://127.0.0.1:{port}"
    for turns in (TURNS, MORE):
        process = _start(out, port, "1", stderr=subprocess.PIPE)
        try:
            provider = tracer(url)
            genai_turns(provider, f"kid-{len(turns)}", turns)
            provider.shutdown()
            wait_for(lambda: httpx.get(f"{url}/status").json()["counts"].get("conversations") == 1)
            (folder,) = collected_folders(out)
            assert RunFolder.open(folder).read_manifest().status == "running"
        finally:
            process.send_signal(stop)
            _, err = process.communicate(timeout=60)
        message = err.decode()
        assert "--resume" not in message and "Traceback" not in message
        if stop == signal.SIGINT:
            assert f"go on by starting it again: simulator collect --out {out}" in message
        manifest = RunFolder.open(folder).read_manifest()
        assert manifest.status == "interrupted" and manifest.ended_at is not None
    assert collected_folders(out) == [folder] and len(records(out)) == 2  # the second start went on with it
