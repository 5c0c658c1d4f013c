"""The stateful environment: the suite's `environment:` section validated, one fresh state per conversation,
tools run by function or canned answers, errors and timeouts recorded as data, calls recorded as tool_call
parts in the turn they were made in (python and http bots), user-side tools, and the final state kept."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from simulator.bots.environment import Environment, ToolError, make_environment
from simulator.bots.http_bot import HttpBotFactory
from simulator.cli import main
from simulator.config.bots import HttpBotConfig
from simulator.config.environment import EnvironmentSpec, merge_state
from simulator.config.scenario import Scenario
from simulator.config.suite import load_suite
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.errors import UserError
from simulator.record.faults import bot_faults
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord
from simulator.record.parts import TextPart, ToolCallPart
from simulator.record.transcript import Turn
from simulator.users.offline import OfflineUser

TOOLS_MODULE = """
import time

def book(state, patient, urgency):
    state.setdefault("appointments", []).append({"patient": patient, "urgency": urgency})
    return {"id": "A%d" % len(state["appointments"])}

def broken(state):
    raise RuntimeError("the booking system is down")

def slow(state):
    time.sleep(60)  # far past the bound below: only a deadline not kept takes that long
    return "late"

def not_json(state):
    return object()

def clock(state):
    return state["hour"]
"""

ENV_YAML = """
environment:
  state: {appointments: [], clinic: {name: North, open: true}}
  tool_timeout_s: 0.3
  tools:
    book:
      description: Book an appointment.
      parameters:
        type: object
        properties:
          patient: {type: string}
          urgency: {type: string, enum: [urgent, routine]}
        required: [patient, urgency]
      function: envtools_mod:book
    find_service:
      parameters: {type: object, properties: {need: {type: string}}}
      responses:
        - when: {need: emergency}
          result: {service: A&E}
        - when: {need: closed}
          error: the directory is offline
    broken: {function: envtools_mod:broken}
    slow: {function: envtools_mod:slow}
    not_json: {function: envtools_mod:not_json}
  user_tools:
    read_thermometer:
      description: read your thermometer
      reads: readings.temperature
      asked_by: [temperature]
      say: "It says {value}."
