"""Verdicts are filtered in one place: record/selection.py says which verdicts count (judge set, latest per
item, samples, fidelity checks), and no other module of the package spells any part of that rule again.

Read from the source with `ast`, so a new re-spelling fails here before it can drift from the rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.source import modules, source_text, walked

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"
HOME = PACKAGE / "record" / "selection.py"
# Where the fields are declared (Verdict.is_sample itself), not read.
DECLARED = {PACKAGE / "record" / "models.py"}
ITEM_FIELDS = ("conversation_id", "criterion_id")


def _attr(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == name


def _constant(node: ast.AST, value: str) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == value
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_constant(element, value) for element in node.elts)
    return False


def _constant_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _item_key(node: ast.AST) -> ast.expr | None:
    """The object `v` of a `(v.conversation_id, v.criterion_id)` tuple, else None."""
    if not (isinstance(node, ast.Tuple) and len(node.elts) == 2):
        return None
    first, second = node.elts
    if not (_attr(first, ITEM_FIELDS[0]) and _attr(second, ITEM_FIELDS[1])):
        return None
    assert isinstance(first, ast.Attribute)
    return first.value


def _same_name(a: ast.AST | None, b: ast.AST) -> bool:
    return isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.id == b.id


def _subscript_fields(target: ast.AST) -> set[str]:
    """The attributes named in a chain of subscripts (`d[v.conversation_id][v.criterion_id]`), and their
    objects' names."""
    found: set[str] = set()
    while isinstance(target, ast.Subscript):
        for node in ast.walk(target.slice):
            if isinstance(node, ast.Attribute) and node.attr in ITEM_FIELDS:
                found.add(node.attr)
        target = target.value
        if isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):  # d.setdefault(x, {})[y]
            for arg in target.args[:1]:
                if _attr(arg, ITEM_FIELDS[0]):
                    found.add(ITEM_FIELDS[0])
            target = target.func.value
    return found


def violations(source: str) -> list[tuple[int, str]]:
    """(line, what) of every piece of the verdict-selection rule spelt in `source`."""
    found: list[tuple[int, str]] = []
    for node in walked(source):
        if _attr(node, "is_sample"):
            found.append(
                (
                    node.lineno,
                    "reads .is_sample (a sample is not a verdict: use counted or select_verdicts(...).samples)",
                )
            )
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            samples = [s for s in sides if _attr(s, "sample")]
            # `args.sample` is a command's option (`--sample N`), not a verdict's field.
            if any(getattr(getattr(s, "value", None), "id", "") != "args" for s in samples) and any(
                _constant_none(s) for s in sides
            ):
                found.append(
                    (node.lineno, "tests .sample against None (use counted or select_verdicts(...).samples)")
                )
            if any(_attr(s, "kind") for s in sides) and any(_constant(s, "fidelity") for s in sides):
                found.append((node.lineno, 'compares .kind with "fidelity" (use is_fidelity_check)'))
            # A manifest's judge set (`.hash`) against the stage's is not a verdict being filtered.
            if any(_attr(s, "judge_set_hash") for s in sides) and not any(_attr(s, "hash") for s in sides):
                found.append((node.lineno, "compares .judge_set_hash (use select_verdicts / of_judge_set)"))
        elif isinstance(node, ast.Call) and _attr(node.func, "startswith"):
            if any(isinstance(a, ast.Constant) and str(a.value).startswith("fidelity") for a in node.args):
                found.append((node.lineno, "tells a fidelity check by its id (use is_fidelity_check)"))
        elif isinstance(node, ast.DictComp):
            owner = _item_key(node.key)
            if owner is not None and _same_name(owner, node.value):
                found.append((node.lineno, "maps (conversation, criterion) to its verdict (use by_item)"))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            for target in node.targets:
                if _subscript_fields(target) == set(ITEM_FIELDS):
                    found.append(
                        (node.lineno, "keeps the last verdict per item (use select_verdicts/by_item)")
                    )
    return found


def _modules() -> list[Path]:
    return [p for p in modules() if p != HOME and p not in DECLARED]


def test_no_module_but_the_selector_filters_verdicts() -> None:
    problems = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for path in _modules()
        for line, what in violations(source_text(path))
    ]
    assert not problems, "verdict selection outside simulator/record/selection.py:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "planted",
    [
        "counted = [v for v in verdicts if not v.is_sample]",
        "counted = [v for v in verdicts if v.sample is None]",
        'bot = [v for v in verdicts if v.kind != "fidelity"]',
        'simulator = verdict.kind in ("fidelity", "llm")',
        "mine = [v for v in verdicts if v.judge_set_hash == chosen]",
        'checks = [v for v in verdicts if v.criterion_id.startswith("fidelity.")]',
        "latest = {(v.conversation_id, v.criterion_id): v for v in verdicts}",
        "for v in verdicts:\n    latest[(v.conversation_id, v.criterion_id)] = v",
        "for v in verdicts:\n    latest.setdefault(v.conversation_id, {})[v.criterion_id] = v",
    ],
)
def test_the_guard_finds_each_re_spelling(planted: str) -> None:
    assert violations(planted), planted


@pytest.mark.parametrize(
    "innocent",
    [
        "results = {(v.conversation_id, v.criterion_id): v.result for v in run.verdicts}",
        'metrics = [v for v in verdicts if v.kind == "metric"]',
        "Verdict(judge_set_hash=stage.judge_set_hash, kind='fidelity')",
        "by_conversation.setdefault(v.conversation_id, []).append(v)",
    ],
)
def test_the_guard_leaves_other_code_alone(innocent: str) -> None:
    assert not violations(innocent), innocent


def test_the_selector_itself_spells_the_rule() -> None:
    """The guard would see the rule in its home: the home is the one place it is written."""
    assert violations(HOME.read_text(encoding="utf-8"))
