"""A python bot's identity (the manifest's `bot_identity`, pooled by the safety case and compared by `merge`)
names its source by the module, as the suite's `factory:` does, never by where this checkout is: one module
reached from two working folders, or from two checkouts, is one bot; another module, or other source, is
another. A run recorded before (the file's path in the part's name) still pools with one recorded now."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from simulator.config.bot_identity import BotIdentity, identify_bot
from simulator.config.bots import PythonBotConfig
from simulator.safety.case import bot_versions

SOURCE = "def make():\n    return None\n"


def _module(folder: Path, name: str, source: str = SOURCE, package: bool = False) -> Path:
    """`name` as a module file (or a package of two files) in `folder`; returns `folder`."""
    if package:
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text("from .core import make\n", encoding="utf-8")
        (folder / name / "core.py").write_text(source, encoding="utf-8")
    else:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
    return folder


def _identity(
    monkeypatch: pytest.MonkeyPatch, importable: Path, cwd: Path, factory: str = "mybot:make"
) -> BotIdentity:
    """The identity of the bot `factory` as a run started in `cwd` with `importable` on sys.path sees it."""
    with monkeypatch.context() as patch:
        patch.chdir(cwd)
        patch.setattr(sys, "path", [str(importable), *sys.path])
        importlib.invalidate_caches()
        found = identify_bot(PythonBotConfig(factory=factory), cwd)
    importlib.invalidate_caches()
    assert found is not None
    return found


@pytest.mark.parametrize("package", [False, True], ids=["module", "package"])
def test_one_module_from_two_working_folders_is_one_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: bool
) -> None:
    lib = _module(tmp_path / "lib", "mybot", package=package)
    (tmp_path / "elsewhere").mkdir()
    inside = _identity(monkeypatch, lib, lib)
    outside = _identity(monkeypatch, lib, tmp_path / "elsewhere")
    above = _identity(monkeypatch, lib, tmp_path)
    assert inside.parts == outside.parts == above.parts and inside.same_as(outside)
    assert "source sha256 of mybot" in inside.parts and str(tmp_path) not in str(inside.parts)


@pytest.mark.parametrize("package", [False, True], ids=["module", "package"])
def test_one_module_in_two_checkouts_is_one_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: bool
) -> None:
    a = _module(tmp_path / "a" / "lib", "mybot", package=package)
    b = _module(tmp_path / "b" / "lib", "mybot", package=package)
    one, two = _identity(monkeypatch, a, tmp_path / "a"), _identity(monkeypatch, b, tmp_path)
    assert one.parts == two.parts and one.same_as(two)


def test_another_module_or_other_source_is_another_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = _module(tmp_path / "lib", "mybot")
    _module(lib, "otherbot")  # the same source under another module's name
    edited = _module(tmp_path / "edited", "mybot", SOURCE + "# v2\n")
    first = _identity(monkeypatch, lib, lib)
    other_module = _identity(monkeypatch, lib, lib, "otherbot:make")
    other_source = _identity(monkeypatch, edited, lib)
    assert not first.same_as(other_module) and "source sha256 of otherbot" in other_module.parts
    assert not first.same_as(other_source)
    assert other_source.parts["source sha256 of mybot"] != first.parts["source sha256 of mybot"]


@pytest.mark.parametrize("old_name", ["examples/triage_bot.py", "/home/a/checkout/examples/triage_bot.py"])
def test_an_identity_recorded_by_path_is_the_same_bot_as_one_recorded_by_module(old_name: str) -> None:
    """Runs made before the module named the source (its path relative to the working folder, or absolute)
    pool with runs made now when the source is the same; other source does not."""
    now = BotIdentity(
        version="sha256:1",
        parts={"source sha256 of examples.triage_bot": "sha256:1", "factory": "examples.triage_bot:make_bot"},
    )
    before = BotIdentity(
        version="sha256:1",
        parts={f"source sha256 of {old_name}": "sha256:1", "factory": "examples.triage_bot:make_bot"},
    )
    edited = before.model_copy(update={"parts": {**before.parts, f"source sha256 of {old_name}": "sha256:2"}})
    assert now.same_as(before) and before.same_as(now) and not now.same_as(edited)
    runs = [
        SimpleNamespace(manifest=SimpleNamespace(bot_identity=identity, run_id=run_id))
        for identity, run_id in ((before, "r1"), (now, "r2"), (edited, "r3"))
    ]
    assert list(bot_versions(runs).values()) == [["r1", "r2"], ["r3"]]  # type: ignore[arg-type]