"""


@pytest.fixture
def tools_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "envtools_mod.py").write_text(TOOLS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("envtools_mod", None)
    return tmp_path


def write_suite(
    folder: Path, body: str, bot: str = "bot:\n  type: python\n  factory: envbot_mod:make\n"
) -> Path:
    path = folder / "suite.yaml"
    path.write_text("name: env\n" + bot + textwrap.dedent(body))
    return path


def spec_of(folder: Path) -> EnvironmentSpec:
    suite = load_suite(write_suite(folder, ENV_YAML))
    assert suite.environment is not None
    return suite.environment


# ------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("body", "field", "needle"),
    [
        (
            "environment:\n  tools:\n    book: {function: nowhere_at_all:book}\n",
            "environment.tools.book.function",
            "cannot import module 'nowhere_at_all'",
        ),
        (
            "environment:\n  tools:\n    book: {function: envtools_mod:missing}\n",
            "environment.tools.book.function",
            "has no attribute 'missing'",
        ),
        (
            "environment:\n  user_tools:\n    look: {function: envtools_mod:gone}\n",
            "environment.user_tools.look.function",
            "has no attribute 'gone'",
        ),
        (
            "environment:\n  tools:\n    book: {description: x}\n",
            "environment.tools.book",
            "needs an implementation",
        ),
        (
            "environment:\n  tools:\n    book:\n      function: envtools_mod:book\n      parameters: {type: array}\n",
            "environment.tools.book.parameters",
            "type: object",
        ),
        (
            "environment:\n  tools:\n    book:\n      function: envtools_mod:book\n      parameters: {type: object, properties: 3}\n",
            "environment.tools.book.parameters",
            "not a valid JSON schema",
        ),
        (
            "environment:\n  user_tools:\n    look: {description: x}\n",
            "environment.user_tools.look",
            "exactly one of",
        ),
        (
            "environment:\n  tools:\n    book: {function: envtools_mod:book, colour: red}\n",
            "environment.tools.book",
            "colour",
        ),
    ],
)
def test_a_bad_environment_is_one_error_naming_file_line_and_field(
    tools_module: Path, body: str, field: str, needle: str
) -> None:
    path = write_suite(tools_module, body)
    with pytest.raises(UserError) as caught:
        load_suite(path)
    problems = caught.value.problems
    assert problems, caught.value
    problem = next(p for p in problems if needle in p.message or needle in (p.field or ""))
    assert problem.file == str(path) and problem.line is not None and problem.line >= 3
    assert (problem.field or "").startswith(field)


def test_validate_command_catches_an_unimportable_function(
    tools_module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_suite(tools_module, "environment:\n  tools:\n    book: {function: no_such_module_x:book}\n")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no_such_module_x" in err and "environment.tools.book.function" in err and "suite.yaml:7" in err


def test_scenario_environment_and_expected_paths_are_validated(tmp_path: Path) -> None:
    ok = Scenario.model_validate(
        {
            "id": "a",
            "persona": "p",
            "goal": "g",
            "expected": {"environment": {"appointments[0].urgency": "urgent"}},
        }
    )
    assert ok.expected["environment"] == {"appointments[0].urgency": "urgent"}
    for bad in ({"environment": {"a[x": 1}}, {"environment": "urgent"}, {"environment": {}}):
        with pytest.raises(ValueError, match=r"expected\.environment"):
            Scenario.model_validate({"id": "a", "persona": "p", "goal": "g", "expected": bad})


# ------------------------------------------------------------------------------------------ running tools


def test_merge_is_a_fresh_deep_copy() -> None:
    base = {"clinic": {"name": "North", "open": True}, "appointments": []}
    merged = merge_state(base, {"clinic": {"open": False}, "readings": {"t": 39}})
    assert merged == {"clinic": {"name": "North", "open": False}, "appointments": [], "readings": {"t": 39}}
    merged["appointments"].append(1)
    assert base["appointments"] == [] and base["clinic"]["open"] is True


def test_each_conversation_gets_its_own_state(tools_module: Path) -> None:
    spec = spec_of(tools_module)
    first = make_environment(spec, {"clinic": {"open": False}})
    second = make_environment(spec, {})
    assert first is not None and second is not None
    first.call("book", {"patient": "P1", "urgency": "urgent"})
    assert first.final_state()["appointments"] == [{"patient": "P1", "urgency": "urgent"}]
    assert second.final_state()["appointments"] == [] and second.final_state()["clinic"]["open"] is True
    assert spec.state["appointments"] == []


def test_function_tools_change_the_state_and_are_recorded(tools_module: Path) -> None:
    env = make_environment(spec_of(tools_module), {})
    assert env is not None
    part = env.call("book", {"patient": "P7", "urgency": "routine"})
    assert part.result == {"id": "A1"} and part.error is None and part.side == "bot"
    assert part.started_at is not None and part.latency_s is not None and part.id == "env-1"
    assert env.take_calls() == [part] and env.take_calls() == []


@pytest.mark.parametrize(
    ("name", "arguments", "error", "bot_fault"),
    [
        ("book", {"patient": "P7"}, "'urgency' is a required property", True),
        ("book", {"patient": "P7", "urgency": "soon"}, "urgency: 'soon' is not one of", True),
        ("broken", {}, "RuntimeError: the booking system is down", False),
        ("slow", {}, "did not return within 0.3 s", False),
        ("not_json", {}, "not JSON data", False),
        ("nope", {}, "no tool named 'nope'", True),
        ("find_service", {"need": "closed"}, "the directory is offline", False),
        ("find_service", {"need": "dentist"}, "no canned response matches", False),
    ],
)
def test_a_failing_call_is_recorded_with_its_error_never_raised(
    tools_module: Path, name: str, arguments: dict[str, Any], error: str, bot_fault: bool
) -> None:
    env = make_environment(spec_of(tools_module), {})
    assert env is not None
    started = time.perf_counter()
    part = env.call(name, arguments)
    assert part.error is not None and error in part.error, part.error
    assert part.result is None and env.calls == [part]
    assert time.perf_counter() - started < 30  # a slow tool is cut at its timeout (0.3 s), not waited for
    with pytest.raises(ToolError, match=error.split(":")[0]):
        env.result(name, **arguments)
    # Invalid arguments or an unknown tool are the bot's fault (a report finding); a tool that fails is not.
    record = ConversationRecord(
        id="s#0",
        scenario_id="s",
        repeat=0,
        stop_reason="user_done",
        turns=[Turn(index=0, role="bot", parts=[part], started_at=datetime.now(UTC))],
        started_at=datetime.now(UTC),
        ended_at=datetime.now(UTC),
    )
    faults = bot_faults(record)
    assert [f.kind for f in faults] == (["tool_arguments"] if bot_fault else [])
    assert all(error in f.detail and f.detail.startswith(f"[tool call] {name}") for f in faults)


def test_canned_answers_match_arguments_case_insensitively(tools_module: Path) -> None:
    env = make_environment(spec_of(tools_module), {})
    assert env is not None
    assert env.call("find_service", {"need": "Emergency"}).result == {"service": "A&E"}


def test_user_tools_read_the_scenario_state(tools_module: Path) -> None:
    spec = spec_of(tools_module)
    env = make_environment(spec, {"readings": {"temperature": 39.2}})
    assert env is not None
    part = env.call("read_thermometer", {}, side="user")
    assert part.result == 39.2 and part.side == "user"
    assert env.call("read_thermometer", {}).error is not None  # not a bot tool
    empty = make_environment(spec, {})
    assert empty is not None and "no `readings.temperature`" in (
        empty.call("read_thermometer", {}, side="user").error or ""
    )
    assert [t.name for t in env.tool_specs("user")] == ["read_thermometer"]
    assert {t.name for t in env.tool_specs()} == {"book", "find_service", "broken", "slow", "not_json"}


# ------------------------------------------------------------------------------------------ in the loop

BOT_MODULE = '''
from simulator.bots import Reply
from simulator.bots.environment import ToolError


class Bot:
    def __init__(self, env=None):
        self.env = env
        self.turn = 0

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            return "What is your temperature?"
        try:
            self.env.result("broken")
        except ToolError:
            pass
        booking = self.env.result("book", patient="P1", urgency="urgent")
        return Reply(messages=[f"I've booked you in ({booking['id']}). I recommend rest."], closed=True)


def make(env=None):
    return Bot(env)


class SendBot:
    """Takes the environment in send(text, env=None) instead of the factory."""

    def send(self, text, env=None):
        env.result("book", patient="P2", urgency="routine")
        return Reply(messages=["Booked. I recommend rest."], closed=True)


def make_send():
    return SendBot()
'''

SCENARIO = """
id: fever-1
persona: an adult with a fever
goal: know what to do about a fever
facts: [I have had a fever since yesterday.]
environment:
  readings: {temperature: 39.4}
