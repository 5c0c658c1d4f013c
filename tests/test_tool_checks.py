"""Code checks on what the bot did: tool_called / tool_not_called with each argument matcher, counts and
ordering windows; claims that must match actions; expected.environment. Each class is tested on several
planted conversations whose truth is known, and every quote is checked to be found by the evidence check."""

from __future__ import annotations

import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.config.claims import ClaimRule, default_claims
from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.config.tool_checks import (
    ToolCheck,
    ToolChecksConfig,
    read_state_path,
)
from simulator.errors import UserError
from simulator.judging.evidence import quote_found
from simulator.judging.prompt import transcript_messages
from simulator.judging.tool_checks import ToolCheckContext, environment_verdicts, tool_verdicts
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.parts import EventPart, TextPart, ToolCallPart
from simulator.record.transcript import Turn
from simulator.text.content import gives_outcome

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def call(tool: str, /, error: str | None = None, side: str = "bot", **arguments: Any) -> ToolCallPart:
    return ToolCallPart(
        name=tool,
        arguments=arguments,
        result=None if error else {"ok": True},
        error=error,
        side=side,  # type: ignore[arg-type]
    )


def convo(
    *bot_turns: list[Any], stop: str = "user_done", env: dict[str, Any] | None = None
) -> ConversationRecord:
    """A conversation: a user line before each bot turn; a bot turn is a list of parts or strings."""
    turns = []
    for index, parts in enumerate(bot_turns):
        turns.append(
            Turn(index=index, role="user", parts=[TextPart(text=f"user line {index}")], started_at=NOW)
        )
        bot = [TextPart(text=p) if isinstance(p, str) else p for p in parts]
        turns.append(Turn(index=index, role="bot", parts=bot, started_at=NOW))
    return ConversationRecord(
        id="s#0",
        scenario_id="s",
        repeat=0,
        stop_reason=stop,  # type: ignore[arg-type]
        turns=turns,
        started_at=NOW,
        ended_at=NOW,
        environment_state=env,
    )


CONTEXT = ToolCheckContext(gives_advice=gives_outcome)


def check(record: ConversationRecord, **spec: Any) -> Verdict:
    (verdict,) = tool_verdicts(record, [ToolCheck.model_validate(spec)], CONTEXT, "h")
    assert_quotes_found(record, verdict)
    return verdict


def assert_quotes_found(record: ConversationRecord, verdict: Verdict) -> None:
    messages = [text for _, text in transcript_messages(record.turns)]
    for item in verdict.evidence:
        assert item.found and quote_found(item.quote, messages), item.quote
    if verdict.result in ("pass", "fail"):
        assert verdict.evidence_verified is True


# ------------------------------------------------------------------------------------------ matchers

BOOKED = convo(["Name?"], [call("book", patient="P001", urgency="urgent", slot=3), "Done. I recommend rest."])


@pytest.mark.parametrize(
    ("arguments", "result"),
    [
        ({"urgency": "urgent"}, "pass"),
        ({"urgency": "URGENT "}, "pass"),  # strings compare case- and space-insensitively
        ({"urgency": {"equal": "urgent"}}, "pass"),
        ({"urgency": "routine"}, "fail"),
        ({"slot": 3}, "pass"),
        ({"slot": 4}, "fail"),
        ({"urgency": {"one_of": ["emergency", "urgent"]}}, "pass"),
        ({"urgency": {"one_of": ["routine", "gp"]}}, "fail"),
        ({"patient": {"regex": "^P0+1$"}}, "pass"),
        ({"patient": {"regex": "^Q"}}, "fail"),
        ({"patient": {"schema": {"type": "string", "pattern": "^P[0-9]{3}$"}}}, "pass"),
        ({"slot": {"schema": {"type": "integer", "minimum": 5}}}, "fail"),
        ({"missing": "x"}, "fail"),
        ({"urgency": {"one_of": ["urgent"], "regex": "^u"}}, "pass"),  # several: all must hold
        ({"urgency": {"one_of": ["urgent"], "regex": "^x"}}, "fail"),
    ],
)
def test_each_argument_matcher(arguments: dict[str, Any], result: str) -> None:
    verdict = check(BOOKED, tool_called="book", arguments=arguments)
    assert verdict.result == result, verdict.reasoning
    assert (
        verdict.category == "tool" and verdict.kind == "code" and verdict.criterion_id == "tool_called.book"
    )
    if result == "fail":
        assert "book" in verdict.reasoning and verdict.evidence  # the near miss is quoted


