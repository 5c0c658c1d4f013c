"""The pytest plugin (entry point `pytest11`): scenario suites as tests, and `simulator_run` for rates.

`pytest --simulator-suite scenarios/triage/suite.yaml` (or the ini option `simulator_suites`, files or
folders holding suite.yaml) gives one test per scenario: the suite runs once (only the selected scenarios),
a scenario fails when one of its conversations failed a criterion, with the failing verdicts and the end of
the transcript in the report, and errors (crashed bot, failed provider call) when a conversation errored:
an error is never a pass or a fail. Scenario tags become markers (`-m cardiac`), or select with
`--simulator-tags`. Offline by default: the simulated user is the offline one and LLM criteria are left
unjudged, so CI needs no key; `--simulator-online` uses the models the suite names. Under pytest-xdist
each suite still runs once, into one folder, whichever workers its scenarios go to (docs/ci.md).
"""

from __future__ import annotations

__all__: list[str] = []


import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from simulator.api.result import Result as SimulatorResult
    from simulator.report.model import Transcript

EXCERPT_TURNS = 6


def __getattr__(name: str) -> Any:
    """`SimulatorResult`, the result `simulator_run` returns, is the Python API's Result (loaded on use)."""
    if name == "SimulatorResult":
        from simulator.api.result import Result

        return Result
    raise AttributeError(f"module 'simulator.plugin' has no attribute {name!r}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("simulator", "simulator scenario suites")
    group.addoption(
        "--simulator-suite",
        action="append",
        default=[],
        metavar="SUITE",
        help="a suite.yaml (or a folder) to test",
    )
    group.addoption("--simulator-tags", help="only scenarios with any of these comma-separated tags")
    group.addoption(
        "--simulator-online",
        action="store_true",
        help="use the suite's user and judge models (default: offline)",
    )
    group.addoption(
        "--simulator-out", type=Path, help="folder for the run folders (default: a temporary folder)"
    )
    parser.addini(
        "simulator_suites", "suite files or folders holding suite.yaml to test", type="paths", default=[]
    )


def run_for_pytest(
    suite_path: Path,
    *,
    out: Path,
    tags: list[str] | None = None,
    scenario_ids: set[str] | None = None,
    runs: int | None = None,
    online: bool = False,
) -> SimulatorResult:
    """Run a suite (offline unless `online`) into `out` through the Python API; its Result holds the
    report. `scenario_ids` are ids of `Suite.scenarios_to_run` (persona-factor variants included)."""
    from simulator import api
    from simulator.engine.runner import RunOptions
    from simulator.errors import UserError

    suite = api.load_suite(suite_path, runs=runs)
    if suite.matrix is not None:
        raise UserError(f"{suite_path}: a matrix suite; run it with simulator run and report the leaderboard")
    if not online:
        suite.user.model = "offline"
        suite.user.models = None
        suite.judges.model = None
    plan = api.prepare(suite, tags=tags or None, scenario_ids=scenario_ids)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # python bots name modules under the folder tests run from
    return api.run_sync(api.execute(plan, RunOptions(out=out, progress=False)))


@pytest.fixture
def simulator_run(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., SimulatorResult]:
    """Run a suite from a test: `result = simulator_run("scenarios/triage/suite.yaml", tags=["cardiac"])`.
    Offline unless the test session was started with --simulator-online."""
    online = bool(request.config.getoption("--simulator-online"))
    counter = iter(range(1_000_000))

    def run(suite: str | Path, *, tags: list[str] | None = None, runs: int | None = None) -> SimulatorResult:
        out = tmp_path / f"run-{next(counter)}"
        return run_for_pytest(Path(suite), out=out, tags=tags, runs=runs, online=online)

    return run


class ScenarioFailed(Exception):
    """A scenario's conversation failed a criterion; the message holds verdicts and transcript."""


class SuiteFile(pytest.File):
    """A suite.yaml: one item per scenario; the suite runs once, for the items still selected."""

    result: SimulatorResult | None = None
    failure: str | None = None  # why the suite could not run: every item of it reports this once

    def collect(self) -> Iterator[pytest.Item]:
        from simulator.config.suite import load_suite
        from simulator.errors import UserError

        try:
            suite = load_suite(self.path)
            # Every scenario the suite runs, persona-factor variants included: one item each.
            scenarios = suite.scenarios_to_run(_tags(self.config) or None)
        except UserError as exc:
            raise self.CollectError(f"simulator: {exc.render()}") from None
        if suite.matrix is not None:
            message = f"{self.path}: a matrix suite is not collected as tests; run it with simulator run"
            self.warn(pytest.PytestCollectionWarning(message))
            return
        # Under pytest-xdist a suite runs once whichever workers its items go to (`_run_suite_once`); the
        # group mark only keeps them on one worker (--dist loadgroup), where xdist still honours it.
        group = pytest.mark.xdist_group(f"simulator:{self.path}") if self._xdist() else None
        for scenario in scenarios:
            item = ScenarioItem.from_parent(self, name=scenario.id)
            item.scenario_file, item.line = scenario._source, scenario._line
            if group is not None:
                item.add_marker(group)
            for tag in scenario.tags:
                self.config.addinivalue_line("markers", f"{tag}: simulator scenario tag")
                item.add_marker(getattr(pytest.mark, tag))
            yield item

    def _xdist(self) -> bool:
        return bool(self.config.pluginmanager.hasplugin("xdist"))

    def run_once(self) -> SimulatorResult:
        if self.failure is not None:
            pytest.fail(self.failure, pytrace=False)
        if self.result is None:
            selected = {
                i.name for i in self.session.items if isinstance(i, ScenarioItem) and i.parent is self
            }

            def run(out: Path) -> SimulatorResult:
                return run_for_pytest(
                    self.path,
                    out=out,
                    tags=_tags(self.config),
                    scenario_ids=selected,
                    online=bool(self.config.getoption("--simulator-online")),
                )

            folder, self.failure = _run_suite_once(self.config, self.path, run)
            if self.failure is not None:
                pytest.fail(self.failure, pytrace=False)
            from simulator.api.result import Result

            self.result = Result(folder)
        return self.result


class ScenarioItem(pytest.Item):
    """One scenario of a suite: passes when every conversation of it passed (or was not judged)."""

    scenario_file: str = ""
    line: int | None = None

    def setup(self) -> None:
        parent = self.parent
        assert isinstance(parent, SuiteFile)
        result = parent.run_once()
        errored = [t for t in _transcripts(result, self.name) if t.status == "error"]
        if errored:
            # Setup, so pytest reports an ERROR: an errored conversation is neither a pass nor a fail.
            detail = "\n".join(_describe(t) for t in errored)
            pytest.fail(
                f"scenario {self.name} errored (not counted as pass or fail):\n{detail}", pytrace=False
            )

    def runtest(self) -> None:
        parent = self.parent
        assert isinstance(parent, SuiteFile) and parent.result is not None
        failed = [t for t in _transcripts(parent.result, self.name) if t.status == "fail"]
        if failed:
            raise ScenarioFailed("\n".join(_describe(t) for t in failed))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed):
            return f"scenario {self.name} failed:\n{excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return Path(self.scenario_file or self.path), self.line, f"scenario {self.name}"


