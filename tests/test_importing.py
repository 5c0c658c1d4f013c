"""`module:attr` names in suite files (a bot factory, an environment's tool function) fail one way, through
one importer: a message naming the spec and what is wrong, never a traceback; a module that raises while
importing is said too."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simulator.config.bots import load_factory
from simulator.config.environment import load_function
from simulator.errors import UserError


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "raises_on_import.py").write_text("raise RuntimeError('no config file')\n")
    (tmp_path / "plain_module.py").write_text("VALUE = 3\n\ndef make():\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("raises_on_import", "plain_module"):
        sys.modules.pop(name, None)


CASES = [
    ("plain_module", "must look like"),
    ("no_such_module_xyz:f", "cannot import module 'no_such_module_xyz'"),
    ("raises_on_import:f", "RuntimeError: no config file"),
    ("plain_module:missing", "has no attribute 'missing'"),
    ("plain_module:VALUE", "is not callable"),
]


@pytest.mark.parametrize(("spec", "said"), CASES)
def test_a_bad_bot_factory_is_one_user_error(modules: None, spec: str, said: str) -> None:
    with pytest.raises(UserError) as caught:
        load_factory(spec)
    assert said in str(caught.value) and spec in str(caught.value) and "bot factory" in str(caught.value)


@pytest.mark.parametrize(("spec", "said"), CASES)
def test_a_bad_tool_function_is_one_value_error(modules: None, spec: str, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        load_function(spec)
    assert said in str(caught.value) and spec in str(caught.value)


def test_a_good_name_imports_what_it_names(modules: None) -> None:
    assert load_factory("plain_module:make").__name__ == load_function("plain_module:make").__name__ == "make"