expected:
  environment:
    appointments[0].urgency: urgent
"""


@pytest.fixture
def bot_module(tools_module: Path) -> Path:
    (tools_module / "envbot_mod.py").write_text(BOT_MODULE)
    sys.modules.pop("envbot_mod", None)
    (tools_module / "scenarios").mkdir()
    (tools_module / "scenarios" / "fever.yaml").write_text(SCENARIO)
    return tools_module


def _run(folder: Path, factory: str = "envbot_mod:make", extra: str = "") -> RunFolder:
    suite = write_suite(
        folder,
        ENV_YAML + "scenarios: {paths: [scenarios]}\nuser: {model: offline}\nruns: 2\n" + extra,
        bot=f"bot:\n  type: python\n  factory: {factory}\n",
    )
    assert main(["run", str(suite), "--out", str(folder / "run"), "--no-progress"]) == 0
    return RunFolder.open(folder / "run")


def test_a_python_bot_acts_on_the_environment_and_the_record_keeps_it(bot_module: Path) -> None:
    folder = _run(bot_module)
    records = list(folder.conversations())
    assert len(records) == 2
    for record in records:
        user_turn = record.turns[2]
        assert isinstance(user_turn.parts[0], ToolCallPart) and user_turn.parts[0].side == "user"
        assert user_turn.parts[0].result == 39.4 and user_turn.messages == ["It says 39.4."]
        bot_turn = record.turns[3]
        kinds = [type(p).__name__ for p in bot_turn.parts]
        assert kinds == ["ToolCallPart", "ToolCallPart", "TextPart"]
        broken, book = bot_turn.parts[0], bot_turn.parts[1]
        assert isinstance(broken, ToolCallPart) and broken.error == "RuntimeError: the booking system is down"
        assert isinstance(book, ToolCallPart) and book.arguments == {"patient": "P1", "urgency": "urgent"}
        # One fresh state per conversation: each holds exactly its own booking.
        assert record.environment_state is not None
        assert record.environment_state["appointments"] == [{"patient": "P1", "urgency": "urgent"}]
        assert record.environment_state["readings"] == {"temperature": 39.4}
    verdicts = [v for v in folder.verdicts() if v.criterion_id == "environment.appointments[0].urgency"]
    assert [v.result for v in verdicts] == ["pass", "pass"]
    # No claim rule was given and the suite has an environment: the default claims are checked.
    booked = [v for v in folder.verdicts() if v.criterion_id == "claim.booked"]
    assert {v.result for v in booked} == {"pass"} and all(v.evidence_verified for v in booked)


def test_send_may_take_the_environment_instead_of_the_factory(bot_module: Path) -> None:
    folder = _run(bot_module, "envbot_mod:make_send")
    record = next(iter(folder.conversations()))
    assert record.environment_state is not None
    assert record.environment_state["appointments"] == [{"patient": "P2", "urgency": "routine"}]
    verdicts = [v for v in folder.verdicts() if v.criterion_id == "environment.appointments[0].urgency"]
    assert {v.result for v in verdicts} == {"fail"}
    assert "'routine'" in verdicts[0].reasoning


def test_a_bot_that_crashes_after_a_call_keeps_the_call(tools_module: Path) -> None:
    spec = spec_of(tools_module)

    class Crashing:
        def send(self, text: str, env: Environment | None = None) -> str:
            assert env is not None
            env.result("book", patient="P1", urgency="urgent")
            raise RuntimeError("bot bug")

    class Factory:
        async def open(self, conversation_id: str, environment: Environment | None = None) -> Any:
            from simulator.bots.python_bot import PythonSession

            return PythonSession(Crashing(), environment)

    scenario = Scenario.model_validate({"id": "s", "persona": "p", "goal": "g"})
    plan = ConversationPlan(scenario, 0)
    record = asyncio.run(
        run_conversation(plan, lambda p, a: OfflineUser(scenario), Factory(), environment=spec)
    )
    assert record.stop_reason == "error" and record.error is not None and record.error.source == "bot"
    kept = record.turns[-1]
    assert kept.role == "bot" and isinstance(kept.parts[0], ToolCallPart) and kept.parts[0].name == "book"
    assert record.environment_state is not None and len(record.environment_state["appointments"]) == 1


def test_a_suite_without_an_environment_records_none(tmp_path: Path) -> None:
    scenario = Scenario.model_validate({"id": "s", "persona": "p", "goal": "g"})

    class Plain:
        async def open(self, conversation_id: str) -> Any:  # no environment parameter at all
            from simulator.bots.python_bot import PythonSession

            class Bot:
                def send(self, text: str) -> str:
                    return "I recommend rest."

            return PythonSession(Bot())

    record = asyncio.run(
        run_conversation(ConversationPlan(scenario, 0), lambda p, a: OfflineUser(scenario), Plain())
    )
    assert record.environment_state is None and "environment_state" not in record.model_dump(
        exclude_none=True
    )


# ------------------------------------------------------------------------------------------ http bots


class _EnvCallingBot(BaseHTTPRequestHandler):
    """An HTTP bot that books through the engine's loopback environment endpoint."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        url = body["env_url"]
        listed = httpx.get(f"{url}/tools", params={"conversation_id": body["conversation_id"]}).json()
        answer = httpx.post(
            f"{url}/tools/book",
            json={
                "conversation_id": body["conversation_id"],
                "arguments": {"patient": "P9", "urgency": "urgent"},
            },
        ).json()
        wrong = httpx.post(f"{url}/tools/book", json={"conversation_id": "nobody", "arguments": {}})
        bad = httpx.post(
            f"{url}/tools/book",
            json={
                "conversation_id": body["conversation_id"],
                "arguments": {"patient": 1, "urgency": "urgent"},
            },
        ).json()
        reply = {
            "messages": [
                f"Booked {answer['result']['id']} ({len(listed['tools'])} tools; {wrong.status_code})"
            ],
            "state": {"bad": bad.get("error", "")},
            "closed": True,
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return None


def test_an_http_bot_calls_the_environment_over_loopback(tools_module: Path) -> None:
    spec = spec_of(tools_module)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EnvCallingBot)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:

        async def go() -> Any:
            bots = HttpBotFactory(HttpBotConfig(url=f"http://127.0.0.1:{server.server_address[1]}/chat"))
            scenario = Scenario.model_validate({"id": "s", "persona": "p", "goal": "g"})
            try:
                return await run_conversation(
                    ConversationPlan(scenario, 0), lambda p, a: OfflineUser(scenario), bots, environment=spec
                )
            finally:
                await bots.aclose()

        record = asyncio.run(go())
    finally:
        server.shutdown()
    assert record.stop_reason == "bot_closed", record.error
    bot = record.turns[1]
    calls = [p for p in bot.parts if isinstance(p, ToolCallPart)]
    assert [c.name for c in calls] == ["book", "book"]
    assert calls[0].result == {"id": "A1"} and calls[1].error is not None and "patient" in calls[1].error
    text = [p.text for p in bot.parts if isinstance(p, TextPart)]
    assert text == ["Booked A1 (5 tools; 404)"]
    assert record.final_state is not None and "1 is not of type 'string'" in record.final_state["bad"]
    assert _EnvCallingBot.seen[-1]["env_url"].startswith("http://127.0.0.1:")
    assert (
        record.environment_state is not None
        and record.environment_state["appointments"][0]["patient"] == "P9"
    )


