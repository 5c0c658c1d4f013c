"""The outcome of pairwise judging over many pairs: wins, ties, errors and how often the verdict flipped
with the order (position inconsistency), as a rate with its Wilson interval."""

from __future__ import annotations

__all__ = ["PairwiseSummary", "summarise_pairs"]

from simulator.judging.pairwise import PairwiseResult
from simulator.models import ResultModel
from simulator.stats.basic import Rate, rate


class PairwiseSummary(ResultModel):
    """Wins, ties, errors and the position-inconsistency rate (with its Wilson interval) over many pairs."""

    a_wins: int
    b_wins: int
    ties: int
    errors: int
    inconsistent: Rate


def summarise_pairs(results: list[PairwiseResult]) -> PairwiseSummary:
    """Count the outcomes; the inconsistency rate is over pairs judged without error."""
    judged = [r for r in results if r.winner is not None]
    return PairwiseSummary(
        a_wins=sum(r.winner == "A" for r in judged),
        b_wins=sum(r.winner == "B" for r in judged),
        ties=sum(r.winner == "tie" for r in judged),
        errors=len(results) - len(judged),
        inconsistent=rate(sum(r.position_consistent is False for r in judged), len(judged)),
    )
