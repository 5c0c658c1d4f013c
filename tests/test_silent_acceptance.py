"""Issue 43, class 7: what used to be accepted without a word is now one clear error naming the file or
field: a canned tool response with neither or both of result/error, two scenarios with one id given in
code, an import that finds no conversation, `validate` on a folder with nothing to validate."""

from __future__ import annotations

from pathlib import Path

import pytest

import simulator
from simulator.cli import main
from simulator.config.suite import load_suite
from simulator.errors import UserError

SUITE = """
name: env
bot: {type: python, factory: examples.triage_bot:make_bot}
environment:
  tools:
    find:
      responses:
"""


@pytest.mark.parametrize(
    ("response", "phrase"),
    [
        ("- when: {need: x}\n", "neither"),
        ("- {when: {need: x}, result: 1, error: down}\n", "error and result"),
        ("- {}\n", "neither"),
    ],
)
def test_a_canned_response_needs_exactly_one_answer(tmp_path: Path, response: str, phrase: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE + "        " + response)
    with pytest.raises(UserError) as caught:
        load_suite(path)
    rendered = caught.value.render()
    assert "exactly one of `result`" in rendered and phrase in rendered and f"{path}:" in rendered


@pytest.mark.parametrize(
    "response",
    [
        "- {when: {need: x}, result: null}\n",
        "- {when: {}, error: down}\n",
        "- {when: {}, result: null, error: down}\n",  # as a record writes it back
    ],
)
def test_a_null_result_or_an_error_alone_is_fine(tmp_path: Path, response: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE + "        " + response)
    assert load_suite(path).environment is not None


@pytest.mark.parametrize(
    "scenarios",
    [
        [{"id": "a", "persona": "p", "goal": "g"}, {"id": "a", "persona": "q", "goal": "h"}],
        [
            simulator.Scenario(id="b", persona="p", goal="g"),
            {"id": "c", "persona": "p", "goal": "g"},
            {"id": "b", "persona": "p", "goal": "g"},
        ],
    ],
)
def test_two_scenarios_with_one_id_in_code_are_refused(scenarios: list[object]) -> None:
    with pytest.raises(UserError, match=r"scenarios\[\d\]: id '\w' is already scenarios\[\d\]'s"):
        simulator.run(scenarios=scenarios, bot=lambda text: "ok")


@pytest.mark.parametrize("content", ["", "\n\n", "{not json}\n", '{"a": 1}\n'])
def test_an_import_that_finds_no_conversation_fails_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    source = tmp_path / "export.jsonl"
    source.write_text(content)
    out = tmp_path / "imported"
    assert main(["import", str(source), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no conversations to import" in err and "nothing was written" in err and not out.exists()


@pytest.mark.parametrize("layout", ["empty folder", "folder named suite.yaml", "only other files"])
def test_validate_on_a_folder_with_nothing_to_check_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    folder = tmp_path / ("suite.yaml" if layout == "folder named suite.yaml" else "scenarios")
    folder.mkdir()
    if layout == "only other files":
        (folder / "notes.txt").write_text("id: a\n")
    assert main(["validate", str(folder)]) == 2
    assert "nothing to validate" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("expected", "phrase"),
    [
        ("{closed: 'yes'}", "expected.closed is true or false"),
        ("{handover: 1}", "expected.handover is true or false"),
        ("{closed: 'true'}", "expected.closed is true or false"),
        ("{stop_reason: finished}", "expected.stop_reason 'finished': one of"),
    ],
)
def test_an_ending_expected_in_the_wrong_form_is_refused(tmp_path: Path, expected: str, phrase: str) -> None:
    from simulator.config.loading import load_scenarios

    path = tmp_path / "s.yaml"
    path.write_text(f"id: a\npersona: p\ngoal: g\nexpected: {expected}\n")
    with pytest.raises(UserError) as caught:
        load_scenarios([path])
    assert phrase in caught.value.render() and f"{path}:" in caught.value.render()


def test_the_ending_names_match_the_record_and_the_checks() -> None:
    from typing import get_args

    from simulator.config.scenario import ENDING_FLAGS, STOP_REASONS
    from simulator.judging.code_checks import STOP_KEYS
    from simulator.record.models import StopReason

    assert set(STOP_REASONS) == set(get_args(StopReason)) and set(ENDING_FLAGS) == set(STOP_KEYS)
