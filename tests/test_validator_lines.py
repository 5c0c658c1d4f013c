"""A problem a model-level validator finds (one that reads several fields: `key_facts` against `facts`, a
suite's `outcome.critical` against its levels) names the line and the field it concerns, in `validate` and
in `run` alike, never line 1 of the file or the model that holds it."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from tests.support.projects import BOT, SCENARIO, SCENARIOS, one_scenario_project
from tests.support.source import modules, parsed, source_text

PACKAGE = Path(__file__).resolve().parents[1] / "simulator"
OUTCOME = "outcome: {key: triage_level, levels: [self_care, gp, emergency]}\n"

# name -> (the scenario file, the suite file, the field named, the text of the line it is on: its number is
# found in the file that holds it). Each is found by a model-level validator.
SCENARIO_CASES = {
    "a colon in a fact": (
        "id: s1\npersona: p\ngoal: g\nfacts:\n  - It started today.\n  - Allergies: penicillin\n"
        "expected: {triage_level: gp}\n",
        "facts[2]",
        "  - Allergies: penicillin",
    ),
    "a key fact past the facts": (
        "id: s1\npersona: p\ngoal: g\nfacts: [one, two]\nexpected: {triage_level: gp}\nkey_facts: [1, 7]\n",
        "key_facts[2]",
        "key_facts: [1, 7]",
    ),
    "an unknown stop reason": (
        "id: s1\npersona: p\ngoal: g\nexpected:\n  triage_level: gp\n  stop_reason: finished\n",
        "expected.stop_reason",
        "  stop_reason: finished",
    ),
    "a handover that is not a boolean": (
        "id: s1\npersona: p\ngoal: g\nexpected:\n  triage_level: gp\n  handover: 'yes'\n",
        "expected.handover",
        "  handover: 'yes'",
    ),
    "an image without a description": (
        "id: s1\npersona: p\ngoal: g\nexpected: {triage_level: gp}\nmedia:\n  - topic: [rash]\n"
        "    kind: image\n",
        "media[1].kind",
        "    kind: image",
    ),
}
SUITE_CASES = {
    "a critical level that is no level": (
        """\
        outcome:
          key: triage_level
          levels: [self_care, gp, emergency]
          critical: urgent
        """,
        "outcome.critical",
        "  critical: urgent",
    ),
    "a judge model twice": (
        "judges:\n  models:\n    - 'anthropic:a'\n    - 'openai:b'\n    - 'anthropic:a'\n",
        "judges.models[3]",
        "    - 'anthropic:a'",
    ),
    "a first backoff above the longest": (
        "providers:\n  openai:\n    backoff_max_s: 5\n    backoff_initial_s: 10\n",
        "providers.openai.backoff_initial_s",
        "    backoff_initial_s: 10",
    ),
    "a relation on an undeclared factor": (
        OUTCOME + "relations:\n  - id: r1\n    kind: invariance\n    factor: tone\n",
        "relations[1].factor",
        "    factor: tone",
    ),
    "a harm weight on no level": (
        """\
        outcome:
          key: triage_level
          levels: [self_care, gp, emergency]
          harm_weights:
            gp: {self_care: 1}
            urgent: {gp: 2}
        """,
        "outcome.harm_weights.urgent",
        "    urgent: {gp: 2}",
    ),
    "a user model beside user models": (
        "user:\n  models: ['anthropic:a', 'openai:c']\n  model: 'openai:b'\n",
        "user.model",
        "  model: 'openai:b'",
    ),
    "a tool check named twice": (
        "tool_checks:\n  checks:\n    - {tool_called: book}\n    - {tool_called: book}\n",
        "tool_checks.checks[2]",
        "    - {tool_called: book}",
    ),
}


def _line(text: str, line: str, last: bool = False) -> int:
    """The number (from 1) of the line that reads `line` in `text` (the last such line with `last`)."""
    numbers = [n for n, written in enumerate(text.splitlines(), start=1) if written == line]
    assert numbers, (line, text)
    return numbers[-1] if last else numbers[0]


def _project(tmp_path: Path, name: str) -> tuple[Path, Path, str, int]:
    """The project of case `name`: the suite, the file at fault, the field and the line it is on."""
    if name in SCENARIO_CASES:
        scenario, field, line = SCENARIO_CASES[name]
        suite = one_scenario_project(tmp_path, SCENARIOS + BOT + OUTCOME, scenario)
        return suite, tmp_path / "scenarios" / "s1.yaml", field, _line(scenario, line)
    body, field, line = SUITE_CASES[name]
    text = SCENARIOS + BOT + textwrap.dedent(body)
    suite = one_scenario_project(tmp_path, text, SCENARIO)
    return suite, suite, field, _line(text, line, last=True)


CASES = sorted([*SCENARIO_CASES, *SUITE_CASES])


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", CASES)
def test_validate_and_run_name_the_line_and_the_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    command: str,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    suite, at_fault, field, line = _project(tmp_path, name)
    ran = ["--out", str(tmp_path / "run"), "--no-progress"] if command == "run" else []
    assert main([command, str(suite), *ran]) == 2
    err = capsys.readouterr().err
    assert f"{at_fault}:{line} [{field}]: " in err, err
    assert "Traceback" not in err and "Value error" not in err and not (tmp_path / "run").exists()


def test_a_scenario_in_a_list_names_its_own_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In a file of several scenarios the line is the field's own, found under the scenario's place in the list."""
    text = (
        "scenarios:\n"
        "  - {id: a, persona: p, goal: g}\n"
        "  - id: b\n    persona: p\n    goal: g\n    facts: [one]\n    key_facts: [3]\n"
    )
    (tmp_path / "many.yaml").write_text(text)
    assert main(["validate", str(tmp_path / "many.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"many.yaml:{_line(text, '    key_facts: [3]')} [key_facts[1]]: " in err, err


def test_a_built_scenario_names_the_field_too() -> None:
    """The Python API's door says the same field: `simulator.Scenario(...)` with a key fact past the facts."""
    import simulator
    from simulator.errors import UserError

    with pytest.raises(UserError, match=r"field 'key_facts\[1\]': key_facts \[4\] number past"):
        simulator.Scenario(id="s", persona="p", goal="g", facts=["one"], key_facts=[4])


def _raises_value_error(function: ast.FunctionDef) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(function)
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call)
        and isinstance(node.exc.func, ast.Name)
        and node.exc.func.id == "ValueError"
    ]


def _model_validators(tree: ast.Module) -> list[tuple[ast.ClassDef, ast.FunctionDef]]:
    found = []
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for function in cls.body:
            if isinstance(function, ast.FunctionDef) and any(
                "model_validator" in ast.unparse(decorator) for decorator in function.decorator_list
            ):
                found.append((cls, function))
    return found


def test_every_model_validator_of_the_config_says_where() -> None:
    """A model validator of simulator/config (and the methods of its class it calls) raises FieldProblem,
    which carries the field it concerns: a plain ValueError there is placed at the model, line 1 of a file."""
    plain = []
    for path in modules(PACKAGE / "config"):
        tree = parsed(source_text(path))
        for cls, validator in _model_validators(tree):
            called = {
                node.attr
                for node in ast.walk(validator)
                if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            }
            methods = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name in called]
            for function in [validator, *methods]:
                plain += [
                    f"{path.name}:{n} ({cls.name}.{function.name})" for n in _raises_value_error(function)
                ]
    assert plain == [], plain
