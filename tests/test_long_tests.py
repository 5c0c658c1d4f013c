"""The suite's order (tests/conftest.py): the real-model group first, then the longest tests
(tests/long_tests.txt) longest first, then the rest in their own order; and every listed test exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import _long_tests


def _collected(request: pytest.FixtureRequest) -> list[pytest.Item]:
    return list(request.session.items)


def test_every_listed_long_test_is_a_test_of_the_suite(request: pytest.FixtureRequest) -> None:
    """Checked for the files this session collected (all of them in the README's command): a renamed or
    removed test must leave the list, or it would silently lose its place."""
    items = _collected(request)
    files = {item.nodeid.split("::")[0] for item in items}
    ids = {item.nodeid for item in items}
    listed = [node for node in _long_tests() if node.split("::")[0] in files]
    assert [node for node in listed if node not in ids] == []
    for node in _long_tests():
        assert (Path(__file__).parent.parent / node.split("::")[0]).is_file(), node


def test_the_real_model_group_then_the_longest_tests_go_first(request: pytest.FixtureRequest) -> None:
    items = _collected(request)
    real = [item.get_closest_marker("real_llm") is not None for item in items]
    assert real == sorted(real, reverse=True)  # every real-model test before every other
    rank = _long_tests()
    places = [
        rank.get(item.nodeid, len(rank)) for item, is_real in zip(items, real, strict=True) if not is_real
    ]
    assert places == sorted(places)  # the listed ones in the list's order, then the rest
