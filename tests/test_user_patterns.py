"""Users' regular expressions on bots' text have a time limit per match (issue 30, item 9): a catastrophic
`must_not_match`, style `when`, vocabulary or redaction pattern stops within the limit and is reported by
name (an error verdict, never a pass or a fail); lookarounds still work; an empty redaction name is refused
(issue 30, item 14)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from simulator.config.assertions import AssertionSpec
from simulator.config.patterns import MATCH_TIMEOUT_S, PatternTimeout, compile_pattern
from simulator.errors import UserError
from simulator.judging.code_checks import assertion_verdict
from simulator.traces.redact import Redactor, load_redactor
from tests.test_report_support import record

CATASTROPHIC = [r"(a+)+$", r"(a|aa)+$", r"(a*)*b", r"^(\w+\s?)*$", r"(x+x+)+y"]
HOSTILE_TEXT = {
    r"(a+)+$": "a" * 5000 + "!",
    r"(a|aa)+$": "a" * 5000 + "!",
    r"(a*)*b": "a" * 5000,
    r"^(\w+\s?)*$": "word " * 2000 + "!",
    r"(x+x+)+y": "x" * 5000,
}


@pytest.fixture
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit at 0.05 s for the tests that run into it: what they check (stopped, named, an error verdict)
    does not depend on its length, and at 1 s the ten of them spent ten seconds of CPU backtracking."""
    import simulator.config.patterns as patterns

    monkeypatch.setattr(patterns, "MATCH_TIMEOUT_S", 0.05)


@pytest.mark.usefixtures("short_limit")
@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_a_catastrophic_pattern_stops_at_the_limit_and_is_named(pattern: str) -> None:
    compiled = compile_pattern(pattern)
    start = time.monotonic()
    try:
        compiled.search(HOSTILE_TEXT[pattern])  # the matcher may be clever enough to finish at once
    except PatternTimeout as exc:
        assert pattern in str(exc) and "must_not_match" in str(exc)
    else:
        assert pattern not in (r"(a+)+$", r"(x+x+)+y")  # these two always backtrack
    # Stopped in seconds, not the minutes backtracking takes (generous: a loaded machine runs slowly).
    assert time.monotonic() - start < MATCH_TIMEOUT_S * 30


@pytest.mark.usefixtures("short_limit")
@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(x+x+)+y"])
def test_must_not_match_that_times_out_is_an_error_verdict(pattern: str) -> None:
    rec = record(
        "c",
        turns=[
            {"index": 0, "role": "user", "messages": ["hi"], "started_at": "2026-01-01T00:00:00Z"},
            {
                "index": 0,
                "role": "bot",
                "messages": [HOSTILE_TEXT[pattern]],
                "started_at": "2026-01-01T00:00:01Z",
            },
        ],
    )
    verdict = assertion_verdict(rec, AssertionSpec(must_not_match=pattern), "sha256:x")
    assert verdict.result == "error" and pattern in verdict.reasoning


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"\b(?!2026-09-15)\d{4}-\d{2}-\d{2}\b", "arrives 2026-09-16", True),
        (r"\b(?!2026-09-15)\d{4}-\d{2}-\d{2}\b", "arrives 2026-09-15", False),
        (r"(?<=call )\d{3}", "please CALL 999", True),
        (r"(\w)\1", "bookkeeper", True),
    ],
)
def test_ordinary_patterns_keep_their_meaning(pattern: str, text: str, found: bool) -> None:
    assert (compile_pattern(pattern).search(text) is not None) is found


@pytest.mark.usefixtures("short_limit")
def test_redaction_rules_are_bounded_too() -> None:
    redactor = Redactor([("custom", r"(a+)+$")])
    with pytest.raises(PatternTimeout, match="redaction rules"):
        redactor.text("a" * 5000 + "!")
    assert Redactor([("id", r"HOSP-\d{6}")]).text("seen at HOSP-123456") == "seen at [ID]"


@pytest.mark.parametrize("names", ['[""]', "['  ']", "[Alice, '']", '["\\t"]'])
def test_an_empty_redaction_name_is_refused(tmp_path: Path, names: str) -> None:
    path = tmp_path / "redact.yaml"
    path.write_text(f"names: {names}\n")
    with pytest.raises(UserError, match=r"\[names\.\d\]: an empty or blank name"):
        load_redactor(path)


def test_an_empty_custom_pattern_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "redact.yaml"
    path.write_text("custom: {x: ''}\n")
    with pytest.raises(UserError, match=r"custom\.x"):
        load_redactor(path)


@pytest.mark.usefixtures("short_limit")
@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(x+x+)+y"])
@pytest.mark.parametrize("where", ["claim says", "argument regex"])
def test_a_tool_check_pattern_that_times_out_is_an_error_verdict(pattern: str, where: str) -> None:
    """The tool checks' patterns (a claim rule's `says`, an argument's `regex`) are users' patterns too."""
    from simulator.config.claims import ClaimRule
    from simulator.config.tool_checks import ToolCheck
    from simulator.judging.tool_checks import ToolCheckContext, tool_verdicts
    from simulator.record.parts import TextPart, ToolCallPart
    from simulator.record.transcript import Turn
    from simulator.text.content import gives_outcome

    hostile = HOSTILE_TEXT[pattern]
    rec = record("s")
    call = ToolCallPart(name="book", arguments={"note": hostile}, result={"ok": True}, side="bot")
    rec.turns = [
        Turn(index=0, role="user", parts=[TextPart(text="hi")], started_at=rec.started_at),
        Turn(index=0, role="bot", parts=[call, TextPart(text=hostile)], started_at=rec.started_at),
    ]
    if where == "claim says":
        context = ToolCheckContext(
            gives_advice=gives_outcome, claims=[ClaimRule(id="c", says=pattern, tool="book")]
        )
        checks: list[ToolCheck] = []
    else:
        context = ToolCheckContext(gives_advice=gives_outcome)
        checks = [
            ToolCheck.model_validate({"tool_called": "book", "arguments": {"note": {"regex": pattern}}})
        ]
    (verdict,) = tool_verdicts(rec, checks, context, "h")
    assert verdict.result == "error" and pattern in (verdict.reasoning or "")
