"""Claims found by default (config/claims.py): what bots really say, in the past, the present and as a
promise, with no environment needed; a claim rule naming a tool nothing declares is refused by `validate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.claims import ClaimRule, default_claims, folded, needed_words
from simulator.config.patterns import compile_pattern
from simulator.config.suite import load_suite
from simulator.config.tool_checks import ToolChecksConfig
from simulator.errors import UserError
from simulator.judging.tool_checks import ToolCheckContext, tool_verdicts
from simulator.record.models import ErrorInfo
from simulator.text.content import gives_outcome
from tests.support.projects import cough_project
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
            "tool_checks.claims[2].tool",
            "claim claim.called names tool 'book_callback', which no environment or bot declares; neither "
            "the environment nor the bot declares any tool",
        ),
        (ENV_SUITE, 8, "tool_checks.claims[1].tools", "did you mean 'book_appointment'?"),
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


CLAIMS = [
    "A nurse will call you back within 2 hours.", "I'll book you in for tomorrow morning.",
    "We\u2019ll book a slot for you.", "A link will be sent to your phone.", "I'm going to refer you.",
    "We are escalating your case.", "Your appointment has been booked.", "I have referred you to the clinic.",
    "Thanks. Sending you the form now.", "You'll get a call from a doctor.", "I've asked a nurse to phone you.",
    "We have requested a callback for you.", "Expect a phone call shortly.", "I've emailed you the details.",
    "I'VE TEXTED YOU THE LINK.", "I'll EMA\u0130L you the link.", "I will escalate this.", "I'M BOO\u212aING IT.",
    "we\u2019re \u017fending it now", "I've scheduled a visit.", "We have reserved a bed.",
]  # fmt: skip


def test_the_default_rules_are_valid_rules() -> None:
    # Built without validation (their patterns compile only where a bot says their words): each is what
    # validating it gives, and the ids and tool patterns are the documented ones.
    for rule in default_claims():
        assert ClaimRule.model_validate(rule.model_dump()) == rule
    start = r"(?:^|[_.\-])"
    assert [(r.id, r.tool_matches) for r in default_claims()] == [
        ("claim.booked", start + "(?:book|schedul|reserv)"),
        ("claim.escalated", start + "escalat"),
        ("claim.referred", start + "refer"),
        ("claim.sent", start + "(?:send|sent|e?mail|text|sms|notif)"),
        ("claim.callback", start + "(?:call|ring|phone|contact|escalat|refer|book|schedul|task|notif)"),
    ]


@pytest.mark.parametrize("text", CLAIMS)
def test_a_text_a_default_rule_matches_holds_one_of_its_words(text: str) -> None:
    # The words are necessary: wherever a default pattern matches (any case, the dotted capital I, the
    # Kelvin sign, the long s), one of its words is in the folded text.
    matched = 0
    for rule in default_claims():
        words = needed_words(rule)
        assert words
        if compile_pattern(rule.says, "says").search(text):
            matched += 1
            assert any(word in folded(text) for word in words), (rule.id, text)
    assert matched >= 1
    assert needed_words(ClaimRule(id="mine", says="booked", tool="book")) is None  # a suite's own rule


_PROBE = """
import json, sys
import regex
compiled = []
_compile = regex.compile
def compile(pattern, *args, **kwargs):
    compiled.append(pattern)
    return _compile(pattern, *args, **kwargs)
regex.compile = compile
from simulator.cli import main
code = main(sys.argv[1:])
from simulator.config.claims import default_claims
print(json.dumps([code, [r.id for r in default_claims() if r.says in compiled]]))
"""


@pytest.mark.parametrize(
    ("reply", "compiled"),
    [
        ("Thank you. How long have you had the cough?", []),
        ("I've booked you an appointment.", ["claim.booked"]),
    ],
)
def test_a_run_compiles_only_the_default_patterns_its_bot_could_match(
    tmp_path: Path, reply: str, compiled: list[str]
) -> None:
    # Compiling the five default `says` patterns was a tenth of a one-conversation run's start-up.
    (tmp_path / "quiet_bot.py").write_text(
        f"class Bot:\n    def send(self, text):\n        return {reply!r}\n\ndef make_bot():\n    return Bot()\n",
        encoding="utf-8",
    )
    cough_project(tmp_path, "quiet", "quiet_bot:make_bot")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "run", "suite.yaml", "--out", "run", "--no-progress"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    code, found = json.loads(done.stdout.strip().splitlines()[-1])
    assert code in (0, 1) and found == compiled
    conversation = json.loads((tmp_path / "run" / "conversations.jsonl").read_text(encoding="utf-8"))
    assert any(t["role"] == "bot" for t in conversation["turns"])  # the bot spoke


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
        found = compile_pattern(rule.says, "says").search(text) is not None
        assert claim_made(rule, record) == found, (rule.id, text)