def _transcripts(result: SimulatorResult, scenario_id: str) -> list[Transcript]:
    return [t for t in result.report.transcripts if t.scenario_id == scenario_id]


def _describe(transcript: Transcript) -> str:
    """The failing verdicts with their reasons and evidence, then the last turns of the transcript."""
    lines = [f"--- {transcript.id} (stop: {transcript.stop_reason}, final state: {transcript.final_state})"]
    if transcript.error:
        lines.append(f"  error: {transcript.error}")
    for verdict in transcript.verdicts:
        if verdict.result in ("fail", "error"):
            lines.append(f"  {verdict.result.upper()} {verdict.criterion_id}: {verdict.reasoning}")
            lines += [f'    evidence: "{ev.quote}"' for ev in verdict.evidence]
    lines.append("  transcript (last turns):")
    for turn in transcript.turns[-EXCERPT_TURNS:]:
        text = " / ".join(turn.messages)
        lines.append(f"    {turn.role}: {text[:300] + ('…' if len(text) > 300 else '')}")
    return "\n".join(lines)


_RUNS = pytest.StashKey[list[Path]]()
_OUT = pytest.StashKey[Path]()


_SHARED = pytest.StashKey[Path]()


def _run_suite_once(
    config: pytest.Config, suite_path: Path, run: Callable[[Path], object]
) -> tuple[Path, str | None]:
    """Run a suite once per test session, whichever pytest-xdist worker (or the only process) asks first,
    and answer every later asker with the same run folder, or the same reason it could not run.

    Workers cannot know which items the scheduler will send them, and no scheduling mode keeps a suite on
    one worker reliably, so they agree through a claim file under a lock, in a folder the whole session
    shares: the first to take the lock runs the suite into the first free folder under --simulator-out,
    the others wait for the lock, then read that folder."""
    from simulator.errors import UserError
    from simulator.record.redact import redact

    key = hashlib.sha256(str(suite_path.resolve()).encode()).hexdigest()[:16]
    claim = _shared_dir(config) / f"{key}.json"
    with _locked(_shared_dir(config) / f"{key}.lock"):
        if claim.exists():
            told = json.loads(claim.read_text())
            if not told["done"]:  # the worker that claimed it stopped, or raised, before it finished
                return Path(told["folder"]), told["failure"] or (
                    f"simulator: the run of {suite_path} into {told['folder']} did not finish"
                )
            return Path(told["folder"]), told["failure"]
        out = _free_folder(_out_dir(config), suite_path)
        claim.write_text(json.dumps({"folder": str(out), "done": False, "failure": None}))
        try:
            run(out)
        except UserError as exc:
            failure: str | None = f"simulator: {exc.render()}"
        else:
            failure = None
            config.stash.setdefault(_RUNS, []).append(out)
            workeroutput = getattr(config, "workeroutput", None)  # an xdist worker: tell the controller
            if workeroutput is not None:
                workeroutput.setdefault("simulator_runs", []).append(str(out))
        # The failure quotes what the run met (a bot's words): written redacted; the folder is a path, kept.
        told_failure = None if failure is None else redact(failure)
        claim.write_text(json.dumps({"folder": str(out), "done": True, "failure": told_failure}))
        return out, failure


