"""What `validate` can find before a run: everything `run` would refuse (bot, models, files, URLs), and
the offline simulated user's languages."""

from __future__ import annotations

__all__ = ["preflight_problems", "suite_language_problems"]

from simulator.engine.preflight import preflight_problems
from simulator.engine.roles import suite_language_problems
