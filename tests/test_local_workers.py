"""`simulator run --workers N` on the local backend: forked shard processes merged into one record that
matches a one-process run of the same suite (same conversations, counts and verdicts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.engine.local_workers import CONVERSATIONS_PER_WORKER, auto_workers, parse_workers
from simulator.errors import UserError
from simulator.record.folder import RunFolder
from tests.test_report_support import BOT, write_suite

# The tiny bot decides by a count kept in its module, which depends on the process; this one decides by the
# user's first message alone, so a conversation's course does not depend on which process ran it.
STATELESS_BOT = BOT.replace("index = SEEN.get(key, 0)", "index = sum(map(ord, text))")
assert STATELESS_BOT != BOT


def _record(run: Path) -> tuple[Any, ...]:
    folder = RunFolder.open(run)
    manifest = folder.read_manifest()
    conversations = sorted(
        (r.id, r.stop_reason, str(r.final_state), tuple(t.text for t in r.turns))
        for r in folder.conversations()
    )
    verdicts = sorted((v.conversation_id, v.criterion_id, v.kind, v.result) for v in folder.verdicts())
    counts = manifest.counts
    return conversations, verdicts, counts.conversations, dict(counts.stop_reasons), manifest.planned


@pytest.mark.parametrize("workers", ["2", "3"])
def test_workers_give_the_record_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path, runs=3, bot=STATELESS_BOT)
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(suite), "--out", str(tmp_path / "one"), "--no-progress"]) == 0
    assert (
        main(["run", str(suite), "--out", str(tmp_path / "many"), "--no-progress", "--workers", workers]) == 0
    )
    assert f"{workers} worker processes" in capsys.readouterr().out
    one, many = _record(tmp_path / "one"), _record(tmp_path / "many")
    assert one[0] and one[1]  # something was run and judged
    assert many == one
    assert not (tmp_path / ".many.shards").exists()  # merged: the shard folders are gone
    assert RunFolder.open(tmp_path / "many").read_manifest().shard is None  # an ordinary run folder


def test_workers_refuse_an_existing_folder_and_bad_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write_suite(tmp_path, runs=1)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken").mkdir()
    assert main(["run", str(suite), "--out", str(tmp_path / "taken"), "--workers", "2", "--no-progress"]) == 2
    for bad in ("0", "-1", "many"):
        with pytest.raises(UserError, match="--workers"):
            parse_workers(bad)
    assert parse_workers("auto") >= 1 and parse_workers("4") == 4


def test_auto_forks_only_when_each_worker_gets_enough_conversations() -> None:
    per = CONVERSATIONS_PER_WORKER
    assert [auto_workers(n, cores=4) for n in (1, per, 2 * per - 1)] == [1, 1, 1]
    assert [auto_workers(n, cores=4) for n in (2 * per, 3 * per, 100 * per)] == [2, 3, 4]
    assert auto_workers(100 * per, cores=1) == 1
    assert parse_workers("auto", planned=per) == 1 and parse_workers("2", planned=1) == 2


def test_auto_runs_a_small_plan_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path, runs=2, bot=STATELESS_BOT)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "auto"
    assert main(["run", str(suite), "--out", str(out), "--no-progress", "--workers", "auto"]) == 0
    printed = capsys.readouterr().out
    assert "--workers auto: one process for" in printed and "worker processes" not in printed
    assert _record(out)[0] and not (tmp_path / ".auto.shards").exists()


@pytest.mark.parametrize(
    ("workers", "concurrency", "connections", "rpm"), [(2, 8, 16, 300.0), (3, 5, 4, 90.0)]
)
def test_workers_share_the_suite_s_limits_and_the_record_keeps_the_run_s(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    workers: int,
    concurrency: int,
    connections: int,
    rpm: float,
) -> None:
    """N workers together keep to the suite's concurrency, connections and request budget (each ran with 1/N,
    rounded up, as its shard's manifest records), and the merged record states the limits the user set."""
    import yaml

    import simulator.engine.local_workers as local

    suite = write_suite(tmp_path, runs=2, bot=STATELESS_BOT)
    data = yaml.safe_load(suite.read_text())
    data["concurrency"] = concurrency
    data["providers"] = {"openai": {"max_connections": connections, "rpm": rpm}}
    suite.write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    shard_limits: list[tuple[int, int, float | None]] = []
    real_merge = local.merge_shards

    def merge(paths: list[Path], out: Path, **kwargs: Any) -> Any:
        for path in paths:  # what each worker ran with, before the shard folders are merged and removed
            ran = RunFolder.open_unsealed(path).read_manifest().suite
            assert ran is not None
            shard_limits.append(
                (ran.concurrency, ran.providers["openai"].max_connections, ran.providers["openai"].rpm)
            )
        return real_merge(paths, out, **kwargs)

    monkeypatch.setattr(local, "merge_shards", merge)
    out = tmp_path / "many"
    assert main(["run", str(suite), "--out", str(out), "--no-progress", "--workers", str(workers)]) == 0
    share = (-(-concurrency // workers), -(-connections // workers), rpm / workers)
    assert shard_limits == [share] * workers
    recorded = RunFolder.open(out).read_manifest().suite
    assert recorded is not None and recorded.concurrency == concurrency
    assert (recorded.providers["openai"].max_connections, recorded.providers["openai"].rpm) == (
        connections,
        rpm,
    )
