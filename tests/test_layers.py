"""The package's layers only point down: an import from a lower layer into a higher one fails here.

Imports are read from the source (function-level imports included), so a deferred import cannot hide an
upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"

# Each group names the groups it may import (directly or through them). The engine (writing runs) and
# analysis/report (reading them) are siblings above the record: neither imports the other.
GROUPS: dict[str, tuple[str, ...]] = {
    "base": (
        "simulator.errors",
        "simulator.diskerrors",
        "simulator.safefiles",
        "simulator.importing",
        "simulator.eventloop",
        "simulator.record.hashing",
        "simulator.record.transcript",
        # The parts of a turn (record schema 3) are part of the provider-neutral conversation types.
        "simulator.record.parts",
        "simulator.__init__",
        "simulator.models",
    ),
    "stats": ("simulator.stats",),
    "providers": ("simulator.providers",),
    # The fake LLM servers, and the `test:` provider that serves suites with one (the provider registry
    # names it, like every provider, by module path).
    "testing": ("simulator.testing",),
    "config": ("simulator.config",),
    "record": ("simulator.record",),
    "roles": ("simulator.users", "simulator.bots", "simulator.judging"),
    # Importers write run folders, like the engine.
    "engine": ("simulator.engine", "simulator.traces"),
    "analysis": ("simulator.analysis",),
    "report": ("simulator.report",),
    "top": (
        # The Python API plans and runs suites and reads their reports: above engine and report, beside the
        # command line, the plugin and the desk that call it.
        "simulator.api",
        "simulator.commands",
        "simulator.cli",
        "simulator.__main__",
        "simulator.plugin",
        "simulator.serve",
        # The live collector: receives traces (engine side), judges and alerts (analysis side).
        "simulator.collect",
    ),
}
MAY_IMPORT: dict[str, set[str]] = {
    "base": set(),
    "stats": {"base"},
    "config": {"base"},
    "record": {"config"},
    "providers": {"record"},
    "testing": {"providers"},
    "roles": {"providers", "stats"},
    "engine": {"roles"},
    "analysis": {"roles"},
    "report": {"analysis"},
    "top": {"engine", "report"},
}


def _reachable(group: str) -> set[str]:
    seen = {group}
    stack = [group]
    while stack:
        for below in MAY_IMPORT[stack.pop()]:
            if below not in seen:
                seen.add(below)
                stack.append(below)
    return seen


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts)


def _group(module: str) -> str | None:
    best: tuple[int, str] | None = None  # (prefix length, group): the most specific prefix wins
    for name, prefixes in GROUPS.items():
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), name)
    return None if best is None else best[1]


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return [(line, name) for line, name in found if name.startswith("simulator")]


def _all_edges() -> list[tuple[str, int, str]]:
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        edges.extend((module, line, target) for line, target in _imports(path))
    return edges


def test_every_module_has_a_layer() -> None:
    missing = sorted({_module_name(p) for p in PACKAGE.rglob("*.py") if _group(_module_name(p)) is None})
    assert not missing, f"modules outside every group (add them to GROUPS): {missing}"


def test_imports_only_point_down() -> None:
    upward = []
    for module, line, target in _all_edges():
        if target == "simulator":
            continue  # `from simulator import __version__`
        source, target_group = _group(module), _group(target)
        assert source is not None and target_group is not None, f"{module}:{line} imports {target}"
        if target_group not in _reachable(source):
            upward.append(f"{module}:{line} -> {target} ({source} may not import {target_group})")
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


@pytest.mark.parametrize(
    ("source", "forbidden"),
    [
        ("simulator.analysis", "simulator.engine"),
        ("simulator.report", "simulator.engine"),
        ("simulator.record", "simulator.providers"),
        ("simulator.judging", "simulator.record.folder"),
        ("simulator.config", "simulator.judging"),
    ],
)
def test_named_boundaries(source: str, forbidden: str) -> None:
    crossing = [
        f"{module}:{line} -> {target}"
        for module, line, target in _all_edges()
        if (module == source or module.startswith(source + "."))
        and (target == forbidden or target.startswith(forbidden + "."))
    ]
    assert not crossing, f"{source} must not import {forbidden}:\n" + "\n".join(crossing)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The rule is live: a report module that imports the runner is caught."""
    fake = tmp_path / "x.py"
    fake.write_text("def f():\n    from simulator.engine.runner import run_suite\n", encoding="utf-8")
    assert _imports(fake) == [(2, "simulator.engine.runner")]
    assert "engine" not in _reachable("report") and "report" not in _reachable("engine")
    assert "config" in _reachable("engine") and "engine" in _reachable("top")