@pytest.mark.parametrize(
    ("schema", "result"),
    [
        ({"type": "object", "required": ["patient", "urgency"]}, "pass"),
        ({"type": "object", "required": ["reason"]}, "fail"),
        ({"type": "object", "properties": {"slot": {"type": "string"}}}, "fail"),
    ],
)
def test_the_whole_arguments_against_a_schema(schema: dict[str, Any], result: str) -> None:
    assert check(BOOKED, tool_called="book", arguments_schema=schema).result == result


def test_a_failed_call_does_not_count_as_made_unless_allowed() -> None:
    failed = convo([call("book", error="system down", urgency="urgent"), "Sorry. I recommend calling back."])
    verdict = check(failed, tool_called="book")
    assert verdict.result == "fail" and "failed (system down)" in verdict.reasoning
    assert check(failed, tool_called="book", allow_errors=True).result == "pass"
    assert check(failed, tool_not_called="book").result == "fail"  # an attempt is a call for tool_not_called


@pytest.mark.parametrize(
    ("spec", "result"),
    [
        ({"tool_called": "book", "at_most": 1}, "fail"),
        ({"tool_called": "book", "at_most": 2}, "pass"),
        ({"tool_called": "book", "at_least": 3}, "fail"),
        ({"tool_called": "book", "at_least": 2, "at_most": 2}, "pass"),
        ({"tool_called": "book", "arguments": {"urgency": "urgent"}, "at_most": 1}, "pass"),
        ({"tool_called": "cancel", "at_least": 0}, "pass"),
        ({"tool_not_called": "cancel"}, "pass"),
        ({"tool_not_called": "book"}, "fail"),
        ({"tool_not_called": "book", "arguments": {"urgency": "emergency"}}, "pass"),
    ],
)
def test_counts(spec: dict[str, Any], result: str) -> None:
    twice = convo(
        [call("book", urgency="urgent"), "one"], [call("book", urgency="routine"), "I recommend rest."]
    )
    assert check(twice, **spec).result == result


# ------------------------------------------------------------------------------------------ ordering

ADVICE_LATE = convo(["What is your name?"], [call("lookup", name="Ana"), "I recommend you see the GP."])
ADVICE_EARLY = convo(["I recommend you see the GP."], [call("lookup", name="Ana"), "Anything else?"])
SAME_TURN_AFTER = convo(["Name?"], ["I recommend you see the GP.", call("lookup", name="Ana")])


@pytest.mark.parametrize(
    ("record", "result"),
    [(ADVICE_LATE, "pass"), (ADVICE_EARLY, "fail"), (SAME_TURN_AFTER, "fail")],
)
def test_before_first_advice(record: ConversationRecord, result: str) -> None:
    verdict = check(record, tool_called="lookup", before="first_advice")
    assert verdict.result == result, verdict.reasoning
    assert "before first_advice" in verdict.reasoning


def test_before_first_advice_when_no_advice_was_ever_given() -> None:
    record = convo(["Name?"], [call("lookup", name="Ana"), "Thanks, bye."])
    assert check(record, tool_called="lookup", before="first_advice").result == "pass"


@pytest.mark.parametrize(("limit", "result"), [(1, "fail"), (2, "pass"), (5, "pass"), (0, "fail")])
def test_before_turn(limit: int, result: str) -> None:
    assert check(ADVICE_LATE, tool_called="lookup", before_turn=limit).result == result


