"""A problem is printed on one line whatever the file put in its message: a value quoted from a YAML file
can hold a newline, a carriage return or terminal escape codes (the class hypothesis found with
'1e999\\n!!int'). Each is shown as a visible escape, never obeyed and never breaking the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.config.yamlfile import YAMLProblem, parse_yaml
from simulator.errors import Problem, UserError


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("a\r\nb", "a\\x0d\\nb"),
        ("\x1b[2J cleared", "\\x1b[2J cleared"),
        ("nul\x00byte", "nul\\x00byte"),
        ("c1 \x9b csi", "c1 \\x9b csi"),
        ("tab\tkept", "tab\tkept"),
        ("vt\x0bff\x0c del\x7f", "vt\\x0bff\\x0c del\\x7f"),
    ],
)
def test_a_problem_shows_control_characters_as_escapes(raw: str, shown: str) -> None:
    text = str(Problem("f.yaml", f"cannot read '{raw}'", line=3, field=f"x{raw}"))
    assert "\n" not in text and "\r" not in text and "\x1b" not in text
    assert text.endswith(f"cannot read '{shown}'") and text.startswith("f.yaml:3 [x")


# Characters that reorder or hide text: a right-to-left override makes 'exe.txt' read as 'txt.exe' on the
# terminal line, an isolate or an embedding moves the rest of the line, a mark flips neutral characters.
BIDI = [
    ("report\u202etxt.exe", "report\\u202etxt.exe"),
    ("\u202dforced ltr\u202c", "\\u202dforced ltr\\u202c"),
    ("\u202aembed\u202b rtl", "\\u202aembed\\u202b rtl"),
    ("\u2066iso\u2069 \u2067r\u2068f", "\\u2066iso\\u2069 \\u2067r\\u2068f"),
    ("mark\u200e\u200f", "mark\\u200e\\u200f"),
    ("anchor\ufff9ruby\ufffa\ufffb", "anchor\\ufff9ruby\\ufffa\\ufffb"),
    ("both\u202e\nlines", "both\\u202e\\nlines"),
]


@pytest.mark.parametrize(("raw", "shown"), BIDI)
def test_a_problem_shows_bidi_and_format_characters_as_escapes(raw: str, shown: str) -> None:
    text = str(Problem("f.yaml", f"bad value '{raw}'", line=7, field=f"k{raw}"))
    assert not any(0x200E <= ord(c) <= 0x206F or 0xFFF9 <= ord(c) <= 0xFFFB or c == "\n" for c in text)
    assert text == f"f.yaml:7 [k{shown}]: bad value '{shown}'"


@pytest.mark.parametrize(("raw", "shown"), BIDI[:3])
def test_a_user_error_lists_each_problem_escaped(raw: str, shown: str) -> None:
    rendered = UserError("invalid suite", [Problem("a.yaml", raw), Problem("b.yaml", "ok", line=2)]).render()
    assert rendered.splitlines() == ["invalid suite (2 problems):", f"  a.yaml: {shown}", "  b.yaml:2: ok"]


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


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("!!int \u202e12", "'\\u202e12'"),
        ('!!float "1\u2066e9"', "'1\\u2066e9'"),
        ("!!bool \u200fyes", "'\\u200fyes'"),
    ],
)
def test_a_yaml_value_with_a_bidi_character_is_quoted_as_escapes(value: str, shown: str) -> None:
    with pytest.raises(YAMLProblem) as caught:
        parse_yaml("a: " + value, Path("v.yaml"))
    assert f"cannot read {shown} as a" in str(caught.value)
    assert not any(c in str(caught.value) for c in "\u202e\u2066\u200f")
