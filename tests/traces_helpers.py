"""Shared helpers for the real-conversation tests: the OpenTelemetry SDK (required in CI), CLI runs."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "traces"


def require(module: str) -> ModuleType:
    """Import a module; skip when it is missing, unless SIMULATOR_REQUIRE_ALL=1 (CI), which fails."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("SIMULATOR_REQUIRE_ALL") == "1":
            raise
        pytest.skip(f"{module} is not installed (pip install 'simulator[otel]')")


def cli(*args: object) -> int:
    return main([str(a) for a in args])


def every_file_text(folder: Path) -> str:
    """Every byte under `folder`, as text: what a leak check greps."""
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in sorted(folder.rglob("*")) if p.is_file()
    )
