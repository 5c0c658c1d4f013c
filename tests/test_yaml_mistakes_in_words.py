"""A clinician's YAML mistake is one line naming the file, the line (or field) and the fix, in plain words: never
the YAML parser's own text (`found character that cannot start any token`), never pydantic's (`Input should be a
valid dictionary or instance of ScenarioSelection`), never a traceback. Six classes, each with several inputs:
YAML syntax, a value of the wrong type or out of range, a name that only looks right (a Cyrillic letter), a
problem found after loading named at the document's first line instead of the field's, a suite path that
reaches nothing, and `validate` of a folder with a link loop or of an empty suite file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simulator.cli import main

SUITE = """\
name: probe
scenarios:
  paths: [scen]
bot:
  type: python
  factory: examples.triage_bot:make_bot
user:
  model: offline
judges:
  paths: [judges]
runs: 1
outcome:
  key: triage_level
  levels: [self_care, gp, urgent, emergency]
"""
SCENARIO = """\
id: s1
persona: 52-year-old man, terse.
goal: Find out whether chest pain can wait.
facts:
  - Pressure in the chest for two hours.
  - I am 52 years old.
expected:
  triage_level: emergency
max_turns: 12
tags: [cardiac]
"""
CRITERION = """\
id: c1
criterion: The bot asks about the arm.
pass: it asked.
fail: it did not.
severity: major
"""
# What a parser or pydantic says in its own words: none of it reaches a person.
FOREIGN = (
    "Traceback", "cannot start any token", "mapping values are not allowed", "did not find expected",
    "could not find expected", "end of stream", "found another document", "undefined alias", "<unicode string>",
    "check indentation and quoting", "Input should", "valid dictionary", "instance of", "ScenarioSelection",
    "unable to parse", "Field required", "greater than or equal", "less than or equal", "fractional part",
)  # fmt: skip


def _project(
    tmp_path: Path, suite: str = SUITE, scenario: str | bytes = SCENARIO, criterion: str = CRITERION
) -> Path:
    (tmp_path / "scen").mkdir()
    (tmp_path / "judges").mkdir()
    target = tmp_path / "scen" / "s1.yaml"
    target.write_bytes(scenario if isinstance(scenario, bytes) else scenario.encode())
    (tmp_path / "judges" / "c1.yaml").write_text(criterion)
    (tmp_path / "suite.yaml").write_text(suite)
    return tmp_path / "suite.yaml"


def _said(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert not [words for words in FOREIGN if words in said], said
    return said


def _validate(capsys: pytest.CaptureFixture[str], suite: Path) -> str:
    return _said(capsys, "validate", str(suite))


# ---- 1. YAML syntax: what was written and how to write it, at the line to fix ------------------------------

SYNTAX = {
    "a tab indents a list item": (("  - I am", "\t- I am"), 6, "a tab indents this line; YAML indents with spaces"),
    "a tab indents a key": (("  triage_level", "\ttriage_level"), 8, "a tab indents this line"),
    "a colon inside a goal": (
        ("goal: Find out whether", "goal: Find out: whether"), 3, "a ': ' inside a value (YAML reads it as the start of a key); put the whole value in quotes, e.g. goal: \"...\"",
    ),
    "a colon and curly quotes": (
        ("goal: Find out whether chest pain can wait.", "goal: \u201cNote: chest pain\u201d"), 3, "the curly quotes on this line are text to YAML",
    ),
    "a quote never closed": (("goal: Find out", 'goal: "Find out'), 3, "a quote opened here is never closed"),
    "a bracket never closed": (("tags: [cardiac]", "tags: [cardiac"), 10, "the '[' opened here is not closed by ']'"),
    "text after a closing quote": (("goal: Find out", 'goal: "Pain" Find out'), 3, "text follows the closing quote"),
    "a dash with no space": (("  - I am 52", "  -I am 52"), 6, "a '-' needs a space after it"),
    "a key among list items": (("  - I am 52 years old.", "  - I am 52 years old.\n  age: 52"), 7, "a key among the items of a list"),
    "two documents in a file": (("max_turns: 12", "max_turns: 12\n---\nid: s2"), 10, "a second YAML document starts here (a '---' line)"),
    "a value that begins with @": (("goal: Find out", "goal: @home Find out"), 3, "a value cannot begin with '@'"),
    "a value that begins with *": (("goal: Find out whether chest pain can wait.", "goal: *urgent* pain"), 3, "a reference to an '&' anchor"),
    "a bell character": (("terse.", "terse.\x07"), 2, "a control character (U+0007) YAML does not allow"),
    "brackets nested thousands deep": (("max_turns: 12", "notes: " + "[" * 5000 + "]" * 5000), 9, "nested too deeply to read"),
    "a key out of line": (("max_turns: 12", " max_turns: 12"), 9, "indented differently from the keys above it"),
    "a key indented too far": (("max_turns: 12", "   max_turns: 12"), 9, "indented deeper than the key above it"),
    "an anchor that is text": (("goal: Find out", "goal: &urgent& Find out"), 3, "put the whole value in quotes if the '*' or '&' is text"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SYNTAX))
def test_a_yaml_syntax_mistake_is_said_in_words_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (old, new), line, words = SYNTAX[name]
    assert old in SCENARIO
    said = _validate(capsys, _project(tmp_path, scenario=SCENARIO.replace(old, new, 1)))
    assert f"s1.yaml:{line}: not valid YAML: " in said and words in said, said


@pytest.mark.parametrize("line_end", ["\r\n", "\n"])
@pytest.mark.parametrize("bom", ["\ufeff", ""])
def test_a_bom_and_windows_line_ends_are_read_as_the_same_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line_end: str, bom: str
) -> None:
    """A file saved by Notepad (BOM, CRLF) is the same file; the line of a mistake in it is the same too."""
    text = bom + SCENARIO.replace("max_turns: 12", "max_turns: lots").replace("\n", line_end)
    said = _validate(capsys, _project(tmp_path, scenario=text.encode()))
    assert "s1.yaml:9 [max_turns]: should be a whole number (got 'lots')" in said, said


# ---- 2. a value of the wrong type or out of range: what it should be, in words ----------------------------

VALUES = {
    "runs of 0": ("suite", ("runs: 1", "runs: 0"), "suite.yaml:11 [runs]: should be at least 1 (got 0)"),
    "runs of -1": ("suite", ("runs: 1", "runs: -1"), "suite.yaml:11 [runs]: should be at least 1 (got -1)"),
    "runs in words": ("suite", ("runs: 1", "runs: ten"), "suite.yaml:11 [runs]: should be a whole number (got 'ten')"),
    "a temperature in words": ("suite", ("  model: offline", "  model: offline\n  temperature: hot"), "[user.temperature]: should be a number (got 'hot')"),
    "scenarios as text": ("suite", ("scenarios:\n  paths: [scen]", "scenarios: scen"), "suite.yaml:2 [scenarios]: should be a mapping (got text); write its keys indented under 'scenarios:', one a line (include_drafts, paths, tags)"),
    "max_turns of ten": ("scenario", ("max_turns: 12", "max_turns: ten"), "s1.yaml:9 [max_turns]: should be a whole number (got 'ten')"),
    "max_turns of 12.5": ("scenario", ("max_turns: 12", "max_turns: 12.5"), "s1.yaml:9 [max_turns]: should be a whole number, not a fraction (got 12.5)"),
    "tags as one word": ("scenario", ("tags: [cardiac]", "tags: cardiac"), "s1.yaml:10 [tags]: should be a list, such as [a, b] (got 'cardiac')"),
    "a fact that is a number": ("scenario", ("  - I am 52 years old.", "  - 45"), "s1.yaml:6 [facts[2]]: should be text (got 45: YAML reads it as a number; put it in quotes for text)"),
    "a goal that is a number": ("scenario", ("goal: Find out whether chest pain can wait.", "goal: 45.5"), "s1.yaml:3 [goal]: should be text (got 45.5: YAML reads it as a number"),
    "an empty rubric": ("criterion", ("criterion: The bot asks about the arm.", "criterion:"), "c1.yaml:2 [criterion]: is empty; write its text after the colon"),
    "a rubric that is a comment": ("criterion", ("criterion: The bot asks about the arm.", "criterion: #1 rule"), "put text that begins with '#' in quotes"),
    "a severity not allowed": ("criterion", ("severity: major", "severity: high"), "c1.yaml:5 [severity]: should be one of 'critical', 'major' or 'minor' (got 'high')"),
    "a severity in capitals": ("criterion", ("severity: major", "severity: Major"), "(got 'Major'); did you mean 'major'?"),
    "points out of range": ("criterion", ("severity: major", "severity: major\npoints: 20"), "c1.yaml:6 [points]: should be at most 10 (got 20)"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(VALUES))
def test_a_wrong_value_says_what_it_should_be_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    which, (old, new), words = VALUES[name]
    texts = {"suite": SUITE, "scenario": SCENARIO, "criterion": CRITERION}
    assert old in texts[which]
    texts[which] = texts[which].replace(old, new, 1)
    said = _validate(capsys, _project(tmp_path, texts["suite"], texts["scenario"], texts["criterion"]))
    assert words in said, said


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"max_turns": "ten"}, "field 'max_turns': should be a whole number (got 'ten')"),
        ({"max_turns": 0}, "field 'max_turns': should be at least 1 (got 0)"),
        ({"tags": "cardiac"}, "field 'tags': should be a list, such as [a, b] (got 'cardiac')"),
        ({"buttons": "Tap"}, "should be one of 'tap' or 'type' (got 'Tap'); did you mean 'tap'?"),
    ],
)
def test_a_wrong_value_given_in_python_says_it_in_the_same_words(
    given: dict[str, object], words: str
) -> None:
    import simulator
    from simulator.errors import UserError

    with pytest.raises(UserError) as caught:
        simulator.Scenario(id="s", persona="p", goal="g", **given)
    assert words in str(caught.value) and "Input should" not in str(caught.value), caught.value


# ---- 3. a name that only looks right ---------------------------------------------------------------------

LOOKALIKES = {
    "a Cyrillic o in a scenario key": ("scenario", "persona:", "pers\u043ena:", "'pers\u043ena' looks like 'persona' but has '\u043e' (U+043E, Cyrillic Small Letter O) in it; retype it as 'persona'"),
    "a Cyrillic a in a suite key": ("suite", "name:", "n\u0430me:", "(U+0430, Cyrillic Small Letter A)"),
    "a fullwidth letter in a key": ("scenario", "goal:", "g\uff4fal:", "(U+FF4F, Fullwidth Latin Small Letter O) in it; retype it as 'goal'"),
    "a zero-width space in a key": ("scenario", "max_turns:", "max\u200b_turns:", "U+200B (Zero Width Space) in it; retype it as 'max_turns'"),
    "a Cyrillic a in a severity": ("criterion", "severity: major", "severity: m\u0430jor", "'m\u0430jor' looks like 'major'"),
    "a Cyrillic e in an expected level": ("scenario", "triage_level: emergency", "triage_level: \u0435mergency", "looks like 'emergency' but has '\u0435' (U+0435"),
    "a Greek omicron in a provider": ("suite", "runs: 1", "runs: 1\nproviders: {\u03bfpenai: {}}", "looks like 'openai' but has '\u03bf' (U+03BF, Greek Small Letter Omicron)"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_a_name_that_only_looks_right_names_the_letter_that_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    which, old, new, words = LOOKALIKES[name]
    texts = {"suite": SUITE, "scenario": SCENARIO, "criterion": CRITERION}
    assert old in texts[which]
    texts[which] = texts[which].replace(old, new, 1)
    said = _validate(capsys, _project(tmp_path, texts["suite"], texts["scenario"], texts["criterion"]))
    assert str(words) in said, said


# ---- 4. a problem found after loading names the field's line, not the document's first ------------------


LISTED = """\
scenarios:
  - id: s1
    persona: p
    goal: g
    expected:
      triage_level: emergancy