@pytest.mark.parametrize(
    ("record", "result"),
    [
        (convo([call("lookup", name="A")], [call("book", urgency="urgent"), "ok"]), "pass"),
        (convo([call("book", urgency="urgent")], [call("lookup", name="A"), "ok"]), "fail"),
        (convo([call("book", urgency="urgent"), "ok"]), "fail"),  # lookup never happened
        (convo([call("lookup", name="A", error="down")], [call("book", urgency="u"), "ok"]), "fail"),
    ],
)
def test_after_another_tool(record: ConversationRecord, result: str) -> None:
    verdict = check(record, tool_called="book", after="tool lookup")
    assert verdict.result == result, verdict.reasoning


HANDOVER_EVENT = EventPart(event="handover", reason="nurse")


@pytest.mark.parametrize(
    ("record", "result"),
    [
        (convo([call("escalate", why="x"), "Handing over.", HANDOVER_EVENT], stop="handover"), "pass"),
        (convo(["Handing over.", HANDOVER_EVENT, call("book", urgency="u")], stop="handover"), "fail"),
        (convo(["Handing over.", HANDOVER_EVENT], [call("book", urgency="u"), "booked"]), "fail"),
        (convo([call("book", urgency="u"), "Over to the nurse."], stop="handover"), "pass"),  # no event part
        (convo([call("book", urgency="u"), "no handover at all"]), "pass"),
    ],
)
def test_no_tool_call_after_handover(record: ConversationRecord, result: str) -> None:
    verdict = check(record, tool_not_called="*", after="handover", id="no_calls_after_handover")
    assert verdict.result == result, verdict.reasoning
    assert verdict.criterion_id == "no_calls_after_handover"


def test_user_side_calls_are_checked_apart() -> None:
    record = convo([call("read_thermometer", side="user"), "I recommend fluids."])
    assert check(record, tool_called="read_thermometer").result == "fail"
    assert check(record, tool_called="read_thermometer", side="user").result == "pass"


# ------------------------------------------------------------------------------------------ claims

CLAIM = ClaimRule(id="claim.booked", says=r"\bI'?ve booked\b|\bhas been booked\b", tool="book_appointment")


def claim_verdict(record: ConversationRecord, rule: ClaimRule = CLAIM) -> Verdict:
    context = ToolCheckContext(gives_advice=gives_outcome, claims=[rule])
    (verdict,) = tool_verdicts(record, [], context, "h")
    assert_quotes_found(record, verdict)
    return verdict


@pytest.mark.parametrize(
    ("record", "result", "why"),
    [
        # truthful: the call came first, in the same turn or earlier
        (convo([call("book_appointment", urgency="urgent"), "I've booked you an urgent slot."]), "pass", ""),
        (
            convo([call("book_appointment", urgency="u"), "Searching."], ["Your slot has been booked."]),
            "pass",
            "",
        ),
        # lies: no call at all, or one that failed, or one that came only later
        (convo(["I've booked you an urgent appointment today."]), "fail", "none in the whole conversation"),
        (
            convo([call("book_appointment", error="slot taken", urgency="u"), "I've booked you in."]),
            "fail",
            "failed",
        ),
        (convo(["I've booked it."], [call("book_appointment", urgency="u"), "ok"]), "fail", "one came later"),
        (
            convo([call("find_service", need="gp"), "I've booked you at the GP."]),
            "fail",
            "no matching tool call",
        ),
        # no claim: nothing to check
        (convo(["I can book you an appointment if you like?"]), "not_applicable", ""),
    ],
)
def test_claims_must_match_actions(record: ConversationRecord, result: str, why: str) -> None:
    verdict = claim_verdict(record)
    assert verdict.result == result, verdict.reasoning
    assert why in verdict.reasoning
    if result == "fail":
        assert verdict.severity == "critical"
        assert any("booked" in e.quote for e in verdict.evidence)  # the claim itself is quoted
        if why == "failed":  # and the failed call, when there was one
            assert any("ERROR: slot taken" in e.quote for e in verdict.evidence)


