"""Length control for judges (HealthBench-style): does the verdict follow the length of the bot's replies?

Judges of text tend to prefer the longer answer. Two measures, both read from stored records:
- pairwise: the win rate of bot A over all judged pairs and over the pairs whose bot replies differ in
  length by at most 10% (length-controlled), and the correlation of the relative length difference with
  the verdict (A = 1, tie = 0.5, B = 0);
- pointwise: per LLM-judged criterion, the correlation of the bot's reply length with pass (1) / fail (0)
  over the pass and fail verdicts (errors, not applicable and not judged left out).

Length is the characters of the bot's messages in the conversation. The correlation is Pearson's r (for a
0/1 verdict, the point-biserial), with a two-sided p-value from Fisher's z (normal approximation). A
correlation is a prompt to look, not proof of bias: a longer reply may really be better (more safety
netting); the length-controlled win rate is the number to trust when they disagree.
"""

from __future__ import annotations

__all__ = [
    "LENGTH_TOLERANCE",
    "Correlation",
    "CriterionLength",
    "bot_length",
    "correlation",
    "criterion_length_bias",
    "pairwise_length_control",
]

import math
from collections import defaultdict
from collections.abc import Sequence
from statistics import NormalDist

from simulator.judging.pairwise import PairwiseResult
from simulator.models import ResultModel
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.stored_turns import StoredTurns
from simulator.record.transcript import Turn
from simulator.stats.basic import Rate, rate

LENGTH_TOLERANCE = 0.10  # pairs whose lengths differ by at most this share of the longer one
MIN_UNITS = 8  # fewer pairs or verdicts than this: no warning (too few to say)
ALPHA = 0.05
STRONG = 0.3  # |r| at least this, and p < ALPHA: the verdict follows length


class Correlation(ResultModel):
    """Pearson's r over n units with its two-sided p-value; r is None when a side does not vary."""

    r: float | None
    p: float | None
    n: int

    @property
    def follows_length(self) -> bool:
        """Whether the verdict follows length clearly enough to warn: enough units, |r| ≥ 0.3, p < 0.05."""
        return (
            self.r is not None
            and self.p is not None
            and self.n >= MIN_UNITS
            and abs(self.r) >= STRONG
            and self.p < ALPHA
        )

    @property
    def text(self) -> str:
        if self.r is None or self.p is None:
            why = "too few" if self.n < 4 else "length or verdict does not vary"
            return f"r n/a (n={self.n}: {why})"
        shown = "p < 0.001" if self.p < 0.001 else f"p {self.p:.3g}"
        return f"r = {self.r:+.2f} ({shown}, n={self.n})"


def correlation(xs: Sequence[float], ys: Sequence[float]) -> Correlation:
    """Pearson's r of two equal-length sequences, p from Fisher's z with n - 3 degrees (None below 4)."""
    n = len(xs)
    if n < 3:
        return Correlation(r=None, p=None, n=n)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return Correlation(r=None, p=None, n=n)
    r = max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))
    if n < 4:
        return Correlation(r=r, p=None, n=n)
    z = math.atanh(min(abs(r), 1 - 1e-12)) * math.sqrt(n - 3)
    return Correlation(r=r, p=2 * (1 - NormalDist().cdf(z)), n=n)


def bot_length(turns: Sequence[Turn]) -> int:
    """Characters of the bot's messages in a conversation (counted at load for turns left in the folder)."""
    if isinstance(turns, StoredTurns):
        return sum(fact.chars for fact in turns.facts if fact.role == "bot")
    return sum(len(text) for turn in turns if turn.role == "bot" for text in turn.messages)


class PairwiseLength(ResultModel):
    """Win rates of bot A (ties count half) over all judged pairs and over length-matched ones."""

    judged: int
    a_win_rate: float | None
    matched: int  # pairs whose bot replies differ in length by at most LENGTH_TOLERANCE
    matched_a_win_rate: float | None
    longer_won: Rate  # of the decided (not tied) pairs with different lengths, how often the longer won
    correlation: Correlation  # relative length difference (A − B) / longer vs verdict (A 1, tie ½, B 0)

    @property
    def warning(self) -> str | None:
        if not self.correlation.follows_length:
            return None
        return (
            f"the judge's verdicts follow length ({self.correlation.text}; the longer conversation won "
            f"{self.longer_won.k}/{self.longer_won.n}): trust the length-controlled win rate, over the "
            f"{self.matched} pairs within {LENGTH_TOLERANCE:.0%} of each other"
        )


_SCORE = {"A": 1.0, "tie": 0.5, "B": 0.0}


def pairwise_length_control(
    results: list[PairwiseResult], a: dict[str, ConversationRecord], b: dict[str, ConversationRecord]
) -> PairwiseLength:
    """Length control of pairwise verdicts: pairs judged without error, lengths from the two runs."""
    diffs: list[float] = []
    scores: list[float] = []
    matched: list[float] = []
    longer, decided = 0, 0
    for result in results:
        if result.winner is None:
            continue
        la, lb = bot_length(a[result.conversation_id].turns), bot_length(b[result.conversation_id].turns)
        relative = (la - lb) / max(la, lb, 1)
        score = _SCORE[result.winner]
        diffs.append(relative)
        scores.append(score)
        if abs(relative) <= LENGTH_TOLERANCE:
            matched.append(score)
        if result.winner != "tie" and la != lb:
            decided += 1
            longer += int((result.winner == "A") == (la > lb))
    return PairwiseLength(
        judged=len(scores),
        a_win_rate=sum(scores) / len(scores) if scores else None,
        matched=len(matched),
        matched_a_win_rate=sum(matched) / len(matched) if matched else None,
        longer_won=rate(longer, decided, counts="successes"),
        correlation=correlation(diffs, scores),
    )


class CriterionLength(ResultModel):
    """One LLM-judged criterion: does passing go with a longer (or shorter) bot reply?"""

    criterion_id: str
    pass_length: float | None  # mean bot characters of the passing conversations
    fail_length: float | None
    correlation: Correlation  # bot characters vs pass (1) / fail (0)


def criterion_length_bias(
    records: list[ConversationRecord], verdicts: list[Verdict]
) -> list[CriterionLength]:
    """Per LLM-judged criterion, the length–verdict correlation over its pass and fail verdicts."""
    lengths = {r.id: bot_length(r.turns) for r in records}
    by_criterion: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for verdict in verdicts:
        if (
            verdict.kind == "llm"
            and verdict.result in ("pass", "fail")
            and verdict.conversation_id in lengths
        ):
            by_criterion[verdict.criterion_id].append(
                (float(lengths[verdict.conversation_id]), float(verdict.result == "pass"))
            )
    rows = []
    for criterion, points in sorted(by_criterion.items()):
        passed = [x for x, y in points if y == 1.0]
        failed = [x for x, y in points if y == 0.0]
        rows.append(
            CriterionLength(
                criterion_id=criterion,
                pass_length=sum(passed) / len(passed) if passed else None,
                fail_length=sum(failed) / len(failed) if failed else None,
                correlation=correlation([x for x, _ in points], [y for _, y in points]),
            )
        )
    return rows
