"""Live under- and over-triage (simulator/collect/): a real `simulator collect` process receives conversations
from the real OpenTelemetry SDK; each live conversation's expected level is the floor its patient's red flags
set (the vocabulary's `red_flags`, read over the patient's own words), or the level the trace carries
(`--expected-attribute`). Planted under-triage of known count must come out as the measured rate, the alert
must fire on it, and `simulator drift` must show and alert on the same figure."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.collect.folders import collected_folders
from simulator.collect.trends import DECIDED, Observation, load_observations, metric_names, rate_of
from simulator.errors import UserError
from tests.collect_helpers import genai_turns, text, tracer
from tests.traces_helpers import require

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = ROOT / "examples/triage_vocabulary.yaml"
EXPECTED_ATTR = "app.expected_level"
SUITE = f"""
    name: live-triage
    bot: {{type: python, factory: 'examples.triage_bot:make_bot'}}
    user: {{model: offline, vocabulary: '{VOCABULARY}'}}
    judges: {{paths: [], model: null}}
    outcome:
      key: triage_level
      levels: [self_care, gp, urgent, emergency]
      source: messages
"""
CHEST = "I have a pressure in my chest, chest pressure since an hour"
SAYS_999 = "Call 999 now. This could be your heart."
SAYS_GP = "Please book an appointment with your GP this week."
SAYS_HOME = "You can look after yourself at home with rest."


@dataclass
class Planted:
    """One kind of planted conversation: what the patient and bot say, how many, what it counts as."""

    name: str
    count: int
    turns: list[tuple[str, str]]
    under: bool | None  # None: left out of under-triage
    under_decided: bool | None = None
    over: bool | None = None
    expected: str | None = None  # the level the trace carries
    error: bool = False


PLANTED = [
    Planted("floor-met", 6, [(CHEST, "Is it crushing?"), ("yes", SAYS_999)], False, False),
    Planted("floor-under", 4, [(CHEST, "How old are you?"), ("52", SAYS_GP)], True, True),
    Planted("urgent-under", 2, [("I have a fever of 39 and shivers", SAYS_HOME)], True, True),
    Planted("no-decision", 2, [(CHEST, "Tell me more."), ("it hurts", "I see.")], True, None),
    Planted("no-flag", 6, [("sore throat for two days", SAYS_GP)], None),
    Planted("negated", 2, [("a cough, no chest pain at all", SAYS_GP)], None),
    Planted("trace-over", 2, [("my knee aches", SAYS_999)], False, False, True, "gp"),
    Planted("trace-under", 1, [("I feel odd", SAYS_GP)], True, True, False, "emergency"),
    Planted("errored", 1, [(CHEST, SAYS_GP)], None, error=True),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _errored(provider: Any, key: str, user: str, said: str) -> None:
    """One conversation whose only LLM call failed: errored, so left out of every triage rate."""
    from opentelemetry.trace import Status, StatusCode

    with provider.get_tracer("triage-web").start_as_current_span("chat triage-bot") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.conversation.id", key)
        span.set_attribute("user.id", user)
        span.set_attribute("gen_ai.input.messages", json.dumps([text("user", said)]))
        span.set_attribute("gen_ai.output.messages", json.dumps([text("assistant", SAYS_GP)]))
        span.set_status(Status(StatusCode.ERROR, "upstream timeout"))


def _send(url: str) -> dict[str, Planted]:
    """Every planted conversation through the real SDK exporter; conversation key -> what was planted."""
    provider = tracer(url)
    sent: dict[str, Planted] = {}
    number = 0
    for kind in PLANTED:
        for _ in range(kind.count):
            key, user = f"live-{number:03d}", f"user-{number % 7}"
            extra: dict[str, Any] = {"user.id": user}
            if kind.expected is not None:
                extra[EXPECTED_ATTR] = kind.expected
            if kind.error:
                _errored(provider, key, user, kind.turns[0][0])
            else:
                genai_turns(provider, key, kind.turns, **extra)
            sent[key] = kind
            number += 1
    provider.force_flush()
    provider.shutdown()
    return sent


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _observations(out: Path) -> list[Observation]:
    return load_observations(collected_folders(out)) if out.exists() else []


def _truth(sent: dict[str, Planted], field: str) -> tuple[int, int]:
    counted = [getattr(kind, field) for kind in sent.values() if getattr(kind, field) is not None]
    return sum(counted), len(counted)


def _key(observation: Observation) -> str:
    return _key_of(observation.conversation)


def _collect(out: Path, suite: Path, policy: Path, *flags: str) -> subprocess.Popen[bytes]:
    """`simulator collect` as a user starts it, on a free loopback port (the port is the last flag)."""
    command = [
        sys.executable, "-m", "simulator", "collect", "--out", str(out), "--idle-s", "1",
        "--suite", str(suite), "--sample", str(policy), "--expected-attribute", EXPECTED_ATTR, *flags,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(command, env=env, cwd=out.parent, stdout=subprocess.DEVNULL)


def _stopped(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(30)


def test_live_under_triage_from_red_flags_equals_the_planted_truth_and_fires(tmp_path: Path) -> None:
    require("opentelemetry.sdk")
    import httpx

    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE))
    policy = tmp_path / "policy.yaml"
    policy.write_text("rate: 0\n")  # nothing sampled for LLM judging: the outcome and floor are read in code
    out, alerts = tmp_path / "live", tmp_path / "alerts.jsonl"
    port = _free_port()
    process = _collect(out, suite, policy, "--port", str(port))
    try:
        _wait(lambda: _up(httpx, f"http://127.0.0.1:{port}"), 60, "the collector to start")
        sent = _send(f"http://127.0.0.1:{port}")
        _wait(lambda: sum(DECIDED in o.results for o in _observations(out)) >= len(sent) - 1, 60, "outcomes")
    finally:
        _stopped(process)
    observations = _observations(out)
    assert {_key(o) for o in observations} == set(sent)
    assert {"under_triage", "under_triage_decided", "over_triage"} <= set(metric_names(observations))
    for metric, field in (
        ("under_triage", "under"),
        ("under_triage_decided", "under_decided"),
        ("over_triage", "over"),
    ):
        measured = rate_of(observations, metric)
        assert (measured.k, measured.n) == _truth(sent, field), metric
        assert measured.left_out == len(sent) - measured.n
        counted = [k for k, kind in sent.items() if getattr(kind, field) is not None]
        assert measured.clusters == len({int(k.split("-")[1]) % 7 for k in counted})  # users are the clusters
        assert {_key_of(c) for c in measured.conversations} == {
            k for k, kind in sent.items() if getattr(kind, field)
        }
    _the_floor_quotes_the_patient(out, sent)
    # The collector started again with the alert rule checks every conversation written so far: it fires.
    port = _free_port()
    process = _collect(
        out, suite, policy, "--port", str(port), "--alert", "under_triage > 10%", "--alert-every", "0.5",
        "--alert-file", str(alerts),
    )  # fmt: skip
    try:
        _wait(lambda: alerts.exists() and alerts.read_text().strip() != "", 60, "the alert")
    finally:
        _stopped(process)
    fired = json.loads(alerts.read_text().splitlines()[0])
    k, n = _truth(sent, "under")
    assert (fired["alert"], fired["k"], fired["n"]) == ("under_triage > 10%", k, n)
    assert fired["interval_95"][0] > 0.10 and "red flag" in fired["left_out"] and "red flag" in fired["unit"]
    assert fired["left_out_count"] == len(sent) - n


def _key_of(conversation: str) -> str:
    return conversation.partition("/")[2].split("#")[0]


def _up(httpx: Any, url: str) -> bool:
    try:
        return httpx.get(f"{url}/status", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _the_floor_quotes_the_patient(out: Path, sent: dict[str, Planted]) -> None:
    """Each red flag is recorded with the patient's own sentence that set it."""
    from simulator.record.folder import RunFolder

    flags = {
        v.conversation_id.split("#")[0]: v.outcome.red_flag
        for f in collected_folders(out)
        for v in RunFolder.open(f).verdicts()
        if v.outcome is not None and v.outcome.red_flag is not None
    }
    flagged = {k for k, kind in sent.items() if kind.turns[0][0] in (CHEST, PLANTED[2].turns[0][0])}
    assert set(flags) == flagged - {k for k, kind in sent.items() if kind.error}
    first = next(k for k, kind in sent.items() if kind.name == "floor-under")
    assert flags[first].value == "emergency" and "chest pressure" in (flags[first].quote or "")


