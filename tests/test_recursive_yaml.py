"""Issue 43, class 1: a YAML alias that refers to a value containing it (`facts: &f [*f]`) expands for
ever. The one bounded YAML parser (`config/yamlfile.parse_yaml`, called by every file reader and by the
desk's drafts) refuses it at once, by the set of nodes on the current path, with one line naming the file
and line; `validate`, `safety-case --hazards` and the desk's editor all answer in well under a second."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.yamlfile import YAMLProblem, load_yaml, parse_yaml
from simulator.errors import UserError
from simulator.safety.hazards import load_hazard_log
from tests.desk_support import csrf, desk_client, make_desk_folders

SCENARIO = "id: s1\npersona: p\ngoal: g\n"
RECURSIVE = {
    "a list holding itself": SCENARIO + "facts: &f\n  - *f\n",
    "the issue's file": "facts: &f\n  - *f\n",
    "a mapping holding itself": SCENARIO + "expected: &e {inner: *e}\n",
    "a merge key of itself": SCENARIO + "expected: &e\n  a: 1\n  b:\n    <<: *e\n",
    "two values holding each other": SCENARIO + "expected:\n  a: &a [x, &b [y, *a]]\n  c: *b\n",
    "deep in a flow list": SCENARIO + "tags: [a, b, &t [c, [d, [e, *t]]]]\n",
    "as a key": SCENARIO + "expected: &k {? *k : v}\n",
}


@pytest.mark.timeout(120)  # a hang, not a slow machine, fails it: no timed assertion (noisy under load)
@pytest.mark.parametrize("case", sorted(RECURSIVE))
def test_a_self_containing_alias_is_refused_at_once(tmp_path: Path, case: str) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(RECURSIVE[case])
    with pytest.raises(YAMLProblem) as caught:
        load_yaml(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:") and "refers to a value that contains it" in message
    assert "\n" not in message


@pytest.mark.parametrize("case", sorted(RECURSIVE))
def test_validate_names_the_file_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(RECURSIVE[case])
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "refers to a value that contains it" in err


def test_a_shared_alias_that_is_not_recursive_still_loads(tmp_path: Path) -> None:
    """The same value used twice (a diamond, not a cycle) is an ordinary alias."""
    path = tmp_path / "ok.yaml"
    path.write_text(SCENARIO + "tags: &t [a, b]\nexpected:\n  x: *t\n  y: [*t, *t]\n  z: {<<: {k: *t}}\n")
    assert load_yaml(path).data["expected"]["y"] == [["a", "b"], ["a", "b"]]


@pytest.mark.parametrize("text", ["hazards: &h\n  - *h\n", "matrix: &m {rows: *m}\nhazards: []\n"])
def test_a_recursive_hazard_log_is_refused(tmp_path: Path, text: str) -> None:
    log = tmp_path / "hazards.yaml"
    log.write_text(text)
    with pytest.raises(UserError) as caught:
        load_hazard_log(log)
    assert "refers to a value that contains it" in caught.value.render()


@pytest.mark.timeout(120)  # a hang, not a slow machine, fails it: no timed assertion (noisy under load)
def test_the_desk_editor_answers_a_recursive_draft_at_once(tmp_path: Path) -> None:
    folders = make_desk_folders(tmp_path)
    client = desk_client(folders)
    for text in (RECURSIVE["the issue's file"], RECURSIVE["a mapping holding itself"]):
        response = client.post(
            "/edit/validate",
            json={"area": "judges", "path": "asks-age.yaml", "text": text},
            headers={"X-CSRF-Token": csrf(client)},
        )
        assert response.status_code == 200
        assert any("refers to a value that contains it" in p for p in response.json()["problems"])


def test_a_draft_over_the_size_cap_is_refused_without_parsing() -> None:
    with pytest.raises(YAMLProblem, match="larger than"):
        parse_yaml("a: " + "x" * 6_000_000, Path("big.yaml"))