def _free_folder(out: Path, suite_path: Path) -> Path:
    """The suite's run folder under `out`: named after the suite's folder; two suites in folders of the
    same name (or a folder a previous session left) run side by side as name-2, name-3, ..."""
    folder = out / suite_path.parent.name
    for index in range(2, 10_000):
        if not folder.exists():
            break
        folder = folder.with_name(f"{suite_path.parent.name}-{index}")
    return folder


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (waiting for it), released however the holder ends; the kernel
    releases it too when the holding process dies. Not POSIX: no lock (as record/folder.py's writer lock)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _shared_dir(config: pytest.Config) -> Path:
    """The folder this test session's processes share for their claims: made by the controller (or the
    only process) and handed to every xdist worker, removed when the session ends."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "simulator_shared" in workerinput:
        return Path(workerinput["simulator_shared"])
    if _SHARED not in config.stash:
        # In pytest's own temporary folder when it has one: nothing of a session in the system's temp folder,
        # where another session's claims would be seen (and a killed session's left).
        factory = getattr(config, "_tmp_path_factory", None)
        if factory is not None:
            shared = factory.mktemp("simulator-claims", numbered=True)
        else:
            shared = Path(tempfile.mkdtemp(prefix="simulator-pytest-claims-"))
        config.add_cleanup(lambda: shutil.rmtree(shared, ignore_errors=True))
        config.stash[_SHARED] = shared
    return config.stash[_SHARED]


def _tags(config: pytest.Config) -> list[str]:
    value = config.getoption("--simulator-tags") or ""
    return [t for t in value.split(",") if t]


def _out_dir(config: pytest.Config) -> Path:
    """--simulator-out, else a folder in pytest's own temporary folder (pytest keeps the last few
    sessions' and deletes older ones), never a folder left behind in the system's temp folder."""
    if _OUT not in config.stash:
        workerinput = getattr(config, "workerinput", None)  # an xdist worker: the controller's folder
        chosen = config.getoption("--simulator-out")
        if workerinput is not None and "simulator_out" in workerinput:
            chosen = Path(workerinput["simulator_out"])
        if chosen is None:
            factory = getattr(config, "_tmp_path_factory", None)  # pytest's tmp_path_factory (tmpdir plugin)
            if factory is not None:
                chosen = factory.mktemp("simulator-pytest", numbered=True)
            else:
                chosen = Path(tempfile.mkdtemp(prefix="simulator-pytest-"))
                config.add_cleanup(lambda: shutil.rmtree(chosen, ignore_errors=True))
        config.stash[_OUT] = chosen
    return config.stash[_OUT]


def _suite_paths(config: pytest.Config) -> list[Path]:
    """Suites named on the command line and in the ini file; a folder stands for every suite.yaml in it."""
    named = [Path(p) for p in config.getoption("--simulator-suite")] + list(config.getini("simulator_suites"))
    found: dict[Path, Path] = {}
    for path in named:
        path = path if path.is_absolute() else Path(config.invocation_params.dir) / path
        if not path.exists():
            raise pytest.UsageError(f"--simulator-suite {path}: no such file or folder; name a suite.yaml")
        files = sorted(path.rglob("suite.y*ml")) if path.is_dir() else [path]
        for file in files:
            found.setdefault(file.resolve(), file)
    return list(found.values())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Add one item per scenario of every configured suite, before -m and -k deselect."""
    for path in _suite_paths(config):
        suite_file = SuiteFile.from_parent(session, path=path)
        collected = session.genitems(suite_file)
        items.extend(collected)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, on the controller: every worker writes under one --simulator-out folder (the
    controller's temporary one by default) and claims suites in one shared folder (`_run_suite_once`)."""
    config = node.config
    if _suite_paths(config):
        node.workerinput["simulator_out"] = str(_out_dir(config).absolute())
        node.workerinput["simulator_shared"] = str(_shared_dir(config))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist, on the controller: the run folders a worker wrote, for the summary."""
    runs = getattr(node, "workeroutput", {}).get("simulator_runs", [])
    node.config.stash.setdefault(_RUNS, []).extend(Path(folder) for folder in runs)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for folder in config.stash.get(_RUNS, []):
        terminalreporter.write_line(f"simulator run folder: {folder}  (simulator report {folder})")