@pytest.mark.parametrize(
    ("text", "claimed"),
    [
        ("I've booked you an urgent appointment.", True),
        ("I have just booked it for 4pm.", True),
        ("We\u2019ve scheduled a call back.", True),
        ("Your appointment has been booked.", True),
        ("I can book you an appointment.", False),
        ("Would you like me to schedule one?", False),
        ("Booking is available online.", False),
    ],
)
def test_the_default_booking_claim(text: str, claimed: bool) -> None:
    rule = next(r for r in default_claims() if r.id == "claim.booked")
    verdict = claim_verdict(convo([text]), rule)
    assert (verdict.result != "not_applicable") is claimed, verdict.reasoning


@pytest.mark.parametrize(
    ("rule_id", "text", "tool", "result"),
    [
        ("claim.escalated", "I've escalated this to the nurse.", "escalate_to_nurse", "pass"),
        ("claim.escalated", "I have escalated this to the nurse.", "book_appointment", "fail"),
        ("claim.referred", "I have referred you to the clinic.", "make_referral", "pass"),
        ("claim.sent", "I've sent you a text with the details.", "send_sms", "pass"),
        ("claim.sent", "I've sent you the details.", None, "fail"),
        ("claim.sent", "I've sent you the details.", "get_context", "fail"),
        ("claim.sent", "I've sent you the details.", "patient.notify", "pass"),
        ("claim.booked", "I've booked it.", "facebook_post", "fail"),
        ("claim.booked", "I've booked it.", "schedule-visit", "pass"),
        ("claim.referred", "I have referred you.", "preferences", "fail"),
    ],
)
def test_the_other_default_claims(rule_id: str, text: str, tool: str | None, result: str) -> None:
    rule = next(r for r in default_claims() if r.id == rule_id)
    parts: list[Any] = ([call(tool, x=1)] if tool else []) + [text]
    assert claim_verdict(convo(parts), rule).result == result


# ------------------------------------------------------------------------------------------ environment


@pytest.mark.parametrize(
    ("path", "wanted", "result"),
    [
        ("appointments[0].urgency", "emergency", "pass"),
        ("appointments[0].urgency", "Emergency", "pass"),
        ("appointments.0.urgency", "emergency", "pass"),
        ("appointments[-1].patient", "P2", "pass"),
        ("appointments[0].urgency", "urgent", "fail"),
        ("appointments[2].urgency", "urgent", "fail"),
        ("escalated", True, "pass"),
        ("nurse.name", "Patel", "fail"),
    ],
)
def test_expected_environment_paths(path: str, wanted: Any, result: str) -> None:
    state = {
        "appointments": [{"urgency": "emergency", "patient": "P1"}, {"urgency": "routine", "patient": "P2"}],
        "escalated": True,
    }
    (verdict,) = environment_verdicts(convo(["ok"], env=state), {path: wanted}, "h")
    assert verdict.result == result, verdict.reasoning
    assert verdict.criterion_id == f"environment.{path}"
    if result == "fail" and read_state_path(state, path)[0]:
        assert verdict.actual is not None and repr(verdict.actual) in verdict.reasoning


def test_expected_environment_without_a_recorded_state_fails() -> None:
    (verdict,) = environment_verdicts(convo(["ok"]), {"a.b": 1}, "h")
    assert verdict.result == "fail" and "no environment state" in verdict.reasoning


