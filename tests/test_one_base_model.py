"""One home for the package's pydantic bases (simulator/models.py): no module declares another model
straight on pydantic's BaseModel, nor sets its own `extra` policy, and no two classes share a name.

Read from the source with `ast`, so a copied `class _Model(BaseModel)` fails here the day it is written."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support.source import modules, parsed, source_text, walked

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"
HOME = PACKAGE / "models.py"
# Models that may stand on BaseModel itself, each with the reason (a wire format a provider or a channel
# must mirror exactly). None today: every model of the package takes its base from simulator/models.py.
EXCEPTIONS: dict[str, str] = {}
# Models that set their own `extra` policy, each with the reason.
OWN_EXTRA = {
    "simulator/report/model.py:Report": "the registered analyses' data are extra fields of a built report; "
    "full_report_model() declares them and forbids any other (report/analyses.py)",
}


def _base_model_classes(source: str) -> list[tuple[int, str]]:
    """(line, class) of each class with pydantic's BaseModel (or RootModel) among its direct bases."""
    found = []
    for node in walked(source):
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            base = base.value if isinstance(base, ast.Subscript) else base  # RootModel[...]
            name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
            if name in ("BaseModel", "RootModel"):
                found.append((node.lineno, node.name))
    return found


def _extra_policies(source: str) -> list[tuple[int, str]]:
    """(line, class) of each `model_config` that sets `extra` itself (the base decides it)."""
    found = []
    for owner in walked(source):
        for node in getattr(owner, "body", []) if isinstance(owner, ast.ClassDef) else []:
            if (
                isinstance(node, ast.Assign)
                and any(getattr(t, "id", "") == "model_config" for t in node.targets)
                and isinstance(node.value, ast.Call)
                and any(k.arg == "extra" for k in node.value.keywords)
            ):
                found.append((node.lineno, owner.name))
    return found


def _modules() -> list[Path]:
    return [p for p in modules() if p != HOME]


def test_every_model_takes_its_base_from_simulator_models() -> None:
    problems = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: class {name}(BaseModel): base it on StrictModel, "
        "ResultModel or AnswerModel (simulator/models.py)"
        for path in _modules()
        for line, name in _base_model_classes(source_text(path))
        if f"{path.relative_to(PACKAGE.parent)}:{name}" not in EXCEPTIONS
    ]
    problems += [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name}'s model_config sets `extra`; the base says it"
        for path in _modules()
        for line, name in _extra_policies(source_text(path))
        if f"{path.relative_to(PACKAGE.parent)}:{name}" not in OWN_EXTRA
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "planted",
    [
        "class _Model(BaseModel):\n    pass",
        "class Row(pydantic.BaseModel):\n    pass",
        "class Rows(RootModel[list[int]]):\n    pass",
    ],
)
def test_the_guard_finds_a_second_base(planted: str) -> None:
    assert _base_model_classes(planted)


def test_the_guard_finds_an_own_extra_policy() -> None:
    assert _extra_policies('class Row(StrictModel):\n    model_config = ConfigDict(extra="allow")')
    assert not _extra_policies("class Row(StrictModel):\n    model_config = ConfigDict(frozen=True)")


def test_each_class_name_means_one_class() -> None:
    """A name read in a traceback, a schema or a review names one class (private helpers included)."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in [*_modules(), HOME]:
        for node in parsed(source_text(path)).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(PACKAGE.parent)))
    twice = {name: files for name, files in where.items() if len(files) > 1}
    assert not twice, "\n".join(f"{name}: {', '.join(files)}" for name, files in sorted(twice.items()))


BUILT_IN_FACTORIES = ("list", "dict", "set", "frozenset", "tuple")


def _built_in_factories(source: str) -> list[tuple[int, str]]:
    """(line, factory) of each pydantic `Field(default_factory=list)` (or dict, set...): pydantic asks a
    factory for its signature, which for a built-in type costs 0.14 ms (simulator/models.py: empty_list)."""
    found = []
    for node in walked(source):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Field":
            for keyword in node.keywords:
                factory = getattr(keyword.value, "id", "")
                if keyword.arg == "default_factory" and factory in BUILT_IN_FACTORIES:
                    found.append((node.lineno, factory))
    return found


def test_no_field_has_a_built_in_default_factory() -> None:
    """`Field(default_factory=empty_list)`, never `list`: 150 fields were 3.5% of a run's start-up."""
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: default_factory={factory}; use a function (simulator.models.empty_list, empty_dict)"
        for path in _modules()
        for line, factory in _built_in_factories(source_text(path))
    ]
    assert not found, "\n".join(found)


def test_the_guard_finds_a_built_in_factory() -> None:
    assert _built_in_factories("class Row(StrictModel):\n    tags: list[str] = Field(default_factory=list)")
    assert _built_in_factories("x: dict = pydantic.Field(description='d', default_factory=dict)")
    assert not _built_in_factories("x: list[str] = Field(default_factory=empty_list)")
    assert not _built_in_factories("x: list[str] = field(default_factory=list)")  # a dataclass: not inspected