"""
SECOND = """\
- id: s1
  persona: p
  goal: g
- id: s2
  persona: p
  goal: g
  expected:
    triage_level: Urgent
"""


@pytest.mark.parametrize(
    ("scenario", "line"),
    [(SCENARIO.replace("triage_level: emergency", "triage_level: emergancy"), 8), (LISTED, 6), (SECOND, 8)],
    ids=["one scenario", "a list under scenarios", "the second of a list"],
)
def test_an_expected_level_not_declared_is_named_at_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scenario: str, line: int
) -> None:
    said = _validate(capsys, _project(tmp_path, scenario=scenario))
    assert f"s1.yaml:{line} [expected.triage_level]: expected triage_level '" in said, said
    assert "did you mean" in said, said


def test_an_unknown_style_is_named_at_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = _validate(capsys, _project(tmp_path, scenario=SCENARIO + "styles: [no-such-style]\n"))
    assert "s1.yaml:11 [styles]: styles ['no-such-style'] are not in" in said, said


def test_a_boolean_expected_level_is_shown_as_yaml_writes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = _validate(
        capsys, _project(tmp_path, scenario=SCENARIO.replace("triage_level: emergency", "triage_level: no"))
    )
    assert "s1.yaml:8 [expected.triage_level]: expected triage_level 'false' is not one of" in said, said


# ---- 5. a suite path that reaches nothing: the suite's line and field -------------------------------------

PATHS = {
    "a missing scenario file": (("paths: [scen]", "paths: [scen, nothere.yaml]"), "suite.yaml:3 [scenarios.paths[2]]: 'nothere.yaml' is not there"),
    "a missing judges folder": (("paths: [judges]", "paths: [judgez]"), "suite.yaml:10 [judges.paths[1]]: 'judgez' is not there"),
    "a missing absolute folder": (("paths: [scen]", "paths: [/no/such/folder]"), "suite.yaml:3 [scenarios.paths[1]]: '/no/such/folder' is not there"),
}  # fmt: skip


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", sorted(PATHS))
def test_a_suite_path_that_reaches_nothing_names_the_suite_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    (old, new), words = PATHS[name]
    suite = _project(tmp_path, SUITE.replace(old, new, 1))
    extra = ["--out", str(tmp_path / "out"), "--no-progress"] if command == "run" else []
    said = _said(capsys, command, str(suite), *extra)
    assert words in said and "fix the path" in said, said
    assert not (tmp_path / "out").exists()


# ---- 6. validate: a link loop among scenarios, an empty suite --------------------------------------------


def test_validate_of_a_folder_with_a_link_loop_names_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _project(tmp_path)
    os.symlink("loop-b.yaml", tmp_path / "scen" / "loop-a.yaml")
    os.symlink("loop-a.yaml", tmp_path / "scen" / "loop-b.yaml")
    for target in (suite, tmp_path / "scen"):
        said = _validate(capsys, target)
        assert "loop-a.yaml: a symbolic link that leads back to itself" in said, said


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "the file is empty (or holds only comments); a suite must be a mapping (bot:, user:, ...)"),
        ("# a suite to come\n", "the file is empty (or holds only comments); a suite must be a mapping"),
        ("- bot\n- user\n", "suite.yaml: a suite must be a mapping (bot:, user:, ...)"),
        ("name: x\nruns: 2\n", "suite.yaml:1 [bot]: missing required field 'bot'; add it"),
    ],
)
def test_validate_of_a_suite_file_that_says_nothing_yet_is_checked_as_a_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, words: str
) -> None:
    """`validate suite.yaml` of an empty suite said `write a scenario mapping or a list of them`."""
    suite = _project(tmp_path, suite=text)
    said = _validate(capsys, suite)
    assert words in said and "scenario" not in said, said


@pytest.mark.parametrize(
    ("which", "change", "words"),
    [
        ("suite", ("runs: 1", "repeats: 3"), "did you mean 'runs'?"),
        ("suite", ("runs: 1", "repetitions: 3"), "did you mean 'runs'?"),
        ("suite", ("runs: 1", "num-runs: 3"), "did you mean 'runs'?"),
        ("scenario", ("max_turns: 12", "turns: 12"), "did you mean 'max_turns'?"),
        ("scenario", ("max_turns: 12", "turn_limit: 12"), "did you mean 'max_turns'?"),
    ],
    ids=["repeats", "repetitions", "num-runs", "turns", "turn_limit"],
)
def test_another_tools_word_for_a_field_points_to_ours_not_to_the_nearest_spelling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str, change: tuple[str, str], words: str
) -> None:
    """`repeats` is closer in letters to `relations` than to `runs`: a guess by spelling sent a clinician to
    the wrong field."""
    texts = {"suite": SUITE, "scenario": SCENARIO}
    texts[which] = texts[which].replace(*change, 1)
    said = _validate(capsys, _project(tmp_path, texts["suite"], texts["scenario"]))
    assert words in said and "relations" not in said, said
