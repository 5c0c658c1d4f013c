"""The writers' mistakes of issue 41, each a class tried with several inputs, in `validate` and the desk's
editor alike: non-scenario data among scenarios, an id that differs from its file name, a criterion whose
`applies_to` no scenario has, an outcome level spelt differently from the suite's, a colon in a fact."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.loading import load_scenarios
from simulator.serve.drafts import validate_draft

ROOT = Path(__file__).resolve().parents[1]
SUITE = """\
name: mini
scenarios: {paths: [scenarios]}
bot: {type: python, factory: 'json:JSONEncoder'}
judges: {paths: [judges]}
outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency]}
"""
CRITERION = """\
id: {id}
criterion: The bot asks about chest pain.
pass: it asks.
fail: it does not.
applies_to: [{tag}]
"""


def _scenario(
    sid: str, level: str = "gp", tags: str = "cardiac", facts: str = "  - Pain in the chest.\n"
) -> str:
    return (
        f"id: {sid}\npersona: a man of 52\ngoal: advice\nfacts:\n{facts}"
        f"expected: {{triage_level: {level}}}\ntags: [{tags}]\n"
    )


def _suite(tmp_path: Path, scenarios: dict[str, str], criteria: dict[str, str] | None = None) -> Path:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "judges").mkdir()
    for name, text in scenarios.items():
        (tmp_path / "scenarios" / name).write_text(text)
    for name, text in (criteria or {"asks.yaml": CRITERION.format(id="asks", tag="cardiac")}).items():
        (tmp_path / "judges" / name).write_text(text)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    return suite


def _validate(capsys: pytest.CaptureFixture[str], *paths: Path | str) -> tuple[int, str]:
    code = main(["validate", *map(str, paths)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_shipped_scenarios_folder_validates(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code, out = _validate(capsys, "scenarios/")
    assert code == 0, out
    assert "redteam-pack scenarios/redteam/strategies.yaml: ok" in out


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("strategies.yaml", (ROOT / "scenarios/redteam/strategies.yaml").read_text(), "redteam-pack"),
        ("vocab.yaml", "synonyms: {chest: [breast]}\noutcome_patterns: ['go to a&e']\n", "vocabulary"),
        ("words.yaml", "languages: {}\n", "vocabulary"),
    ],
)
def test_data_among_scenarios_is_checked_as_itself_never_as_a_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, kind: str
) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "s1.yaml").write_text(_scenario("s1"))
    (folder / name).write_text(text)
    assert [s.id for s in load_scenarios([folder])] == ["s1"]
    code, out = _validate(capsys, folder)
    assert code == 0, out
    assert f"{kind} {folder / name}: ok" in out and "1 scenario: ok" in out


def test_a_broken_strategy_pack_is_reported_as_a_pack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "strategies.yaml").write_text("strategies:\n  - id: x\n    title: t\n    ladder: nope\n")
    code, out = _validate(capsys, tmp_path)
    assert code != 0
    assert "invalid red-team pack" in out or "strategies.yaml:" in out
    assert "missing required field 'persona'" not in out


@pytest.mark.parametrize(
    ("file", "sid", "fix"),
    [
        (
            "chest-pain-01.yaml",
            "chest-pain-02",
            "rename the file to chest-pain-02.yaml or set `id: chest-pain-01`",
        ),
        ("Stroke.yaml", "stroke", "rename the file to stroke.yaml or set `id: Stroke`"),
        ("cold.yml", "common-cold", "rename the file to common-cold.yml or set `id: cold`"),
    ],
)
def test_an_id_that_differs_from_its_file_name_is_named_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, sid: str, fix: str
) -> None:
    (tmp_path / file).write_text(_scenario(sid))
    code, out = _validate(capsys, tmp_path)
    assert code != 0
    assert f"{tmp_path / file}:1 [id]: id '{sid}' differs from the file name '{file}'" in out and fix in out
    # the desk's editor says the same before it saves
    _, problems = validate_draft(tmp_path, tmp_path / file, _scenario(sid), file)
    assert any(p.field == "id" and fix in p.message for p in problems)


LIST_FILE = "scenarios:\n" + "".join(
    "  - " + _scenario(sid).replace("\n", "\n    ").rstrip() + "\n" for sid in ("a", "b")
)


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("first scenario.yaml", _scenario("first-scenario")),  # an id has no spaces: the desk's own naming
        ("many.yaml", LIST_FILE),  # a file holding a list names no one id
        ("s1.yaml", _scenario("s1")),
    ],
)
def test_names_that_match_or_lists_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, text: str
) -> None:
    (tmp_path / file).write_text(text)
    code, out = _validate(capsys, tmp_path)
    assert code == 0, out


@pytest.mark.parametrize(
    ("typo", "meant"), [("cardaic", "cardiac"), ("cardiak", "cardiac"), ("resporatory", "respiratory")]
)
def test_a_criterion_tag_that_is_a_near_miss_fails_with_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], typo: str, meant: str
) -> None:
    suite = _suite(
        tmp_path,
        {"s1.yaml": _scenario("s1", tags="cardiac"), "s2.yaml": _scenario("s2", tags="respiratory")},
        {"asks.yaml": CRITERION.format(id="asks", tag=typo)},
    )
    code, out = _validate(capsys, suite)
    assert code != 0
    assert f"asks.yaml:5 [applies_to]: applies_to ['{typo}']" in out  # the field's line
    assert "never applies" in out and f"did you mean '{meant}'?" in out


def test_a_criterion_tag_no_scenario_has_is_never_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(
        tmp_path,
        {"s1.yaml": _scenario("s1", tags="cardiac")},
        {
            "a.yaml": CRITERION.format(id="a", tag="cardiac"),
            "b.yaml": CRITERION.format(id="b", tag="paediatric"),
        },
    )
    code, out = _validate(capsys, suite)
    assert code == 0, out
    assert "note: criterion 'b'" in out and "['paediatric']) never applies" in out
    assert "criterion 'a'" not in out


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("Emergency", "emergency"),
        ("EMERGENCY", "emergency"),
        ("emergncy", "emergency"),
        ("Self_Care", "self_care"),
    ],
)
def test_an_outcome_level_is_refused_by_validate_and_the_desk_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], written: str, meant: str
) -> None:
    suite = _suite(tmp_path, {"s1.yaml": _scenario("s1", level=written)})
    code, out = _validate(capsys, suite)
    assert code != 0
    expected = f"expected triage_level '{written}' is not one of outcome.levels"
    assert expected in out and f"did you mean '{meant}'?" in out
    target = tmp_path / "scenarios" / "s1.yaml"
    _, problems = validate_draft(tmp_path / "scenarios", target, target.read_text(), "scenarios/s1.yaml")
    assert [p.field for p in problems] == ["expected.triage_level"]
    assert expected in problems[0].message and f"did you mean '{meant}'?" in problems[0].message
    # the right spelling passes both
    target.write_text(_scenario("s1", level=meant))
    assert validate_draft(tmp_path / "scenarios", target, target.read_text(), "scenarios/s1.yaml")[1] == []
    assert _validate(capsys, suite)[0] == 0


@pytest.mark.parametrize(
    ("facts", "field", "text"),
    [
        ("  - Pain: sharp\n", "facts[1]", "Pain: sharp"),
        ("  - It started an hour ago.\n  - Allergies: penicillin\n", "facts[2]", "Allergies: penicillin"),
        ("  - Smoker.\n  - Blood pressure:\n", "facts[2]", "Blood pressure:"),
    ],
)
def test_a_colon_in_a_fact_says_what_happened_and_to_quote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], facts: str, field: str, text: str
) -> None:
    (tmp_path / "s1.yaml").write_text(_scenario("s1", facts=facts))
    code, out = _validate(capsys, tmp_path)
    assert code != 0
    assert (
        f"fact {field[6:-1]}: '{text}' was read as a key and a value" in out
    )  # counted from 1, as key_facts
    assert f'put it in quotes: - "{text}"' in out
    assert "facts.0" not in out and "got dict" not in out
    quoted = facts.replace(f"- {text}", f'- "{text}"')
    (tmp_path / "s1.yaml").write_text(_scenario("s1", facts=quoted))
    assert _validate(capsys, tmp_path)[0] == 0


def test_a_colon_in_a_tag_is_explained_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s1.yaml").write_text(_scenario("s1").replace("tags: [cardiac]", "tags:\n  - level: high\n"))
    code, out = _validate(capsys, tmp_path)
    assert code != 0 and "[tags[1]]: 'level: high' was read as a key and a value" in out


@pytest.mark.parametrize(
    ("typo", "meant"), [("cardaic", "cardiac"), ("nuero", "neuro"), ("Cardiac", "cardiac")]
)
def test_an_unknown_tag_to_run_gets_a_did_you_mean(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, typo: str, meant: str
) -> None:
    monkeypatch.chdir(ROOT)
    code, out = _validate(capsys, "scenarios/triage/suite.yaml")  # the suite is fine
    assert code == 0, out
    code = main(["run", "scenarios/triage/suite.yaml", "--tags", typo, "--out", str(tmp_path / "r")])
    captured = capsys.readouterr()
    assert code == 2 and f"did you mean '{meant}'?" in captured.err and "Traceback" not in captured.err
    assert not (tmp_path / "r" / "conversations.jsonl").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ((ROOT / "scenarios/redteam/strategies.yaml").read_text(), None),
        ("strategies:\n  - id: x\n", "[strategies[1].title]"),
        ("synonyms: {chest: [breast]}\noutcome_patterns: ['(']\n", "[outcome_patterns]"),
    ],
)
def test_the_desk_editor_checks_data_as_itself(tmp_path: Path, text: str, problem: str | None) -> None:
    target = tmp_path / "data.yaml"
    target.write_text(text)
    kind, problems = validate_draft(tmp_path, target, text, "scenarios/data.yaml")
    assert kind in ("redteam-pack", "vocabulary")
    if problem is None:
        assert problems == []
    else:
        assert problems and all(p.file == "scenarios/data.yaml" for p in problems)
        assert any(problem in str(p) for p in problems), problems
        assert not any("persona" in str(p) for p in problems)


def test_validate_suite_ignores_sibling_suites_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's copy step: a suite whose folder holds other suites (with files the user never copied)."""
    suite = _suite(tmp_path, {"s1.yaml": _scenario("s1")})
    suite.write_text(SUITE.replace("scenarios: {paths: [scenarios]}", "scenarios: {paths: ['.']}"))
    (tmp_path / "variants").mkdir()
    other = tmp_path / "variants" / "suite.yaml"
    other.write_text(
        SUITE.replace("[scenarios]", "['../scenarios']").replace("[judges]", "['../judges']")
        + "user: {model: offline, vocabulary: ../missing_vocab.yaml}\n"
    )
    code, out = _validate(capsys, suite)
    assert code == 0, out
    assert "missing_vocab" not in out
    code, out = _validate(capsys, other)  # named itself, it is checked
    assert code != 0 and "missing_vocab.yaml: no such vocabulary file" in out