def _chest_case(number: int, bot: str, said: str = CHEST, expected: str | None = None) -> dict[str, Any]:
    """One conversation as an OTLP JSON export request: the patient reports chest pressure."""

    def attr(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    span = {
        "traceId": f"{number + 1:032x}",  # all-zero ids are invalid in OTLP
        "spanId": f"{number + 1:016x}",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + number * 1000),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + number * 1000 + 500),
        "attributes": [
            attr("gen_ai.conversation.id", f"conv-{number}"),
            attr("user.id", f"user-{number % 10}"),
            attr("gen_ai.input.messages", json.dumps([text("user", said)])),
            attr("gen_ai.output.messages", json.dumps([text("assistant", bot)])),
            *([attr(EXPECTED_ATTR, expected)] if expected is not None else []),
        ],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


async def _collected(tmp_path: Path) -> None:
    """Forty chest-pressure conversations; the bot changes halfway and sends every other one to a GP."""
    from simulator.collect.build import build_collector
    from simulator.collect.service import CollectOptions

    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE))
    collector = build_collector(CollectOptions(out=tmp_path / "live", idle_s=60, fsync=False), suite=suite)
    collector.start()
    assert collector.judge is not None
    collector.judge.start()
    for number in range(40):
        under = number >= 20 and number % 2 == 0
        collector.accept(_chest_case(number, SAYS_GP if under else SAYS_999))
    collector.tick(everything=True)
    await collector.judge.drain()
    await collector.judge.stop()
    collector.stop()


