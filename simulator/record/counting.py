"""What counts as a verdict, for every command that prints how many it wrote (run, resume, matrix, merge,
workers, judge): one rule, so the same conversations never give two numbers.

A verdict is one decision on one bot criterion for one conversation (code checks and not-judged criteria
included, since they are recorded and reported). The samples behind a jury or `--samples k` verdict are
not verdicts (the combined verdict is). The simulated user's fidelity checks judge the simulator, not the
bot: they are counted apart, as "fidelity checks".
"""

from __future__ import annotations

__all__ = ["VERDICTS_RULE", "fidelity_text", "verdict_counts"]

from collections.abc import Iterable

from simulator.record.models import Verdict
from simulator.record.selection import counted, is_fidelity_check

VERDICTS_RULE = (
    "verdicts: one per bot criterion and conversation (samples behind a combined verdict excluded); the "
    "simulated user's fidelity checks are counted apart"
)


def verdict_counts(verdicts: Iterable[Verdict]) -> tuple[int, int]:
    """(verdicts, fidelity checks) among `verdicts`, by the rule above (record/selection.py)."""
    kept = counted(verdicts)
    fidelity = sum(1 for v in kept if is_fidelity_check(v))
    return len(kept) - fidelity, fidelity


def fidelity_text(fidelity: int) -> str:
    """`; 330 fidelity checks of the simulated user (counted apart)`, or "" when there are none."""
    return f"; {fidelity} fidelity checks of the simulated user (counted apart)" if fidelity else ""
