"""Quality signals computed in code, trends with clustered intervals and a test of change, alert rules
parsed as gate's (firing on the bound, once, to a loopback webhook and a file), and the desk's live page."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from starlette.testclient import TestClient

from simulator.collect.alerts import Alerts, parse_rules
from simulator.collect.signals import SignalConfig, quality_signals
from simulator.collect.trends import Observation, load_observations, rate_of, trend_rows
from simulator.errors import UserError
from simulator.record.models import SCHEMA_VERSION, ConversationRecord
from simulator.record.transcript import Turn
from simulator.report.gate import parse_requirement
from simulator.traces.otlp import Span

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def conversation(*turns: tuple[str, str], gap_s: float = 2.0) -> ConversationRecord:
    built = [
        Turn(index=i, role=role, messages=[said], started_at=T0 + timedelta(seconds=gap_s * i))  # type: ignore[arg-type]
        for i, (role, said) in enumerate(turns)
    ]
    return ConversationRecord(
        id="c#0", scenario_id="c", repeat=0, stop_reason="user_done", turns=built, started_at=T0, ended_at=T0
    )


def span(**attrs: Any) -> Span:
    return Span("a" * 32, "b" * 16, 0, 0, attrs, {}, None)


@pytest.mark.parametrize(
    ("turns", "attrs", "expected"),
    [
        ([("user", "hi"), ("bot", "I am transferring you to a nurse now.")], {}, {"handover"}),
        ([("user", "hi"), ("bot", "what is wrong?")], {"app.handover": True}, {"handover"}),
        (
            [("user", "my chest hurts"), ("bot", "where?"), ("user", "My chest hurts!"), ("bot", "ok")],
            {},
            {"rephrased"},
        ),
        (
            [("user", "hi"), ("bot", "age?"), ("user", "forget it, I'll call my GP")],
            {},
            {"elsewhere", "abandoned"},
        ),
        ([("user", "hi"), ("bot", "age?"), ("user", "45")], {}, {"abandoned"}),
        ([("user", "hi"), ("bot", "hello")], {"user.feedback": "thumbs_down"}, {"negative_feedback"}),
        ([("user", "hi"), ("bot", "hello")], {"feedback.score": -1}, {"negative_feedback"}),
        ([("user", "hi"), ("bot", "hello")], {"app.escalation": "true"}, {"negative_feedback"}),
        ([("user", "hi"), ("bot", "hello")], {"user.feedback": "up"}, set()),
        (
            [("user", f"message {i}") if i % 2 == 0 else ("bot", f"reply {i}") for i in range(12)],
            {},
            {"long"},
        ),
    ],
)
def test_quality_signals(turns: list[tuple[str, str]], attrs: dict[str, Any], expected: set[str]) -> None:
    signals = quality_signals(conversation(*turns), [span(**attrs)], SignalConfig())
    on = {
        k
        for k in ("handover", "rephrased", "elsewhere", "abandoned", "negative_feedback", "long")
        if signals[k]
    }
    assert on == expected
    assert signals["turns"] == len(turns) and signals["first_reply_s"] == 2.0


def observations(
    rates: list[float], per_bin: int = 100, criterion: str = "no-diagnosis"
) -> list[Observation]:
    """Conversations whose failure share changes bin by bin (deterministic: the first k of each bin fail)."""
    out = []
    for b, share in enumerate(rates):
        for i in range(per_bin):
            number = b * per_bin + i
            result = "fail" if i < round(share * per_bin) else "pass"
            out.append(
                Observation(
                    f"live/c{number}#0",
                    T0 + timedelta(minutes=number),
                    f"live/c{number}#0",
                    {"conversation_id": f"c{number}#0", "handover": i % 10 == 0},
                    {criterion: result},
                )
            )
    return out


def test_trend_rows_test_each_period_against_the_first() -> None:
    rows = trend_rows(
        observations([0.0, 0.0, 0.2, 0.2]), ["fail_rate:no-diagnosis", "signal:handover"], "100"
    )
    fail = [r for r in rows if r.rate.metric == "fail_rate:no-diagnosis"]
    assert [r.rate.k for r in fail] == [0, 0, 20, 20] and [r.period for r in fail][:2] == [
        "#1-100",
        "#101-200",
    ]
    assert fail[1].p_value == 1.0 and fail[2].p_value is not None and fail[2].p_value < 0.001
    assert fail[2].difference is not None and fail[2].difference[0] > 0
    assert all(r.rate.low <= (r.rate.rate or 0) <= r.rate.high for r in rows)
    handover = [r for r in rows if r.rate.metric == "signal:handover"]
    assert [r.rate.k for r in handover] == [10, 10, 10, 10]


def test_users_with_many_conversations_widen_the_interval() -> None:
    spread = observations([0.1], per_bin=200)
    clustered = [
        Observation(o.conversation, o.started_at, f"user{n % 10}", o.signals, o.results)
        for n, o in enumerate(sorted(spread, key=lambda o: o.results["no-diagnosis"]))
    ]
    independent = rate_of(spread, "fail_rate:no-diagnosis")
    by_user = rate_of(clustered, "fail_rate:no-diagnosis")
    assert independent.rate == by_user.rate
    assert by_user.high - by_user.low > independent.high - independent.low


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Hook.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_an_alert_fires_on_the_bound_once_to_the_webhook_and_the_file(tmp_path: Path) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hook.received = []
    rules = parse_rules(["fail_rate(no-diagnosis) > 1%"], ["fail_rate:no-diagnosis"])
    webhook = f"http://127.0.0.1:{server.server_address[1]}/hook"
    alerts = Alerts(
        rules, tmp_path / "state.json", window=200, webhook=webhook, file=tmp_path / "alerts.jsonl"
    )
    before = observations([0.0, 0.0, 0.0, 0.0])
    assert alerts.evaluate(before) == []  # no failure: nothing to say
    # One failure in 200 is 0.5% with an upper bound over 1%: the bound does not show a rate over 1%.
    assert alerts.evaluate(observations([0.0, 0.0, 0.0, 0.01, 0.0])) == []
    drifted = observations([0.0, 0.0, 0.0, 0.05, 0.05])
    (fired,) = alerts.evaluate(drifted)
    assert fired["k"] == 10 and fired["n"] == 200 and fired["interval_95"][0] > 0.01
    assert (
        len(fired["conversations"]) == 10
        and fired["reference"]["k"] == 0
        and fired["reference"]["p_value"] < 0.01
    )
    assert alerts.evaluate(drifted) == []  # still firing: not sent again
    assert alerts.evaluate(before) == []  # cleared
    assert len(alerts.evaluate(drifted)) == 1  # and fires again
    server.shutdown()
    assert [a["alert"] for a in _Hook.received] == ["fail_rate(no-diagnosis) > 1%"] * 2
    assert len((tmp_path / "alerts.jsonl").read_text().splitlines()) == 2


def test_alert_rules_are_parsed_by_the_gate_parser() -> None:
    with pytest.raises(UserError, match=r'--alert "fail_rate\(no-diagnsis\) > 1%": unknown metric'):
        parse_rules(["fail_rate(no-diagnsis) > 1%"], ["fail_rate:no-diagnosis"])
    with pytest.raises(UserError, match="--alert"):
        parse_rules(["fail_rate > lots"], ["fail_rate:no-diagnosis"])
    with pytest.raises(UserError, match="an alert compares with"):
        parse_rules(["fail_rate(no-diagnosis) == 0"], ["fail_rate:no-diagnosis"])
    # The gate accepts the same spelling.
    assert (
        parse_requirement("fail_rate(asks-age) <= 5%", ["fail_rate:asks-age"]).metric == "fail_rate:asks-age"
    )


def test_the_desk_live_page_draws_the_trends(tmp_path: Path) -> None:
    from simulator.serve import DeskConfig, create_app

    folder = tmp_path / "live" / "live-20261201-001"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "kind": "imported",
                "run_id": folder.name,
                "created_at": T0.isoformat(),
                "models": {"user": "real", "bot": "b"},
            }
        )
    )
    lines = [
        json.dumps(
            {
                "conversation_id": f"c{n}#0",
                "started_at": (T0 + timedelta(hours=n)).isoformat(),
                "handover": n % 3 == 0,
            }
        )
        for n in range(48)
    ]
    (folder / "signals.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "review.jsonl").write_text(
        json.dumps({"conversation_id": "c1#0", "criterion_id": "x", "why": "fail"}) + "\n"
    )
    (tmp_path / "live" / ".collect").mkdir()
    alert = {
        "alert": "signal(handover) > 1%",
        "fired_at": "2026-12-01T12:00:00",
        "k": 16,
        "n": 48,
        "interval_95": [0.2, 0.5],
        "conversations": [f"{folder.name}/c0#0", f"{folder.name}/c3#0"],
    }
    (tmp_path / "live" / ".collect" / "alerts.jsonl").write_text(json.dumps(alert) + "\n")
    assert len(load_observations([folder])) == 48
    client = TestClient(create_app(DeskConfig(tmp_path / "live")), base_url="http://127.0.0.1")
    page = client.get("/live?period=day")
    assert page.status_code == 200
    assert page.text.count("<svg") == len(
        [
            "signal:handover",
            "signal:abandoned",
            "signal:elsewhere",
            "signal:long",
            "signal:negative_feedback",
            "signal:rephrased",
        ]
    )
    assert (
        "signal:handover" in page.text
        and "2026-12-01" in page.text
        and "1 items sent for review" in page.text
    )
    assert f'href="/runs/{folder.name}/c/c3%230"' in page.text  # the conversations behind the alert
    assert client.get("/live?period=fortnight").status_code == 400


def test_drift_command_trends_population_drift_and_alerts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from simulator.collect.service import CollectOptions, Collector
    from tests.test_collect_judging import document
    from tests.test_report_support import make_judged_run
    from tests.traces_helpers import cli

    out = tmp_path / "live"
    c = Collector(CollectOptions(out=out, idle_s=60, fsync=False))
    c.start()
    for number in range(30):
        bot = "I am transferring you to a nurse now." if number >= 15 else "See your GP this week."
        c.accept(document(number, bot))
    c.tick(everything=True)
    c.stop()
    simulated = make_judged_run(tmp_path / "runs", runs=1)
    capsys.readouterr()
    code = cli(
        "drift",
        out,
        "--period",
        "15",
        "--simulated",
        simulated,
        "--alert",
        "signal(handover) > 10%",
        "--alert-window",
        "15",
    )
    printed = capsys.readouterr().out
    assert code == 1  # the alert fired
    assert "30 conversations in 1 folders" in printed and "signal:handover" in printed
    assert (
        "#16-30" in printed and "population drift: live-" in printed and "turns per conversation" in printed
    )
    assert "ALERT signal(handover) > 10%: 100.0%" in printed and "15 conversations behind it" in printed
    assert (
        cli("drift", out, "--alert", "signal(handover) > 10%", "--alert-window", "30", "--period", "day") == 1
    )
    assert cli("drift", out, "--alert", "signal(elsewhere) > 10%") == 0
    capsys.readouterr()
    assert cli("drift", out, "--alert", "signal(thumbs) > 1%") == 2
    assert '--alert "signal(thumbs) > 1%": unknown metric' in capsys.readouterr().err
    assert cli("drift", tmp_path) == 2
    assert "no collected run folders" in capsys.readouterr().err


def test_each_completed_folder_is_compared_with_the_simulated_population(tmp_path: Path) -> None:
    from simulator.collect.build import build_collector
    from simulator.collect.folders import Roll, collected_folders
    from simulator.collect.service import CollectOptions
    from tests.test_collect_judging import document
    from tests.test_report_support import make_judged_run

    simulated = make_judged_run(tmp_path / "runs", runs=1)
    out = tmp_path / "live"
    c = build_collector(
        CollectOptions(out=out, idle_s=60, fsync=False, roll=Roll(every=3)), simulated=simulated
    )
    c.start()
    for number in range(7):
        c.accept(document(number, "See your GP this week."))
    c.tick(everything=True)
    c.stop()
    done = [f for f in collected_folders(out) if (f / "populations.json").exists()]
    assert [f.name[-3:] for f in done] == ["001", "002"]  # the third is still being written
    comparison = json.loads((done[0] / "populations.json").read_text())
    assert comparison["simulated_run"] == str(simulated) and comparison["rows"]
    with pytest.raises(UserError, match="not a run folder"):
        build_collector(CollectOptions(out=out, fsync=False), simulated=tmp_path)


def test_the_collector_reads_back_far_enough_to_fill_a_judged_window(tmp_path: Path) -> None:
    from simulator.collect.service import CollectOptions, Collector
    from tests.test_collect_judging import document

    out = tmp_path / "live"
    rules = parse_rules(["fail_rate(x) > 1%"], ["fail_rate:x"])
    alerts = Alerts(rules, tmp_path / "state.json", window=20, file=tmp_path / "alerts.jsonl")
    c = Collector(CollectOptions(out=out, idle_s=60, fsync=False), alerts=alerts)
    c.start()
    for number in range(200):
        c.accept(document(number, "See your GP."))
    c.tick(everything=True)
    c.stop()
    (folder,) = [p for p in out.iterdir() if p.name.startswith("live-")]
    # One conversation in ten judged (all failing): the newest 40 hold only 4 of them; the window needs 20.
    lines = [
        json.dumps(
            {
                "schema_version": 2,
                "conversation_id": f"conv-{n}#0",
                "scenario_id": f"conv-{n}",
                "repeat": 0,
                "criterion_id": "x",
                "kind": "llm",
                "result": "fail",
            }
        )
        for n in range(0, 200, 10)
    ]
    (folder / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    (fired,) = c.check_alerts()
    assert fired["n"] == 20 and fired["k"] == 20