async def test_drift_shows_and_alerts_on_live_under_triage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`simulator drift` on collected folders: under-triage by period, its left-out line, and the alert."""
    await _collected(tmp_path)
    code = main(["drift", str(tmp_path / "live"), "--period", "20", "--metric", "under_triage",
                 "--alert", "under_triage > 5%", "--alert-window", "20"])  # fmt: skip
    shown = capsys.readouterr().out
    assert code == 1
    rows = [line.split() for line in shown.splitlines() if line.startswith("under_triage ")]
    assert [row[-2] for row in rows] == ["0/20", "10/20"]
    assert (
        "under_triage: unit conversations with a recorded outcome and an expected level or a red flag; "
        in shown
    )
    assert "left out 0 (" in shown and "ALERT under_triage > 5%: 50.0%" in shown


@pytest.mark.parametrize(
    ("alert", "says"),
    [
        ("over_triage > 5%", "over_triage needs an expected level per conversation (--expected-attribute"),
        ("under_triage > 5%", "under_triage needs red flags"),
    ],
)
def test_a_triage_alert_the_collector_cannot_measure_is_one_clear_error(
    alert: str, says: str, tmp_path: Path
) -> None:
    from simulator.collect.build import build_collector
    from simulator.collect.service import CollectOptions

    suite = tmp_path / "suite.yaml"
    if alert.startswith("over"):  # red flags (the vocabulary's), but no expected level from the trace
        suite.write_text(textwrap.dedent(SUITE))
    else:  # no red flags anywhere: no vocabulary, level phrases in the suite
        body = textwrap.dedent(SUITE).replace(f"vocabulary: '{VOCABULARY}'", "vocabulary: null")
        suite.write_text(body + "  messages: {phrases: {gp: ['\\bgp\\b']}}\n")
    with pytest.raises(UserError) as caught:
        build_collector(CollectOptions(out=tmp_path / "live", fsync=False), suite=suite, alerts=[alert])
    assert says in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ("{severe: ['chest']}", "red_flags: 'severe' is not one of the outcome levels"),
        (
            "{emergency: ['chest (pain']}",
            "red_flags.emergency[1] `chest (pain` is not a valid regular expression",
        ),
    ],
)
def test_a_bad_red_flag_in_the_suite_is_one_line_naming_the_field(
    flags: str, says: str, tmp_path: Path
) -> None:
    from simulator.config.suite import load_suite

    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE) + f"  red_flags: {flags}\n")
    with pytest.raises(UserError) as caught:
        load_suite(suite)
    problems = [str(p) for p in caught.value.problems]
    assert len(problems) == 1 and says in problems[0] and "outcome" in problems[0]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ("{severe: ['chest']}", "vocabulary.yaml: red_flags: 'severe' is not one of the outcome levels"),
        (
            "{emergency: ['chest (pain']}",
            "red_flags.emergency[1] `chest (pain` is not a valid regular expression",
        ),
    ],
)
def test_a_bad_red_flag_in_the_vocabulary_is_one_line_naming_the_field(
    flags: str, says: str, tmp_path: Path
) -> None:
    from simulator.config.suite import load_suite
    from simulator.judging.outcome_setup import phrase_reader

    vocabulary = tmp_path / "vocabulary.yaml"
    vocabulary.write_text(f"outcome_levels: {{gp: ['\\bgp\\b']}}\nred_flags: {flags}\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE).replace(str(VOCABULARY), str(vocabulary)))
    with pytest.raises(UserError) as caught:
        phrase_reader(load_suite(suite))
    shown = [str(p) for p in caught.value.problems] or [str(caught.value)]
    assert len(shown) == 1 and says in shown[0]


@pytest.mark.parametrize(("share", "fires"), [(0.5, True), (0.0, False)])
def test_an_outcome_mix_alert_counts_the_conversations_with_an_outcome(
    share: float, fires: bool, tmp_path: Path
) -> None:
    """`outcome:<level>` counts every conversation with a recorded outcome (the window once held none)."""
    from datetime import UTC, datetime, timedelta

    from simulator.collect.alerts import Alerts, parse_rules

    start = datetime(2026, 12, 1, tzinfo=UTC)
    observations = [
        Observation(
            f"live/c{n}#0",
            start + timedelta(minutes=n),
            f"user-{n % 10}",
            {"conversation_id": f"c{n}#0"},
            {DECIDED: "emergency" if n < share * 60 else "gp"},
        )
        for n in range(60)
    ]
    rules = parse_rules(["outcome:emergency > 10%"], ["outcome:emergency"])
    alerts = Alerts(rules, tmp_path / "state.json", window=60, file=tmp_path / "alerts.jsonl")
    fired = alerts.evaluate(observations)
    assert bool(fired) is fires
    if fires:
        assert (fired[0]["k"], fired[0]["n"], fired[0]["left_out_count"]) == (30, 60, 0)


@pytest.mark.parametrize("rate", [1.0, 0.0])
async def test_the_trace_s_expected_level_is_compared_whether_sampled_or_not(
    rate: float, tmp_path: Path
) -> None:
    """Judged in full (sampled) or for its outcome alone: the trace's level is the conversation's expected
    level, its outcome verdict passes or fails on it, and it outranks the red-flag floor."""
    from simulator.collect.build import build_collector
    from simulator.collect.service import CollectOptions

    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE))
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"rate: {rate}\n")
    options = CollectOptions(
        out=tmp_path / "live", idle_s=60, fsync=False, policy=policy, expected_attribute=EXPECTED_ATTR
    )
    collector = build_collector(options, suite=suite, alerts=["over_triage > 50%"])
    collector.start()
    assert collector.judge is not None
    collector.judge.start()
    planted = [  # (what the patient says, what the bot says, the trace's level): over, exact, under
        ("my knee aches", SAYS_999, "GP"),
        (CHEST, SAYS_GP, "gp"),  # the trace says gp: exact, though the red flag alone would call it under
        ("I feel odd", SAYS_HOME, "urgent"),
        ("my knee aches", SAYS_GP, None),  # no level, no red flag: left out
    ]
    for number, (said, bot, expected) in enumerate(planted):
        collector.accept(_chest_case(number, bot, said, expected))
    collector.tick(everything=True)
    await collector.judge.drain()
    await collector.judge.stop()
    collector.stop()
    observations = _observations(tmp_path / "live")
    over, under = rate_of(observations, "over_triage"), rate_of(observations, "under_triage")
    assert (over.k, over.n, over.left_out) == (1, 3, 1)
    assert (under.k, under.n, under.left_out) == (1, 3, 1)
    results = {_key(o): o.results.get("outcome.triage_level") for o in observations}
    assert results == {"conv-0": "fail", "conv-1": "pass", "conv-2": "fail", "conv-3": "not_applicable"}
