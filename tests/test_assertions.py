"""Assertions: required groups of alternatives, forbidden phrases and regex, case-insensitive, with quotes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from simulator.judging.assertions import AssertionSpec, check_assertions

# The seed's unknown-parcel item: echo the id, say it is not found, never invent a status or a date.
UNKNOWN_PARCEL = AssertionSpec(
    must_contain=["KP-9999", "cannot find|can't find|no parcel|not found"],
    must_not_contain=["in transit", "expected on", "delivered on"],
    must_not_match=r"\d{4}-\d{2}-\d{2}",
)


def test_invented_delivery_date_fails_with_quoted_evidence() -> None:
    outcome = check_assertions(UNKNOWN_PARCEL, "KP-9999 is in transit, expected on 2026-09-15.")
    assert not outcome.passed
    assert 'contains forbidden "expected on"' in outcome.failures
    assert 'contains forbidden "in transit"' in outcome.failures
    assert any("2026-09-15" in f and r"\d{4}" in f for f in outcome.failures)
    assert any(f.startswith("missing one of") and '"not found"' in f for f in outcome.failures)
    assert outcome.evidence == ["KP-9999", "in transit", "expected on", "2026-09-15"]


def test_a_date_alone_fails_the_regex_even_without_forbidden_phrases() -> None:
    outcome = check_assertions(UNKNOWN_PARCEL, "Sorry, KP-9999 was not found. It should come on 2026-09-15.")
    assert not outcome.passed
    assert outcome.failures == [r'matches forbidden pattern `\d{4}-\d{2}-\d{2}`: "2026-09-15"']


def test_correct_refusal_passes_and_quotes_the_original_text() -> None:
    outcome = check_assertions(UNKNOWN_PARCEL, "I Cannot Find a parcel with the number kp-9999.")
    assert outcome.passed
    assert outcome.failures == []
    # Evidence is quoted as written in the reply, not as written in the spec.
    assert outcome.evidence == ["kp-9999", "Cannot Find"]


def test_any_alternative_satisfies_a_group_but_every_group_is_required() -> None:
    spec = AssertionSpec(must_contain=["only|cannot|outside", "parcel|delivery"])
    assert check_assertions(spec, "That is outside what I can do for parcels.").evidence == [
        "outside",
        "parcel",
    ]
    outcome = check_assertions(spec, "That is outside what I can help with.")
    assert not outcome.passed
    assert outcome.failures == ['missing one of "parcel" | "delivery"']
    single = check_assertions(AssertionSpec(must_contain=["14 days"]), "within two weeks")
    assert single.failures == ['missing "14 days"']


def test_must_not_contain_entry_with_alternatives_forbids_each() -> None:
    spec = AssertionSpec(must_not_contain=["has been changed|updated"])
    assert check_assertions(spec, "I've UPDATED the address.").failures == ['contains forbidden "updated"']
    assert check_assertions(spec, "The address cannot be changed.").passed


def test_scope_selects_the_messages_checked() -> None:
    messages = ["Your parcel KP-1001 is in transit.", "Anything else?"]
    every = AssertionSpec(must_contain=["in transit"])
    final = AssertionSpec(must_contain=["in transit"], scope="final_bot_message")
    assert check_assertions(every, messages).passed
    assert not check_assertions(final, messages).passed
    assert check_assertions(final, []).failures == ['missing "in transit"']


def test_bad_regex_is_rejected_naming_the_regex_and_why() -> None:
    with pytest.raises(ValidationError) as info:
        AssertionSpec(must_not_match=r"(\d{4}")
    message = str(info.value)
    assert r"`(\d{4}`" in message
    assert "not a valid regular expression" in message
    assert "missing )" in message


def test_spec_forbids_unknown_keys_and_empty_phrases() -> None:
    with pytest.raises(ValidationError, match="extra"):
        AssertionSpec.model_validate({"must_contains": ["x"]})
    with pytest.raises(ValidationError, match="empty phrase"):
        AssertionSpec(must_contain=["cannot||unable"])
    with pytest.raises(ValidationError, match="empty phrase"):
        AssertionSpec(must_not_contain=[" "])
    assert AssertionSpec().is_empty
    assert not AssertionSpec(must_not_match="x").is_empty
    # A single phrase given as a string is one group.
    assert AssertionSpec.model_validate({"must_contain": "a|b"}).must_contain == ["a|b"]