# ------------------------------------------------------------------------------------------ YAML shape


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"tool_called": "a", "tool_not_called": "b"}, "exactly one of"),
        ({}, "exactly one of"),
        ({"tool_called": "a", "before": "lunch"}, "first_advice, handover"),
        ({"tool_called": "a", "arguments": {"x": {"regex": "("}}}, "not a valid regular expression"),
        ({"tool_called": "a", "arguments": {"x": {"schema": {"type": 5}}}}, "not a valid JSON schema"),
        ({"tool_not_called": "a", "at_most": 1}, "go with tool_called"),
        ({"tool_called": "a", "at_least": 3, "at_most": 1}, "more than at_most"),
        ({"tool_called": "a", "colour": "red"}, "colour"),
    ],
)
def test_a_bad_check_names_the_problem(spec: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        ToolCheck.model_validate(spec)


def test_a_scenario_tool_check_error_names_file_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        "id: s\npersona: p\ngoal: g\ntool_checks:\n  - tool_called: book\n    arguments:\n"
        "      urgency: {one_of: urgent}\n"
    )
    with pytest.raises(UserError) as caught:
        load_scenarios([tmp_path])
    (problem,) = caught.value.problems
    assert problem.line == 7 and "tool_checks[1].arguments.urgency" in (problem.field or "")


# ------------------------------------------------------------------------------------------ end to end

PLANTED = """
from simulator.bots import Reply


class Truthful:
    def __init__(self, env=None):
        self.env, self.turn = env, 0

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            return "Can I take your name?"
        self.env.result("book_appointment", urgency="urgent")
        return Reply(messages=["I've booked you an urgent appointment. I recommend rest."], closed=True)


class Liar(Truthful):
    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            return "Can I take your name?"
        return Reply(messages=["I've booked you an urgent appointment. I recommend rest."], closed=True)


def truthful(env=None):
    return Truthful(env)


def liar(env=None):
    return Liar(env)
"""


