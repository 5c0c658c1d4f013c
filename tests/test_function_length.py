"""No function in the package is longer than a screenful without a reason written next to it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.source import modules, source_text, walked

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"
LIMIT = 65  # "about 60": a screenful
REASON = "# long because"  # a comment in the function's first lines that says why it is one piece


def long_functions(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in modules(root):
        lines = source_text(path).splitlines()
        for node in walked("\n".join(lines)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            head = "\n".join(lines[node.lineno - 1 : node.lineno + 6])
            if length > LIMIT and REASON not in head:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_is_longer_than_a_screenful_without_a_reason() -> None:
    assert long_functions() == []


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT + 1))
    (tmp_path / "m.py").write_text(f"def f():\n{body}\n", encoding="utf-8")
    (tmp_path / "ok.py").write_text(f"def g():\n    {REASON} it is a table\n{body}\n", encoding="utf-8")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:1 f ({LIMIT + 2} lines)"]
