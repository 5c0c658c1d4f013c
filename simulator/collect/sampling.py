"""The sampling policy (a YAML file): which collected conversations are judged, and the daily budget.

```yaml
rate: 0.05                 # share of the other conversations judged at random
always: [handover, rephrased, elsewhere, negative_feedback, long]   # these are always judged
review_passes: 0.1         # share of judged passes also sent to the review queue (calibration)
seed: 0
budget:                    # per UTC day; a conversation that would exceed it is not judged
  calls: 500
  dollars: 5.00
signals: {long_turns: 12}  # phrase lists and thresholds of the quality signals (signals.py)
```

The budget is never exceeded: before a conversation is judged its worst case is reserved (every applicable
criterion times jury times samples calls; each call's prompt counted at one token per UTF-8 byte, its
answer at `max_tokens`, priced at the uncached input price), and the ledger keeps the reservation until the
actual usage replaces it. A reservation that would go over the day's budget is refused and the
conversation is recorded as not judged (budget), never judged over it.
"""

from __future__ import annotations

__all__ = ["Budget", "SamplingPolicy", "load_policy"]

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from simulator.collect.signals import BOOLEAN_SIGNALS, SignalConfig
from simulator.collect.spool import UNREADABLE, Damaged, journal_lines
from simulator.collect.supervise import LOGGER
from simulator.config.yamlfile import load_model_file
from simulator.errors import UserError
from simulator.models import StrictModel
from simulator.safefiles import append_durable


class BudgetLimits(StrictModel):
    calls: int | None = Field(default=None, ge=0)
    dollars: float | None = Field(default=None, ge=0)


class SamplingPolicy(StrictModel):
    """What is judged: a random share, every conversation with an `always` signal, within the budget."""

    rate: float = Field(default=0.05, ge=0, le=1)
    always: list[str] = Field(
        default_factory=lambda: ["handover", "rephrased", "elsewhere", "negative_feedback"]
    )
    review_passes: float = Field(default=0.1, ge=0, le=1)
    seed: int = 0
    budget: BudgetLimits = Field(default_factory=lambda: BudgetLimits())
    signals: SignalConfig = Field(default_factory=lambda: SignalConfig())

    def reasons(self, signals: dict[str, Any]) -> list[str]:
        """Why a conversation is judged: its `always` signals, or `random` when the draw picks it."""
        found = [name for name in self.always if signals.get(name)]
        if not found and _draw(self.seed, str(signals["conversation_id"]), "sample") < self.rate:
            found = ["random"]
        return found

    def review_pass(self, conversation_id: str) -> bool:
        """True for the share of judged passes that go to the review queue too (calibration)."""
        return _draw(self.seed, conversation_id, "review") < self.review_passes


def _draw(seed: int, key: str, purpose: str) -> float:
    """A reproducible draw in [0, 1) per conversation (a restart draws the same)."""
    digest = hashlib.blake2b(f"{seed}:{purpose}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def load_policy(path: Path | None) -> SamplingPolicy:
    """The policy in `path`, or the defaults; a mistake is one UserError naming file, line and field."""
    if path is None:
        return SamplingPolicy()
    policy = load_model_file(
        path,
        SamplingPolicy,
        title="invalid sampling policy",
        missing=f"--sample {path}: no such file; pass a YAML sampling policy (docs/collect.md)",
    )
    unknown = [name for name in policy.always if name not in BOOLEAN_SIGNALS]
    if unknown:
        raise UserError(
            f"{path} [always]: unknown signal {unknown[0]!r}; signals: {', '.join(BOOLEAN_SIGNALS)}"
        )
    return policy


@dataclass
class Spend:
    calls: int = 0
    dollars: float = 0.0


class Budget:
    """The day's judge spending, reserved before and settled after each conversation, in a ledger file
    (`OUT/.collect/budget.jsonl`) so that a restart counts what was spent before it."""

    def __init__(self, limits: BudgetLimits, ledger: Path) -> None:
        self.limits = limits
        self.ledger = ledger
        self.entries: dict[tuple[str, str], Spend] = {}  # (day, conversation) -> reserved or settled
        damaged = Damaged(ledger, "the judge calls on them are not counted against their day's budget")
        for number, line in journal_lines(ledger):  # bounded, as the collector's other journals
            try:
                raw = json.loads(line or "")
                self.entries[(raw["day"], raw["id"])] = Spend(int(raw["calls"]), float(raw["dollars"]))
            except UNREADABLE:
                damaged.lines.append(number)
        if damaged.lines:
            LOGGER.warning("collect: %s", damaged.note())

    @staticmethod
    def today() -> str:
        return datetime.now(UTC).strftime("%Y-%m-%d")

    def spent(self, day: str | None = None) -> Spend:
        day = day or self.today()
        days = [s for (d, _), s in self.entries.items() if d == day]
        return Spend(sum(s.calls for s in days), sum(s.dollars for s in days))

    def _write(self, day: str, key: str, spend: Spend) -> None:
        self.entries[(day, key)] = spend
        line = {"day": day, "id": key, "calls": spend.calls, "dollars": round(spend.dollars, 6)}
        append_durable(self.ledger, json.dumps(line) + "\n")

    def reserve(self, key: str, worst: Spend) -> str | None:
        """Reserve the worst case for one conversation; the day it counts against, or None when it does not
        fit in what is left of the day's budget."""
        day = self.today()
        spent = self.spent(day)
        if self.limits.calls is not None and spent.calls + worst.calls > self.limits.calls:
            return None
        if self.limits.dollars is not None and spent.dollars + worst.dollars > self.limits.dollars + 1e-12:
            return None
        self._write(day, key, worst)
        return day

    def settle(self, day: str, key: str, actual: Spend) -> None:
        """Replace a reservation by what was actually spent (at most the reservation: it is a worst case)."""
        self._write(day, key, actual)
