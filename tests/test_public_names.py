"""`__all__` lists what is public, nothing more: every name a module exports is used by another file of the
project (code, tests, benches, examples or docs). A name only its own module uses is not public."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.source import parsed, source_text

ROOT = Path(__file__).resolve().parent.parent


def _files() -> list[Path]:
    found = [*ROOT.joinpath("simulator").rglob("*.py"), *ROOT.joinpath("tests").rglob("*.py")]
    found += [*ROOT.joinpath("bench").rglob("*.py"), *ROOT.joinpath("examples").rglob("*.py")]
    return [*found, *ROOT.joinpath("docs").glob("*.md"), ROOT / "README.md"]


def _exported(tree: ast.Module) -> list[str]:
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
            node.value, ast.List
        ):
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return []


def test_every_exported_name_is_used_elsewhere() -> None:
    users: dict[str, set[Path]] = {}
    texts = {path: source_text(path) for path in _files()}
    for path, text in texts.items():
        for word in set(re.findall(r"\b\w+\b", text)):
            users.setdefault(word, set()).add(path)
    private = []
    for path, text in texts.items():
        if path.suffix != ".py" or ROOT / "simulator" not in path.parents or path.name == "__init__.py":
            continue
        for name in _exported(parsed(text)):
            if not users.get(name, set()) - {path}:
                private.append(f"{path.relative_to(ROOT)}: {name}")
    assert not private, "names in __all__ that no other file uses (drop them from __all__):\n" + "\n".join(
        private
    )
