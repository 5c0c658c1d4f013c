"""A problem is printed on one line whatever the file put in its message: a value quoted from a YAML file
can hold a newline, a carriage return or terminal escape codes (the class hypothesis found with
'1e999\\n!!int'). Each is shown as a visible escape, never obeyed and never breaking the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.config.yamlfile import YAMLProblem, parse_yaml
from simulator.errors import Problem


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("a\r\nb", "a\\x0d\\nb"),
        ("\x1b[2J cleared", "\\x1b[2J cleared"),
        ("nul\x00byte", "nul\\x00byte"),
        ("c1 \x9b csi", "c1 \\x9b csi"),
        ("tab\tkept", "tab\tkept"),
    ],
)
def test_a_problem_shows_control_characters_as_escapes(raw: str, shown: str) -> None:
    text = str(Problem("f.yaml", f"cannot read '{raw}'", line=3, field=f"x{raw}"))
    assert "\n" not in text and "\r" not in text and "\x1b" not in text
    assert text.endswith(f"cannot read '{shown}'") and text.startswith("f.yaml:3 [x")


@pytest.mark.parametrize(
    "value",
    [
        "!!int 1e999\n  \n  !!int",
        '!!float "1e999\\n!!int"',
        "!!bool |\n  yes\n  no\n",
        "!!timestamp |\n  2024\n  13\n",
    ],
)
def test_a_multi_line_value_the_constructor_cannot_build_is_one_line(value: str) -> None:
    with pytest.raises(YAMLProblem) as caught:
        parse_yaml("a: " + value, Path("v.yaml"))
    assert str(caught.value).startswith("v.yaml:") and "\n" not in str(caught.value)
