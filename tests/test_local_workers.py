"""`simulator run --workers N` on the local backend: forked shard processes merged into one record that
matches a one-process run of the same suite (same conversations, counts and verdicts)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.cli import main
from simulator.engine.local_workers import CONVERSATIONS_PER_WORKER, auto_workers, parse_workers
from simulator.errors import UserError
from simulator.record.folder import RunFolder
from tests.test_report_support import BOT, write_suite

ROOT = Path(__file__).resolve().parent.parent

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


# The stateless bot, but a conversation about an ankle waits for a gate file: a run is stopped with those in
# flight and everything else finished, whatever the machine's speed.
GATED_BOT = STATELESS_BOT.replace(
    "    def send(self, text):\n        self.turn += 1\n",
    "    async def send(self, text):\n        self.turn += 1\n"
    "        while 'ankle' in text.lower() and not os.path.exists(os.environ['GATE']):\n"
    "            await asyncio.sleep(0.02)\n",
).replace("from simulator.bots import Reply", "import asyncio, os\nfrom simulator.bots import Reply")
assert GATED_BOT != STATELESS_BOT


def _at_a_terminal() -> None:
    """A foreground job's Ctrl-C: SIGINT at its default in the child, whatever the test process inherited (a
    shell without job control starts a background job, such as a CI script's, with SIGINT ignored, and a
    Python program keeps an ignored SIGINT ignored: `simulator.run` in a script started with `&` is not
    stopped by the terminal's Ctrl-C, as any program there)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _lines(files: Any) -> int:
    return sum(len(f.read_text().splitlines()) for f in files if f.exists())


def _statuses(staging: Path) -> set[str]:
    return {
        json.loads(m.read_text())["status"] for m in staging.glob("shard-*/manifest.json") if m.read_text()
    }