def test_the_shipped_clinic_suite_runs_offline_and_its_flaw_breaks_the_claim_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    main(["run", "examples/clinic_env/suite.yaml", "--out", str(tmp_path / "run"), "--no-progress"])
    folder = RunFolder.open(tmp_path / "run")
    records = {r.scenario_id: r for r in folder.conversations()}
    assert len(records) == 6 and all(r.stop_reason != "error" for r in records.values())
    claims = {v.scenario_id: v for v in folder.verdicts() if v.criterion_id == "claim.booked"}
    failed = {sid for sid, v in claims.items() if v.result == "fail"}
    assert failed == {"unregistered-urgent-fever", "unregistered-routine-cough"}  # the documented flaw
    assert all(v.evidence_verified for v in claims.values() if v.result != "not_applicable")
    user_reads = [
        p
        for t in records["registered-urgent-fever"].turns
        for p in t.parts
        if isinstance(p, ToolCallPart) and p.side == "user"
    ]
    assert [p.result for p in user_reads] == [39.4]
    no_reading = [
        p
        for t in records["registered-no-thermometer"].turns
        for p in t.parts
        if isinstance(p, ToolCallPart) and p.side == "user"
    ]
    assert no_reading and no_reading[0].error is not None  # the failed reading is data
    emergency = records["registered-emergency-breathing"]
    assert emergency.stop_reason == "handover" and emergency.environment_state is not None
    assert emergency.environment_state["escalations"][0]["patient_id"] == "P001"
    # The manifest keeps the suite; read back, its environment and checks are the ones the run used.
    recorded = folder.read_manifest().rebuild_suite(tmp_path / "run")
    loaded = load_suite(root / "examples" / "clinic_env" / "suite.yaml")
    assert recorded.environment == loaded.environment and recorded.tool_checks == loaded.tool_checks
    results = {(v.scenario_id, v.criterion_id): v.result for v in folder.verdicts()}
    assert results[("registered-emergency-breathing", "no_calls_after_handover")] == "pass"
    assert results[("registered-urgent-fever", "environment.appointments[0].urgency")] == "pass"
    assert results[("unregistered-urgent-fever", "environment.appointments[0].urgency")] == "fail"
    # The reports carry what the tools left behind: the JSON transcripts and the HTML viewer, escaped.
    html_out, json_out = tmp_path / "report.html", tmp_path / "report.json"
    main(["report", str(tmp_path / "run"), "--html", str(html_out), "--passing-transcripts", "all"])
    main(["report", str(tmp_path / "run"), "--json", str(json_out), "--json-transcripts"])
    shown = {t["scenario_id"]: t for t in json.loads(json_out.read_text())["transcripts"]}
    assert shown["registered-emergency-breathing"]["environment_state"] == emergency.environment_state
    page = html_out.read_text()
    assert page.count("environment state:") == len(records)
    assert "&quot;escalations&quot;" in page and '"escalations"' not in page.split("<script")[0]


