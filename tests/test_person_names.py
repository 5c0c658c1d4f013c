"""Issue 43, class 10: a person's name given on the command line (`unseal --by`, `labels import
--labeller`, `safety-case --sign --name/--role`) or at the desk is recorded and printed back, so one
mechanism (simulator/names.py) refuses a control or format character with one line naming the flag: no
raw terminal escape is ever stored or echoed."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.errors import UserError
from simulator.names import person_name

HOSTILE = {
    "OSC 52 clipboard": "\x1b]52;c;ZWNobyBwd25lZA==\x07",
    "window title": "Dr A\x1b]0;owned\x1b\\",
    "clear screen": "\x1b[2J\x1b[Hdr",
    "one-byte CSI": "dr\x9b31m",
    "carriage return": "safe\rEVIL",
    "bell": "ding\x07",
    "right-to-left override": "file\u202egnp",
    "zero-width isolate": "\u2066iso\u2069",
    "NUL": "a\x00b",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("flag", ["--by", "--labeller", "--name", "reviewer"])
def test_a_name_with_a_control_character_is_refused_naming_the_flag(name: str, flag: str) -> None:
    with pytest.raises(UserError) as caught:
        person_name(HOSTILE[name], flag)
    message = str(caught.value)
    assert message.startswith(flag) and "control character" in message
    assert "\x1b" not in message and "\x9b" not in message and "\u202e" not in message


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("  Dr  Ada  ", "Dr Ada"),
        ("Zoë Ñúñez", "Zoë Ñúñez"),
        ("李医生", "李医生"),
        ("dr-smith\t2", "dr-smith 2"),
    ],
)
def test_ordinary_names_are_kept(given: str, kept: str) -> None:
    assert person_name(given, "--by") == kept


@pytest.mark.parametrize("given", ["", "   ", "x" * 201])
def test_empty_or_overlong_names_are_refused(given: str) -> None:
    with pytest.raises(UserError, match="--by"):
        person_name(given, "--by")


@pytest.mark.parametrize(
    "argv",
    [
        ["unseal", "{run}", "--by", "{name}"],
        ["labels", "import", "{run}", "{run}/x.csv", "--labeller", "{name}"],
    ],
)
def test_the_commands_refuse_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    name = HOSTILE["OSC 52 clipboard"]
    args = [a.replace("{run}", str(run)).replace("{name}", name) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "control character" in err and list(run.iterdir()) == []