def _gated_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The suite of 21 conversations whose 3 about an ankle wait for the gate file (the second path)."""
    suite = write_suite(tmp_path, runs=3, bot=GATED_BOT)
    suite.write_text(suite.read_text().replace("concurrency: 1", "concurrency: 8"))  # past the gated ones
    gate = tmp_path / "gate"
    monkeypatch.setenv("GATE", str(gate))
    monkeypatch.chdir(tmp_path)
    return suite, gate


def _stop_part_way(suite: Path, out: Path, stop: str = "ctrl-c", workers: str | None = "2") -> None:
    """Run `suite` into `out` in a process of its own (with `--workers`, or in one process) until all but
    the gated conversations are saved, then stop it: Ctrl-C at the terminal (SIGINT to the group) or
    `kill -9` of the parent alone. The gate must not exist yet."""
    staging = out.with_name(f".{out.name}.shards")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(suite.parent), str(ROOT)])}
    command = [sys.executable, "-m", "simulator", "run", str(suite), "--out", str(out), "--no-progress"]
    parent = subprocess.Popen(
        [*command, *(["--workers", workers] if workers else [])],
        env=env,
        start_new_session=True,
        preexec_fn=_at_a_terminal,
        stderr=subprocess.PIPE,
        text=True,
    )
    saved = staging / "shard-*" if workers else out
    while _lines(saved.parent.glob(f"{saved.name}/conversations.jsonl")) < 18:  # all but the 3 ankle
        assert parent.poll() is None  # conversations (a hang ends by pytest's timeout)
        time.sleep(0.05)
    if stop == "ctrl-c":
        os.killpg(parent.pid, signal.SIGINT)
        assert parent.wait() == 130
        assert f"simulator run --resume {out}" in (parent.stderr.read() if parent.stderr else "")
    else:
        assert workers, "a one-process run killed with -9 stays `running`"
        parent.kill()
        parent.wait()
        while "running" in _statuses(staging):  # the workers notice their parent is gone and stop
            time.sleep(0.05)
    if workers:
        assert not out.exists() and _statuses(staging) == {"interrupted"}
    else:
        assert RunFolder.open(out).read_manifest().status == "interrupted"


def _done_once(run: Path, one: Path) -> None:
    """Every conversation planned is in `run`'s record exactly once (none lost, none run twice), as in `one`,
    a one-process run of the same suite."""
    planned = RunFolder.open(run).read_manifest().planned
    ids = [json.loads(line)["id"] for line in (run / "conversations.jsonl").read_text().splitlines()]
    expected = [json.loads(line)["id"] for line in (one / "conversations.jsonl").read_text().splitlines()]
    assert planned == 21 and len(ids) == planned and sorted(ids) == sorted(set(expected))


@pytest.mark.parametrize("stop", ["ctrl-c", "kill-9-parent"])
def test_a_stopped_workers_run_resumes_into_the_record_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stop: str
) -> None:
    """What the workers finished is kept, the message names the command, and `--resume OUT` finishes and
    merges the run."""
    suite, gate = _gated_suite(tmp_path, monkeypatch)
    out = tmp_path / "many"
    _stop_part_way(suite, out, stop)
    gate.touch()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert "merged into one record" in capsys.readouterr().out
    assert not (tmp_path / ".many.shards").exists()
    assert main(["run", str(suite), "--out", str(tmp_path / "one"), "--no-progress"]) == 0
    assert _record(out) == _record(tmp_path / "one")


@pytest.mark.parametrize("workers", ["2", None])
def test_a_stopped_run_resumes_from_python_as_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str | None
) -> None:
    """`simulator.resume(OUT)` finishes a stopped run, `--workers` or not, into the record
    `simulator run --resume OUT` makes of its twin: every planned conversation done exactly once."""
    suite, gate = _gated_suite(tmp_path, monkeypatch)
    python, command_line, one = tmp_path / "python", tmp_path / "cli", tmp_path / "one"
    for out in (python, command_line):
        _stop_part_way(suite, out, workers=workers)
    gate.touch()
    result = simulator.resume(python)
    assert isinstance(result, simulator.Result) and result.folder == python
    assert not (tmp_path / ".python.shards").exists()
    assert RunFolder.open(python).read_manifest().status == "complete"
    assert main(["run", "--resume", str(command_line), "--no-progress"]) == 0
    assert main(["run", str(suite), "--out", str(one), "--no-progress"]) == 0
    for run in (python, command_line):
        _done_once(run, one)
    assert _record(python) == _record(command_line) == _record(one)
    assert result.report.run.status == "complete"  # the Result reads the merged record


def _one_shard_fails(monkeypatch: pytest.MonkeyPatch, index: int) -> Any:
    """`run_suite` as it is, but the worker of shard `index` raises after its shard was written (kept, not
    merged); the real `run_suite`, to put back."""
    import simulator.engine.runner as runner

    real = runner.run_suite

    async def fails(suite: Any, scenarios: Any, options: Any) -> Any:
        result = await real(suite, scenarios, options)
        if options.shard is not None and options.shard.index == index:
            raise RuntimeError("the machine fell over")
        return result

    monkeypatch.setattr(runner, "run_suite", fails)
    return real


def test_a_workers_run_with_a_failed_worker_resumes_with_or_without_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import simulator.engine.runner as runner

    suite = write_suite(tmp_path, runs=3, bot=STATELESS_BOT)
    monkeypatch.chdir(tmp_path)
    real = _one_shard_fails(monkeypatch, 2)
    out = tmp_path / "many"
    assert main(["run", str(suite), "--out", str(out), "--no-progress", "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert f"finish the run with `simulator run --resume {out}`" in err and "Traceback" not in err
    monkeypatch.setattr(runner, "run_suite", real)
    for flags in (["--seed", "3"], ["--rpm", "10"]):  # it resumes as it began
        assert main(["run", "--resume", str(out), *flags, "--no-progress"]) == 2
        assert f"leave out {flags[0]}" in capsys.readouterr().err
    assert main(["run", "--resume", str(out), "--workers", "2", "--no-progress"]) == 0
    assert main(["run", str(suite), "--out", str(tmp_path / "one"), "--no-progress"]) == 0
    assert _record(out) == _record(tmp_path / "one")


def test_a_workers_run_with_a_failed_worker_resumes_from_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The failure names both ways to finish the run, and `simulator.resume` merges the shards the workers
    finished before one of them failed."""
    import simulator.engine.runner as runner

    suite = write_suite(tmp_path, runs=3, bot=STATELESS_BOT)
    monkeypatch.chdir(tmp_path)
    real = _one_shard_fails(monkeypatch, 1)
    out = tmp_path / "many"
    assert main(["run", str(suite), "--out", str(out), "--no-progress", "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert f"`simulator run --resume {out}`, or `simulator.resume({str(out)!r})` in Python" in err
    monkeypatch.setattr(runner, "run_suite", real)
    assert simulator.resume(str(out)).folder == out and not (tmp_path / ".many.shards").exists()
    assert main(["run", str(suite), "--out", str(tmp_path / "one"), "--no-progress"]) == 0
    _done_once(out, tmp_path / "one")
    assert _record(out) == _record(tmp_path / "one")


def test_python_resume_of_a_workers_run_refuses_changes_and_runs_inside_an_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What would change a `--workers` run is refused before anything runs, each named with the call that
    works; the resume runs where an event loop runs already (a notebook), after a `kill -9` of the parent."""
    import asyncio

    from simulator.api.options import RayBackendOptions

    suite, gate = _gated_suite(tmp_path, monkeypatch)
    out, staging = tmp_path / "many", tmp_path / ".many.shards"
    _stop_part_way(suite, out, "kill-9-parent")
    gate.touch()
    changes: list[tuple[dict[str, Any], str]] = [
        ({"bot": lambda text: "Please book an appointment with your GP."}, "bot="),
        ({"scenarios": [{"id": "x"}]}, "scenarios="),
        ({"adjust": lambda suite: {}}, "adjust="),
        ({"options": simulator.RunOptions(backend=RayBackendOptions())}, "options.backend"),
    ]
    for given, named in changes:
        with pytest.raises(simulator.UserError) as caught:
            simulator.resume(out, **given)
        said = str(caught.value)
        assert f"{out} is a --workers run" in said and f"leave out {named}" in said
        assert f"simulator.resume({str(out)!r})" in said
    assert not out.exists() and _statuses(staging) == {"interrupted"}  # refused: nothing ran

    async def in_a_notebook() -> Any:
        return simulator.resume(out)  # this thread's loop is running, as in a Jupyter cell

    result = asyncio.run(in_a_notebook())
    assert result.folder == out and not staging.exists()
    assert main(["run", str(suite), "--out", str(tmp_path / "one"), "--no-progress"]) == 0
    _done_once(out, tmp_path / "one")
    assert _record(out) == _record(tmp_path / "one")


def test_a_workers_run_whose_worker_never_started_says_how_to_start_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import simulator.engine.runner as runner

    suite = write_suite(tmp_path, runs=1, bot=STATELESS_BOT)
    monkeypatch.chdir(tmp_path)

    async def never(suite: Any, scenarios: Any, options: Any) -> Any:
        raise KeyboardInterrupt  # stopped before it made its shard folder

    monkeypatch.setattr(runner, "run_suite", never)
    out = tmp_path / "many"
    assert main(["run", str(suite), "--out", str(out), "--no-progress", "--workers", "2"]) == 2
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "never started its shard" in err and f"--workers 2 --out {out}" in err


# A script that resumes a run from Python, as a user would, with nothing caught: what Ctrl-C leaves on the
# terminal is Python's own report of the KeyboardInterrupt.
RESUME_SCRIPT = """
import sys
import simulator
print("resuming", flush=True)
simulator.resume(sys.argv[1])
"""


@pytest.mark.parametrize("workers", ["2", None])
def test_ctrl_c_in_a_python_resume_keeps_what_finished_and_says_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str | None
) -> None:
    """Ctrl-C during `simulator.resume(OUT)` (of a stopped `--workers` run, or of a one-process run) is
    still a KeyboardInterrupt, and it says what is kept and the call that finishes the run; the workers
    stop and save, so that call then finishes it into the record of one process."""
    suite, gate = _gated_suite(tmp_path, monkeypatch)
    out, staging = tmp_path / "many", tmp_path / ".many.shards"
    _stop_part_way(suite, out, workers=workers)
    shards = sorted(staging.glob("shard-*/manifest.json")) if workers else [out / "manifest.json"]
    sessions = [len(json.loads(m.read_text())["sessions"]) for m in shards]
    (tmp_path / "resume.py").write_text(RESUME_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    resumer = subprocess.Popen(
        [sys.executable, str(tmp_path / "resume.py"), str(out)],
        env=env,
        start_new_session=True,
        preexec_fn=_at_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    # Stopped once every unfinished part has started again (a new session in its manifest, status running)
    # and waits at the gate: Ctrl-C at the terminal (SIGINT to the group).
    def resumed() -> bool:
        manifests = [json.loads(m.read_text() or "{}") for m in shards]
        return all(
            len(m.get("sessions", [])) > before and m.get("status") == "running"
            for m, before in zip(manifests, sessions, strict=True)
        )

    while not resumed():
        assert resumer.poll() is None, resumer.communicate()
        time.sleep(0.05)
    os.killpg(resumer.pid, signal.SIGINT)
    _, err = resumer.communicate(timeout=120)
    assert resumer.returncode == -signal.SIGINT, err  # Python's own end for an uncaught KeyboardInterrupt
    assert "KeyboardInterrupt" in err.splitlines(), err  # raised on, as a Python user expects
    kept = "the workers' shards are kept" if workers else f"what finished is saved in {out}"
    assert kept in err and f"simulator.resume({str(out)!r})" in err, err
    assert err.count("interrupted: ") == 1 and err.rstrip().splitlines()[-1].startswith("interrupted: "), err
    statuses = {json.loads(m.read_text())["status"] for m in shards}
    assert statuses == {"interrupted"} and not (workers and out.exists())
    gate.touch()
    assert simulator.resume(out).folder == out and not staging.exists()
    assert main(["run", str(suite), "--out", str(tmp_path / "one"), "--no-progress"]) == 0
    _done_once(out, tmp_path / "one")
    assert _record(out) == _record(tmp_path / "one")


RUN_SCRIPT = """
import sys
import simulator
simulator.run(sys.argv[1], **({"out": sys.argv[2]} if len(sys.argv) > 2 else {}))
"""


@pytest.mark.parametrize("out_given", [True, False])
def test_ctrl_c_in_a_python_run_names_its_folder_and_the_call_that_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out_given: bool
) -> None:
    """`simulator.run` stopped by Ctrl-C is a KeyboardInterrupt that names the folder it saved to (the one
    given, or the runs/<run-id> it picked) and `simulator.resume` of it, which then finishes the run."""
    suite, gate = _gated_suite(tmp_path, monkeypatch)
    (tmp_path / "run.py").write_text(RUN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    given = [str(tmp_path / "mine")] if out_given else []
    runner = subprocess.Popen(
        [sys.executable, str(tmp_path / "run.py"), str(suite), *given],
        cwd=tmp_path,
        env=env,
        start_new_session=True,
        preexec_fn=_at_a_terminal,
        stderr=subprocess.PIPE,
        text=True,
    )
    while (
        _lines(tmp_path.glob("*/*/conversations.jsonl")) + _lines(tmp_path.glob("*/conversations.jsonl")) < 18
    ):
        assert runner.poll() is None, runner.communicate()
        time.sleep(0.05)
    os.killpg(runner.pid, signal.SIGINT)
    _, err = runner.communicate(timeout=120)
    assert runner.returncode == -signal.SIGINT and "KeyboardInterrupt" in err.splitlines(), err
    [folder] = [m.parent for m in tmp_path.glob("**/manifest.json")]
    shown = str(folder) if out_given else str(folder.relative_to(tmp_path))  # as the run names it
    assert err.rstrip().splitlines()[-1] == (
        f"interrupted: what finished is saved in {shown}; finish it with simulator.resume({shown!r})"
    ), err
    assert RunFolder.open(folder).read_manifest().status == "interrupted"
    gate.touch()
    assert simulator.resume(shown).report.run.status == "complete"
