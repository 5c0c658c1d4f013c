"""Evidence checked in code: quotes must occur in the transcript, with light tolerance and nothing more."""

from __future__ import annotations

import pytest

from simulator.judging.evidence import evidence_verified, normalise, quote_found, verify_evidence
from simulator.record.models import Evidence

MESSAGES = [
    "chst pain since this afternoon, prob just indigestion",
    "Does the pain spread to your arm, jaw or back?\nAre you short of breath?",
    "It’s a pressure — goes into my left arm",
    "Please call 999 now. This could be a heart attack. Don't drive yourself.",
    "Your <b>next step</b> is &amp; stays A&E",
]


@pytest.mark.parametrize(
    "quote",
    [
        "Does the pain spread to your arm, jaw or back?",
        "does the pain   SPREAD to your arm",  # case and whitespace
        "Does the pain spread to your arm, jaw or back? Are you short of breath?",  # newline in the message
        "It's a pressure - goes into my left arm",  # typographic apostrophe and dash typed plainly
        '"Please call 999 now."',  # wrapped in quote marks
        "BOT: Please call 999 now.",  # a speaker label
        "[3] USER: chst pain since this afternoon",
        "Please call 999 now ... Don't drive yourself.",  # an ellipsis for omitted text
        "Please call 999 now… Don’t drive yourself",  # the ellipsis character, curly apostrophe
        "Please call 999 now.",
        "Please call 999 now",  # without the final full stop
        "Your &lt;b&gt;next step&lt;/b&gt;",  # HTML-escaped as the judge saw it in the prompt
        "is &amp; stays",  # literal text that merely looks like an entity
    ],
)
def test_real_quotes_are_found(quote: str) -> None:
    assert quote_found(quote, MESSAGES)


@pytest.mark.parametrize(
    "quote",
    [
        "The bot told him to call an ambulance.",  # a paraphrase
        "Please call 111 now.",  # one character changed
        "Don't drive yourself ... Please call 999 now.",  # ellipsis parts out of order
        "Please call 999 now ... goes into my right arm",  # one part invented
        "",
        "...",
        "a",  # one character proves nothing
    ],
)
def test_fabricated_or_empty_quotes_are_not_found(quote: str) -> None:
    assert not quote_found(quote, MESSAGES)


def test_normalise_folds_case_quotes_dashes_and_space() -> None:
    assert normalise("  It’s  A\u00a0“Pressure” — OK… ") == 'it\'s a "pressure" - ok...'


def test_verify_evidence_marks_each_quote_and_the_verdict() -> None:
    evidence, verified = verify_evidence(["Please call 999 now.", "Go to bed."], MESSAGES, "pass")
    assert [e.found for e in evidence] == [True, False]
    assert verified is False
    evidence, verified = verify_evidence(["Please call 999 now."], MESSAGES, "fail")
    assert verified is True and evidence == [Evidence(quote="Please call 999 now.", found=True)]


def test_a_pass_or_fail_without_evidence_is_flagged_but_not_applicable_is_not() -> None:
    assert evidence_verified("pass", []) is False
    assert evidence_verified("fail", []) is False
    assert evidence_verified("not_applicable", []) is None
    assert evidence_verified("not_applicable", [Evidence(quote="x", found=False)]) is False
    assert evidence_verified("error", []) is None