# A scalar YAML reads as something other than text, where text goes: the problem shows it as it was written
# and says to quote it (it showed Python's `datetime.date(2026, 1, 1)`, `True`, `None`).
UNQUOTED = {
    "a date": ("goal: 2026-01-01", "goal", "2026-01-01: YAML reads an unquoted date as a date"),
    "a timestamp in a list": ("facts: [a, 2026-01-01 10:00:00]", "facts", "2026-01-01T10:00:00: YAML reads"),
    "yes": ("persona: yes", "persona", "true: YAML reads yes, no, on, off, true and false as a boolean"),
    "off": ("persona: off", "persona", "false: YAML reads yes, no, on, off"),
    "empty": ("persona:", "persona", "is empty; write its text after the colon"),
    "a list": ("goal: [a, b]", "goal", "(got a list)"),
    "a mapping": ("goal: {a: b, c: d}", "goal", "(got a mapping)"),
}


@pytest.mark.parametrize("name", sorted(UNQUOTED))
def test_a_value_yaml_did_not_read_as_text_is_shown_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    line, field, said = UNQUOTED[name]
    key = line.split(":")[0]
    base = {"id": "id: s1", "persona": "persona: p", "goal": "goal: g", "facts": "facts: [a]"}
    base[key] = line
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "s1.yaml").write_text("\n".join(base.values()) + "\n")
    (tmp_path / "suite.yaml").write_text(
        "scenarios: {paths: [scenarios]}\nbot: {type: python, factory: 'json:JSONEncoder'}\n"
    )
    assert main(["validate", str(tmp_path / "suite.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"[{field}" in err and said in err, err
    assert not any(
        python in err for python in ("datetime.", "(got True", "(got False", "(got None", "got dict")
    ), err
