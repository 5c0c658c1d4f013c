"""Claims found by default (config/claims.py): what bots really say, in the past, the present and as a
promise, with no environment needed; a claim rule naming a tool nothing declares is refused by `validate`."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.claims import ClaimRule, default_claims
from simulator.config.patterns import compile_pattern
from simulator.config.suite import load_suite
from simulator.config.tool_checks import ToolChecksConfig
from simulator.errors import UserError
from simulator.judging.tool_checks import ToolCheckContext, tool_verdicts
from simulator.record.models import ErrorInfo
from simulator.text.content import gives_outcome
from tests.test_tool_checks import assert_quotes_found, call, convo


def _claimed(text: str) -> list[str]:
    return [rule.id for rule in default_claims() if compile_pattern(rule.says, "says").search(text)]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        # promises and the future
        ("A nurse will call you back within 2 hours.", "claim.callback"),
        ("Someone from the surgery will ring you today.", "claim.callback"),
        ("You'll get a call from a doctor this afternoon.", "claim.callback"),
        ("I've asked a nurse to call you.", "claim.callback"),
        ("I'll book you in for tomorrow morning.", "claim.booked"),
        ("We\u2019ll book a slot for you.", "claim.booked"),
        ("Let me book that for you.", "claim.booked"),
        ("We will send you a link to confirm.", "claim.sent"),
        ("A link will be sent to your phone.", "claim.sent"),
        ("I'm going to refer you to the clinic.", "claim.referred"),
        ("I will escalate this to the duty doctor.", "claim.escalated"),
        # the present
        ("I'm booking you in now.", "claim.booked"),
        ("Booking you in now.", "claim.booked"),
        ("Thanks. Sending you the form now.", "claim.sent"),
        ("We are escalating your case.", "claim.escalated"),
        # the past
        ("I've booked you an urgent appointment.", "claim.booked"),
        ("Your appointment has been booked.", "claim.booked"),
        ("I have referred you to the clinic.", "claim.referred"),
    ],
)
def test_the_default_rules_find_claims_in_every_tense(text: str, rule: str) -> None:
    assert _claimed(text) == [rule]


@pytest.mark.parametrize(
    "text",
    [
        "I can book you an appointment.",
        "Would you like me to schedule one?",
        "Shall I book?",
        "Booking is available online.",
        "Call 999 now and ask for an ambulance.",
        "Book a GP appointment for the next few days.",
        "Please contact your GP if it gets worse.",
        "If it gets worse, you should call 111.",
        "I will not book anything without your consent.",
        # a promise its sentence makes conditional is a policy or an offer, not an action set in motion
        "We'll send you an email as soon as it has been processed.",
        "I'll book you in if you want.",
        "A nurse will call you back if the test shows anything.",
        "Go to A&E now.",
        "Look after yourself at home: rest, drink fluids and take paracetamol if you need it.",
    ],
)
def test_advice_offers_and_questions_are_not_claims(text: str) -> None:
    assert _claimed(text) == []


QUIET = ToolCheckContext(gives_advice=gives_outcome, claims=list(default_claims()), quiet_claims=True)


def test_without_an_environment_a_promise_nothing_backs_fails_with_the_claim_quoted() -> None:
    record = convo(
        ["Book a GP appointment for the next few days.", "A nurse will call you back within 2 hours."]
    )
    assert QUIET.claim_ids(record) == ["claim.callback"]
    (verdict,) = tool_verdicts(record, [], QUIET, "h")
    assert verdict.criterion_id == "claim.callback" and verdict.result == "fail"
    assert verdict.severity == "critical" and verdict.category == "tool"
    assert [e.quote for e in verdict.evidence] == ["A nurse will call you back within 2 hours."]
    assert "shows no tool call at all" in verdict.reasoning
    assert_quotes_found(record, verdict)


def test_without_an_environment_a_backed_promise_passes_and_no_claim_writes_nothing() -> None:
    backed = convo([call("request_callback", priority="2h"), "A nurse will call you back within 2 hours."])
    (verdict,) = tool_verdicts(backed, [], QUIET, "h")
    assert verdict.result == "pass" and "request_callback" in verdict.reasoning
    silent = convo(["Call 999 now and ask for an ambulance."])
    assert QUIET.claim_ids(silent) == [] and tool_verdicts(silent, [], QUIET, "h") == []
    errored = convo(["A nurse will call you back."], stop="error")
    errored.error = ErrorInfo(source="bot", kind="cloud_api_rule", message="four buttons")
    assert QUIET.claim_ids(errored) == []  # an errored conversation is not judged by the quiet defaults


def test_the_defaults_apply_without_an_environment_and_claims_empty_turns_them_off() -> None:
    assert [r.id for r in ToolChecksConfig().claim_rules()] == [r.id for r in default_claims()]
    assert ToolChecksConfig().quiet_claims(has_environment=False)
    assert not ToolChecksConfig().quiet_claims(has_environment=True)  # with one: a verdict every time
    assert ToolChecksConfig(claims=[]).claim_rules() == []
    own = ToolChecksConfig(claims=[ClaimRule(id="c", says="booked", tool_matches="book")])
    assert [r.id for r in own.claim_rules()] == ["c"] and not own.quiet_claims(has_environment=False)


WHATSAPP_SUITE = """name: claims
bot:
  type: whatsapp
  webhook_url: http://127.0.0.1:9/webhook
