"""What `validate` can find before a run: everything `run` would refuse (bot, models, files, URLs), and
the offline simulated user's languages, and the writers' mistakes only a whole suite shows."""

from __future__ import annotations

__all__ = [
    "DATA_LOADERS",
    "expected_problems",
    "file_name_problems",
    "preflight_problems",
    "suite_language_problems",
    "writer_findings",
]

from collections.abc import Callable
from pathlib import Path
from typing import Any

from simulator.config.redteam import load_pack
from simulator.config.vocabulary import load_vocabulary
from simulator.engine.preflight import expected_problems, preflight_problems
from simulator.engine.roles import suite_language_problems
from simulator.engine.writer_checks import file_name_problems, writer_findings

# Data a suite points to that may sit among scenario files (config/kinds.py tells them apart by their keys):
# each checked with its own loader by `validate` and the desk's editor.
DATA_LOADERS: dict[str, Callable[[Path], Any]] = {"redteam-pack": load_pack, "vocabulary": load_vocabulary}
