"""Quality signals, computed in code for every collected conversation (not only the judged sample).

- `handover`: the bot handed the user to a person (its words, or a handover/escalation span attribute);
- `rephrased`: consecutive user messages so alike that the user was saying the same thing again;
- `elsewhere`: the user said they would go elsewhere (another service, a doctor, "forget it");
- `abandoned`: the conversation ended on the user's message, unanswered, or the user said they would go
  elsewhere;
- `negative_feedback`: a thumbs-down or escalation signal in the spans' attributes;
- `turns`, `user_turns`, `first_reply_s` (seconds from the first user message to the first bot reply).

The phrase lists are deliberately plain and editable (the sampling policy can extend them); a signal is a
reason to look, never a verdict.
"""

from __future__ import annotations

__all__ = ["BOOLEAN_SIGNALS", "SignalConfig", "quality_signals"]

import itertools
import re
from collections.abc import Iterator
from difflib import SequenceMatcher
from typing import Any

from pydantic import Field

from simulator.models import StrictModel
from simulator.record.models import ConversationRecord
from simulator.traces.otlp import Span

BOOLEAN_SIGNALS = ("handover", "rephrased", "elsewhere", "abandoned", "negative_feedback", "long")


def _handover_phrases() -> list[str]:
    return [
        r"transfer(ring)? you",
        r"connect(ing)? you (to|with) (a|an|one of our) (person|human|nurse|doctor|agent|colleague)",
        r"hand(ing)? (you )?over",
        r"speak (to|with) a (person|human|nurse|member of (our )?staff)",
        r"a (nurse|clinician|colleague) will (call|contact) you",
    ]


def _elsewhere_phrases() -> list[str]:
    return [
        r"\b(i'?ll|i will|i'm going to|going to) (go|call|ring|see|ask|try) (somewhere|someone|elsewhere|"
        r"my (gp|doctor)|a (real )?(doctor|person|human)|another)",
        r"\bforget it\b",
        r"\bthis is (useless|pointless)\b",
        r"\b(waste of (my )?time)\b",
    ]


class SignalConfig(StrictModel):
    """Phrases (regular expressions, case-insensitive) and span attributes the signals look for."""

    handover: list[str] = Field(default_factory=_handover_phrases)
    elsewhere: list[str] = Field(default_factory=_elsewhere_phrases)
    # Span attributes whose negative value (false, 0 or below, "down") is a thumbs-down, and whose true
    # value is an escalation.
    feedback_attributes: list[str] = Field(
        default_factory=lambda: ["user.feedback", "feedback.score", "gen_ai.feedback"]
    )
    escalation_attributes: list[str] = Field(default_factory=lambda: ["app.escalation", "gen_ai.escalation"])
    handover_attributes: list[str] = Field(default_factory=lambda: ["app.handover", "gen_ai.handover"])
    rephrase_similarity: float = Field(default=0.75, gt=0, le=1)
    long_turns: int = Field(default=12, ge=2)


def _any(patterns: list[str], texts: list[str]) -> bool:
    compiled = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE) if patterns else None
    return compiled is not None and any(compiled.search(t) for t in texts)