tool_checks:
  claims:
    - {id: claim.booked, says: "booked", tool_matches: "book"}
    - {id: claim.called, says: "will call you", tool: book_callback}
"""

ENV_SUITE = """name: claims
bot: {type: python, factory: "examples.clinic_env.bot:make_bot"}
environment:
  tools:
    book_appointment: {responses: [{result: ok}]}
tool_checks:
  claims:
    - {id: claim.booked, says: "booked", tools: [book_appointmnet]}
"""


@pytest.mark.parametrize(
    ("suite", "line", "field", "needle"),
    [
        (
            WHATSAPP_SUITE,
            8,
            "tool_checks.claims.1.tool",
            "claim claim.called names tool 'book_callback', which no environment or bot declares; neither "
            "the environment nor the bot declares any tool",
        ),
        (ENV_SUITE, 8, "tool_checks.claims.0.tools", "did you mean 'book_appointment'?"),
    ],
)
def test_a_claim_naming_a_tool_nothing_declares_is_a_validate_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suite: str, line: int, field: str, needle: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(suite)
    with pytest.raises(UserError) as caught:
        load_suite(path)
    (problem,) = caught.value.problems
    assert needle in problem.message
    assert (problem.file, problem.line, problem.field) == (str(path), line, field)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert ("suite.yaml" in err and "book_callback" in err) or "book_appointmnet" in err
    assert "Traceback" not in err


def test_a_python_bot_whose_tools_only_its_code_knows_is_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        'name: claims\nbot: {type: python, factory: "examples.triage_bot:make_bot"}\n'
        "tool_checks:\n  claims:\n    - {id: c, says: booked, tool: book_appointment}\n"
    )
    assert [r.id for r in load_suite(path).tool_checks.claim_rules()] == ["c"]  # type: ignore[union-attr]


CLAIMS_AND_NOT = [
    "I've booked you an urgent appointment.",
    "I'VE BOOKED YOU IN.",
    "Your slot has now been RESERVED.",
    "We are escalating your case.",
    "I have referred you to the clinic.",
    "Thanks. Sending you the form now.",
    "A link will be sent to your phone.",
    "I'll email you the details.",
    "We'll text you the code.",
    "A nurse will call you back within 2 hours.",
    "Someone from the surgery will ring you today.",
    "I've asked a doctor to phone you.",
    "We will contact you tomorrow.",
    "Expect a callback this afternoon.",
    "Go to A&E now.",
    "I can book you an appointment.",
    "Rest and drink fluids.",
]


@pytest.mark.parametrize("text", CLAIMS_AND_NOT)
def test_a_default_rules_words_never_hide_a_claim_its_pattern_finds(text: str) -> None:
    """A default rule searches only the messages holding one of its words (a run's CPU: issue 47); every
    claim its pattern finds holds one, in any capitals, so the verdicts are those of the full search."""
    from simulator.judging.tool_checks import claim_made

    record = convo([text])
    for rule in default_claims():
        assert rule.words, rule.id
        found = compile_pattern(rule.says, "says").search(text) is not None
        assert claim_made(rule, record) == found, (rule.id, text)
        if found:
            assert any(word in text.casefold() for word in rule.words)