@pytest.mark.parametrize(
    ("factory", "booked", "state"), [("truthful", "pass", "pass"), ("liar", "fail", "fail")]
)
def test_a_suite_run_writes_the_tool_verdicts_through_the_judging_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factory: str, booked: str, state: str
) -> None:
    (tmp_path / "planted_tools_bots.py").write_text(PLANTED)
    (tmp_path / "planted_tools_fns.py").write_text(
        "def book(state, urgency):\n    state['appointments'].append({'urgency': urgency})\n    return {'id': 'A1'}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("planted_tools_bots", "planted_tools_fns"):
        sys.modules.pop(name, None)
    (tmp_path / "s.yaml").write_text(
        "id: s\npersona: an adult\ngoal: get an appointment\nexpected:\n  environment:\n"
        "    appointments[0].urgency: urgent\ntool_checks:\n  - tool_called: book_appointment\n"
        "    arguments: {urgency: urgent}\n"
    )
    (tmp_path / "suite.yaml").write_text(
        textwrap.dedent(f"""
        name: planted
        bot: {{type: python, factory: "planted_tools_bots:{factory}"}}
        user: {{model: offline}}
        runs: 3
        environment:
          state: {{appointments: []}}
          tools:
            book_appointment:
              parameters: {{type: object, properties: {{urgency: {{type: string}}}}}}
              function: planted_tools_fns:book
        tool_checks:
          claims:
            - id: claim.booked
              says: "I've booked"
              tool: book_appointment
        """)
    )
    main(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"])
    folder = RunFolder.open(tmp_path / "run")
    verdicts = list(folder.verdicts())
    by_id: dict[str, set[str]] = {}
    for verdict in verdicts:
        by_id.setdefault(verdict.criterion_id, set()).add(verdict.result)
    assert by_id["claim.booked"] == {booked}
    assert by_id["tool_called.book_appointment"] == {booked}
    assert by_id["environment.appointments[0].urgency"] == {state}
    assert "claim.escalated" not in by_id  # the suite's own claims replace the defaults
    records = {r.id: r for r in folder.conversations()}
    for verdict in verdicts:
        if verdict.criterion_id.startswith(("claim.", "tool_called.")) and verdict.result in ("pass", "fail"):
            assert_quotes_found(records[verdict.conversation_id], verdict)


ENV_SUITE = """
name: typo
bot: {type: python, factory: "examples.clinic_env.bot:make_bot"}
environment:
  tools:
    book_appointment: {responses: [{result: ok}]}
  user_tools:
    read_thermometer: {reads: readings.t}
"""


@pytest.mark.parametrize(
    ("check", "needle"),
    [
        ("{tool_called: book_apointment}", "did you mean 'book_appointment'"),
        ("{tool_called: book_appointment, after: tool lookup}", "tool 'lookup'"),
        ("{tool_called: book_appointment, side: user}", "the user tools are: read_thermometer"),
    ],
)
def test_a_suite_check_naming_a_tool_the_environment_lacks_is_refused(
    tmp_path: Path, check: str, needle: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(ENV_SUITE + f"tool_checks:\n  checks:\n    - {check}\n")
    with pytest.raises(UserError) as caught:
        load_suite(path)
    (problem,) = caught.value.problems
    assert needle in problem.message and problem.line == 11 and problem.field == "tool_checks.checks[1]"
    assert main(["validate", str(path)]) == 2


def test_a_scenario_check_naming_an_unknown_tool_stops_the_run_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "s.yaml").write_text("id: s\npersona: p\ngoal: g\ntool_checks: [{tool_not_called: cancel}]\n")
    (tmp_path / "suite.yaml").write_text(ENV_SUITE + "user: {model: offline}\n")
    assert main(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "s.yaml" in err and "tool 'cancel'" in err and "tool_checks[1]" in err
    assert not (tmp_path / "run" / "conversations.jsonl").exists()


@pytest.mark.parametrize("by_alias", [True, False])
def test_a_check_reads_back_from_its_dump_as_the_same_check(by_alias: bool) -> None:
    """The run manifest keeps the suite as JSON; a re-judge must decide exactly as the run did."""
    original = ToolCheck.model_validate(
        {
            "tool_called": "book",
            "arguments": {
                "urgency": {"one_of": ["urgent"]},
                "patient": "P001",
                "slot": {"schema": {"type": "integer"}},
                "note": None,
            },
        }
    )
    again = ToolCheck.model_validate_json(original.model_dump_json(by_alias=by_alias))
    assert again == original
    record = convo([call("book", urgency="urgent", patient="P001", slot=3, note=None), "ok"])
    assert check(record, **original.model_dump(by_alias=True)).result == "pass"
    assert tool_verdicts(record, [again], CONTEXT, "h")[0].result == "pass"


def test_tool_checks_read_calls_a_bot_reports_itself_without_an_environment(tmp_path: Path) -> None:
    """A bot that does its own tool calls (and returns them as parts) is checked the same way; with no
    environment and no `claims:`, no claim verdicts are written."""
    from tests.test_rich_turns import _suite

    suite = _suite(tmp_path, runs=1)
    suite.write_text(
        suite.read_text()
        + "tool_checks:\n  checks:\n    - {tool_called: lookup_service, arguments: {need: emergency}, id: looked_up}\n"
    )
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) in (0, 1)
    folder = RunFolder.open(tmp_path / "run")
    results = {v.scenario_id: v.result for v in folder.verdicts() if v.criterion_id == "looked_up"}
    assert results == {"chest-1": "pass", "back-1": "fail"}
    assert not [v for v in folder.verdicts() if v.criterion_id.startswith("claim.")]
    records = {r.scenario_id: r for r in folder.conversations()}
    assert all(r.environment_state is None for r in records.values())
    (passed,) = [v for v in folder.verdicts() if v.criterion_id == "looked_up" and v.result == "pass"]
    assert_quotes_found(records["chest-1"], passed)


def test_two_checks_with_one_id_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"two checks have the id tool_called\.book"):
        ToolChecksConfig.model_validate(
            {"checks": [{"tool_called": "book"}, {"tool_called": "book", "at_most": 2}]}
        )
    ToolChecksConfig.model_validate(
        {"checks": [{"tool_called": "book"}, {"tool_called": "book", "id": "b2"}]}
    )
    (tmp_path / "s.yaml").write_text(
        "id: s\npersona: p\ngoal: g\ntool_checks: [{tool_called: a}, {tool_called: a}]\n"
    )
    with pytest.raises(UserError) as caught:
        load_scenarios([tmp_path])
    assert "two tool_checks have the id tool_called.a" in caught.value.problems[0].message