def _negative(value: Any) -> bool:
    """A feedback value meaning thumbs-down or escalate: false, negative numbers, words like `down`."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value < 0 or value == 0
    text = str(value).strip().lower()
    return text in {"down", "thumbs_down", "thumbs-down", "negative", "bad", "-1", "0", "false"}


def _truthy(value: Any) -> bool:
    return value is True or str(value).strip().lower() in {"true", "yes", "1"}


def _attribute_signal(spans: list[Span], names: list[str], test: Any = _truthy) -> bool:
    """True when a span (or one of its events) has one of the attributes with a value passing `test`."""
    for span in spans:
        sources = [span.attributes] + [attrs for _, _, attrs in span.events]
        for attrs in sources:
            for name in names:
                if name in attrs and test(attrs[name]):
                    return True
    return False


def _rephrased(texts: list[str], threshold: float) -> int:
    """How many user messages repeat the one before them: at least three words each, mostly the same
    words, and alike as text (case and punctuation aside). Short replies ("yes", "45") never count."""
    words = [re.findall(r"\w+", t.lower()) for t in texts]
    count = 0
    for a, b in itertools.pairwise(words):
        if len(a) < 3 or len(b) < 3:
            continue
        overlap = len(set(a) & set(b)) / len(set(a) | set(b))
        if overlap >= 0.6 and _alike(" ".join(a), " ".join(b), threshold):
            count += 1
    return count


def _alike(a: str, b: str, threshold: float) -> bool:
    """`SequenceMatcher(None, a, b).ratio() >= threshold`: no matching where the ratio's upper bound by the
    lengths (difflib's `real_quick_ratio`) is below the threshold already, and the matching stopped as soon
    as the blocks found reach the threshold, or those that could still be found cannot (`_blocks`)."""
    total = len(a) + len(b)
    if total and 2.0 * min(len(a), len(b)) / total < threshold:
        return False
    if len(b) >= AUTOJUNK_FROM:
        return SequenceMatcher(None, a, b).ratio() >= threshold
    if not total:
        return threshold <= 1.0
    matched = 0
    for size, more in _blocks(a, b):
        matched += size
        if 2.0 * matched / total >= threshold:  # the ratio only grows with the blocks still to find
            return True
        if 2.0 * (matched + more) / total < threshold:  # nor can it grow past what is left to match
            return False
    return False


AUTOJUNK_FROM = 200  # difflib's autojunk: from this length of `b` on, its frequent characters are junk


def _ratio(a: str, b: str) -> float:
    """`SequenceMatcher(None, a, b).ratio()`, the same number for `b` under AUTOJUNK_FROM characters (where
    no character is junk), each longest match found with `str.find` instead of difflib's loop over every
    character's positions in Python (a third to a half of its time on a user's message); difflib's own
    for longer `b`."""
    if len(b) >= AUTOJUNK_FROM:
        return SequenceMatcher(None, a, b).ratio()
    total = len(a) + len(b)
    return 2.0 * sum(size for size, _ in _blocks(a, b)) / total if total else 1.0


def _blocks(a: str, b: str) -> Iterator[tuple[int, int]]:
    """The sizes of the blocks difflib matches (no junk), each with the most that the ranges still to match
    could add (the shorter side of each). The matching is difflib's: the longest common block, the earliest
    in `a`, then in `b` (`find_longest_match`), then the same on each side of it; the ratio is 2 x matched
    / total."""
    ranges = [(0, len(a), 0, len(b))]
    left = min(len(a), len(b))
    while ranges:
        alo, ahi, blo, bhi = ranges.pop()
        left -= min(ahi - alo, bhi - blo)
        i, j, k = _longest_match(a, b, alo, ahi, blo, bhi)
        if k:
            if alo < i and blo < j:
                ranges.append((alo, i, blo, j))
                left += min(i - alo, j - blo)
            if i + k < ahi and j + k < bhi:
                ranges.append((i + k, ahi, j + k, bhi))
                left += min(ahi - i - k, bhi - j - k)
        yield k, left


def _longest_match(a: str, b: str, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int, int]:
    """difflib's `find_longest_match` without junk: (i, j, k), a[i:i+k] == b[j:j+k] the longest such
    block in the ranges, of those the earliest in `a`, then in `b`; (alo, blo, 0) when there is none. Each
    start in `a` is only tried for a block longer than the best so far, and that block's length found by
    doubling then halving (a longer block is in `b` only if each shorter one from that start is)."""
    best_i, best_j, best = alo, blo, 0
    window = b[blo:bhi]
    i = alo
    while i + best < ahi:
        if a[i : i + best + 1] in window:
            found, most, step = best + 1, ahi - i, 1  # a block of `found` is in it; none passes `most`
            while found < most:
                probe = min(found + step, most)
                if a[i : i + probe] not in window:
                    most = probe - 1
                    break
                found, step = probe, step * 2
            while found < most:
                middle = (found + most + 1) // 2
                if a[i : i + middle] in window:
                    found = middle
                else:
                    most = middle - 1
            best_i, best_j, best = i, blo + window.find(a[i : i + found]), found
        i += 1
    return best_i, best_j, best


def quality_signals(record: ConversationRecord, spans: list[Span], config: SignalConfig) -> dict[str, Any]:
    """The signals of one conversation, as the line `signals.jsonl` holds."""
    user = [t.text for t in record.turns if t.role == "user"]
    bot = [t.text for t in record.turns if t.role == "bot"]
    elsewhere = _any(config.elsewhere, user)
    first_user = next((t for t in record.turns if t.role == "user"), None)
    first_bot = next(
        (t for t in record.turns if t.role == "bot" and first_user and t.index > first_user.index), None
    )
    first_reply = (
        round((first_bot.started_at - first_user.started_at).total_seconds(), 3)
        if first_user is not None and first_bot is not None
        else None
    )
    rephrased = _rephrased(user, config.rephrase_similarity)
    last_is_user = bool(record.turns) and record.turns[-1].role == "user"
    return {
        "conversation_id": record.id,
        "started_at": record.started_at.isoformat(),
        "turns": len(record.turns),
        "user_turns": len(user),
        "first_reply_s": first_reply,
        "handover": _any(config.handover, bot) or _attribute_signal(spans, config.handover_attributes),
        "rephrased": rephrased > 0,
        "rephrasings": rephrased,
        "elsewhere": elsewhere,
        "abandoned": last_is_user or elsewhere,
        "negative_feedback": _attribute_signal(spans, config.feedback_attributes, _negative)
        or _attribute_signal(spans, config.escalation_attributes),
        "long": len(record.turns) >= config.long_turns,
        "user": _user(spans),
    }


def _user(spans: list[Span]) -> str | None:
    """Who the user is, when the spans say (`user.id`, `enduser.id`): the cluster of the drift intervals."""
    for span in spans:
        for attrs in (span.attributes, span.resource):
            for name in ("user.id", "enduser.id"):
                if attrs.get(name) is not None:
                    return str(attrs[name])
    return None