def _bot_says(text: str) -> list[Any]:
    from datetime import UTC, datetime

    from simulator.record.transcript import Turn

    now = datetime.now(UTC)
    return [
        Turn(index=0, role="user", parts=[TextPart(text="hello")], started_at=now),
        Turn(index=0, role="bot", parts=[TextPart(text=text)], started_at=now),
    ]


@pytest.mark.parametrize(
    ("question", "reads", "said"),
    [
        ("What is your temperature right now?", True, "It says 38.9."),  # an asked_by phrase
        ("Could you check the TEMPERATURE for me?", True, "It says 38.9."),
        ("Do you have a rash?", False, None),
        ("When did it start?", False, None),
    ],
)
def test_the_offline_user_reads_its_tool_when_asked(
    tools_module: Path, question: str, reads: bool, said: str | None
) -> None:
    env = make_environment(spec_of(tools_module), {"readings": {"temperature": 38.9}})
    assert env is not None
    scenario = Scenario.model_validate(
        {"id": "s", "persona": "p", "goal": "g", "facts": ["I have had a rash on my arm since Monday."]}
    )
    user = OfflineUser(scenario)
    user.use_environment(env)
    message = asyncio.run(user.next_message(_bot_says(question)))
    calls = env.take_calls()
    assert bool(calls) is reads
    if reads:
        assert message.text == said and calls[0].side == "user" and calls[0].result == 38.9
    else:
        assert "38.9" not in message.text


def test_a_user_tool_without_asked_by_is_used_for_its_own_words(tools_module: Path) -> None:
    spec = EnvironmentSpec.model_validate(
        {"user_tools": {"look_at_rash": {"description": "look at the rash colour", "reads": "rash.colour"}}}
    )
    scenario = Scenario.model_validate({"id": "s", "persona": "p", "goal": "g"})
    for state, expected in (
        ({"rash": {"colour": "purple"}}, "I checked: purple."),
        ({}, "I can't check that"),
    ):
        env = make_environment(spec, state)
        assert env is not None
        user = OfflineUser(scenario)
        user.use_environment(env)
        message = asyncio.run(user.next_message(_bot_says("What colour is the rash?")))
        assert message.text.startswith(expected), message.text
        assert [c.name for c in env.take_calls()] == ["look_at_rash"]
