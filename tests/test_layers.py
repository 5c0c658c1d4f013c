"""The house's structure holds: every module has a room, imports only point down, feature slices import
only what they declare, and no two modules import each other, directly or round a circle, in any room.

Imports are read from the source (function-level and TYPE_CHECKING imports included), so a deferred import
cannot hide an upward dependency or a circle. docs/development.md draws the same map.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.support.source import modules, source_text, walked

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"

# Each group (a room of the house) names the groups it may import, directly or through them.
GROUPS: dict[str, tuple[str, ...]] = {
    "base": (
        "simulator.errors",
        # Text made safe to print (control and bidi characters shown): errors and reports both use it.
        "simulator.visible",
        # A count with its noun in the right number: every text that counts uses it.
        "simulator.plural",
        "simulator.diskerrors",
        # A server's listening sockets, bound first: an address it cannot have is a UserError with the fix.
        "simulator.listening",
        "simulator.safefiles",
        "simulator.jsonbounds",
        "simulator.readers",
        "simulator.names",
        "simulator.importing",
        "simulator.eventloop",
        # One TLS context per HTTP library, shared by every client (each costs ~35 ms of CPU to build).
        "simulator.tls",
        # A gzip or deflate HTTP body decoded, and taken only whole (the providers, bots and collector read so).
        "simulator.inflate",
        "simulator.models",
        # Kinds registered by name (bot kinds, report sections, documents).
        "simulator.registry",
        "simulator.bearer",
        # Source text compiled once (dataclasses' methods, string annotations): the command line installs it.
        "simulator.compiled",
        "simulator.__init__",
    ),
    "stats": ("simulator.stats",),
    "config": ("simulator.config", "simulator.voice.config", "simulator.voice.tools"),
    "record": ("simulator.record",),
    "providers": ("simulator.providers",),
    # Words and their meaning, shared by the simulated user and the judges (neither imports the other).
    "text": ("simulator.text",),
    # The fake LLM servers, and the `test:` provider that serves suites with one.
    "testing": ("simulator.testing",),
    # The voice channel (a registered bot kind) spans rooms, one idea per module: its config and tools,
    # the channel, the figures read off recorded calls, and its registered report section.
    "roles": ("simulator.users", "simulator.bots", "simulator.judging", "simulator.voice"),
    "engine": ("simulator.engine",),
    # Real conversations read from traces and files (OTLP, JSONL, CSV): the import channel writes run
    # folders through the record, and the live collector decodes with it.
    "traces": ("simulator.traces",),
    "analysis": (
        "simulator.analysis",
        "simulator.voice.timeline",
        "simulator.voice.events",
        "simulator.voice.measures",
    ),
    "report": ("simulator.report", "simulator.voice.section"),
    # The one door into the engine: plan, run, resume, compare, results.
    "api": ("simulator.api",),
    # Feature slices: each one package, reaching the engine only through the API.
    "redteam": ("simulator.redteam",),
    "safety": ("simulator.safety",),
    "loop": ("simulator.loop",),
    "collect": ("simulator.collect",),
    "authoring": ("simulator.authoring",),
    "tau2": ("simulator.tau2",),
    # The review desk, the command line and the pytest plugin: clients of the API and the slices.
    "desk": ("simulator.serve",),
    "commands": ("simulator.commands", "simulator.cli", "simulator.__main__", "simulator.plugin"),
}
MAY_IMPORT: dict[str, set[str]] = {
    "base": set(),
    "stats": {"base"},
    "config": {"base"},
    "record": {"config"},
    "providers": {"record"},
    "testing": {"providers"},
    "text": {"record"},
    "roles": {"providers", "stats", "text"},
    "engine": {"roles"},
    "traces": {"roles"},
    "analysis": {"roles", "stats"},
    "report": {"analysis"},
    "api": {"engine", "report", "traces"},
    "redteam": {"api"},
    "safety": {"api", "redteam"},
    "loop": {"api"},
    "collect": {"api"},
    "authoring": {"api", "safety"},
    "tau2": {"api"},
    "desk": {"safety", "loop", "collect", "authoring"},
    "commands": {"desk", "tau2"},
}
SLICES = ("redteam", "safety", "loop", "collect", "authoring", "tau2")

# Crossings still being removed (issue 45), as a ratchet: a crossing not listed fails, and a listed one that
# no longer exists fails too, so the list only shrinks. (source module prefix, target module prefix)
KNOWN_DEBT: set[tuple[str, str]] = set()


def _debt(module: str, target: str) -> tuple[str, str] | None:
    for source, forbidden in KNOWN_DEBT:
        if (module == source or module.startswith(source + ".")) and (
            target == forbidden or target.startswith(forbidden + ".")
        ):
            return source, forbidden
    return None


def _ratchet(crossings: list[tuple[str, int, str]], what: str) -> None:
    """Fail on a crossing not in KNOWN_DEBT; KNOWN_DEBT entries that no longer occur are reported by
    test_known_debt_still_exists."""
    new = [f"{m}:{line} -> {t}" for m, line, t in crossings if _debt(m, t) is None]
    assert not new, f"{what}:\n" + "\n".join(new)


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
    found: list[tuple[int, str]] = []
    for node in walked(source_text(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from simulator.report import section` names the module `simulator.report.section`.
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                found.append(
                    (
                        node.lineno,
                        inner
                        if (PACKAGE.parent / (inner.replace(".", "/") + ".py")).is_file()
                        else node.module,
                    )
                )
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return [(line, name) for line, name in found if name.startswith("simulator")]


@functools.cache
def _all_edges() -> tuple[tuple[str, int, str], ...]:
    """Every import in the package, read once per test process (about twenty tests read them)."""
    edges = []
    for path in modules():
        module = _module_name(path)
        edges.extend((module, line, target) for line, target in _imports(path))
    return tuple(edges)


def find_cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The circles of a directed graph (strongly connected components of two or more nodes, and self-loops),
    each sorted; Tarjan's algorithm, iterative."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    circles: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    circles.append(sorted(component))
    return circles


def _module_edges() -> list[tuple[str, str]]:
    """Module -> module imports inside the package (a package import points at its __init__)."""
    known = {_module_name(p) for p in modules()}
    out = []
    for module, _, target in _all_edges():
        if target not in known and f"{target}.__init__" in known:
            target = f"{target}.__init__"
        if target in known and target != module:
            out.append((module, target))
    return out


def test_every_module_has_a_layer() -> None:
    missing = sorted({_module_name(p) for p in modules() if _group(_module_name(p)) is None})
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


def test_no_circle_anywhere() -> None:
    """Not between rooms (the layers forbid it) and not inside one: no module imports one that imports it
    back, however round about and however deferred."""
    circles = [
        c for c in find_cycles(_module_edges()) if not any(_debt(a, b) for a in c for b in c if a != b)
    ]
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_cycle_check_finds_a_planted_circle() -> None:
    planted = [("a.x", "a.y"), ("a.y", "a.z"), ("a.z", "a.x"), ("a.z", "b.w"), ("b.w", "b.w2")]
    assert find_cycles(planted) == [["a.x", "a.y", "a.z"]]
    assert find_cycles([*_module_edges(), ("simulator.report.section", "simulator.report.model")])


def test_slices_reach_the_engine_only_through_the_api() -> None:
    """A slice never imports the engine, the roles or the record writers directly: it calls simulator.api."""
    crossing = [
        (module, line, target)
        for module, line, target in _all_edges()
        if _group(module) in SLICES and _group(target) in ("engine", "roles")
    ]
    _ratchet(crossing, "slices that bypass simulator.api")


@pytest.mark.parametrize(
    ("source", "forbidden"),
    [
        ("simulator.analysis", "simulator.engine"),
        ("simulator.report", "simulator.engine"),
        ("simulator.record", "simulator.providers"),
        ("simulator.judging", "simulator.users"),
        ("simulator.judging", "simulator.record.folder"),
        ("simulator.config", "simulator.judging"),
        ("simulator.collect", "simulator.serve"),
        ("simulator.collect", "simulator.engine"),
        ("simulator.commands", "simulator.engine"),
    ],
)
def test_named_boundaries(source: str, forbidden: str) -> None:
    crossing = [
        (module, line, target)
        for module, line, target in _all_edges()
        if (module == source or module.startswith(source + "."))
        and (target == forbidden or target.startswith(forbidden + "."))
    ]
    _ratchet(crossing, f"{source} must not import {forbidden}")


def test_known_debt_still_exists() -> None:
    """Each listed crossing still occurs; once removed, delete its line so it cannot come back."""
    edges = _all_edges()
    gone = [d for d in sorted(KNOWN_DEBT) if not any(_debt(m, t) == d for m, _, t in edges)]
    assert not gone, f"remove from KNOWN_DEBT (no longer crossed): {gone}"


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The rule is live: a report module that imports the runner is caught."""
    fake = tmp_path / "x.py"
    fake.write_text("def f():\n    from simulator.engine.runner import run_suite\n", encoding="utf-8")
    assert _imports(fake) == [(2, "simulator.engine.runner")]
    assert "engine" not in _reachable("report") and "report" not in _reachable("engine")
    assert "config" in _reachable("engine") and "api" in _reachable("commands")
    assert "safety" not in _reachable("loop") and "collect" not in _reachable("safety")
