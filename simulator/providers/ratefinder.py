"""Find a provider's rate from its 429s when it says nothing else: no rate-limit headers, no `rpm` set.

Many gateways, Azure deployments and local proxies refuse calls beyond a token bucket and say only
"429, Retry-After: 1". A connection limit cannot keep a run inside such a budget (25 connections still
send far more than 10 requests a second); a rate can. The finder turns the 429s into a rate, which the
pacer keeps exactly as it keeps an `rpm` the suite sets:

- **start**: a burst of 429s (at least `min_refused`, and at least `start_share` of the calls sent since
  the burst began, counting those still in flight) opens a measuring period; at its end, pacing starts
  at the rate the provider admitted in it (calls sent in the period less those of them refused, per
  second) plus `headroom`. Isolated 429s never start it: the share is of calls *sent*, so a few 429s
  answered instantly ahead of the first wave's answers are a few per cent, not a burst;
- **back off**: each later period (at least `period_s` and `min_sends` calls) whose share of 429s
  reaches `cut_share` multiplies the rate by what it took (1 - share, plus `headroom`), by `back_off`
  at least; when half or more were refused, it sets the
  rate to what the provider admitted plus `headroom` (at most halved when it admitted nothing). A 429
  counts in the period its call was *sent* in: those of calls sent before a change say nothing new;
- **probe**: a period with (almost) no 429s (fewer than `min_refused`, or `probe_below`) in which the
  rate held back half the calls or more raises it by `probe`,
  so a rate found too low, or a provider that allows more later, is found again; right after the first
  measure (a floor: callers told to retry after a second send nothing meanwhile) it rises by `ramp`
  until the provider refuses again;
- **hold**: in between (a few 429s, the rate just above the provider's) it stays: sending a little more
  than is allowed costs a few retries, sending less costs the run's time.

One finder counts one unit: requests (1 per call) or tokens (a call's input + max_tokens); `min_refused`
counts 429s, whatever their size. A `ceiling_per_s` (the suite's `rpm`/`tpm`) is never exceeded.
"""

from __future__ import annotations

__all__ = ["RateFinder", "limit_in_message"]

import re


class RateFinder:
    """Units per second a provider admits, found from its 429s; `rate` is None until a burst starts it."""

    def __init__(
        self,
        *,
        period_s: float = 1.0,
        min_sends: float = 10.0,
        min_refused: int = 3,
        start_share: float = 0.25,
        cut_share: float = 0.10,
        probe_below: float = 0.02,
        headroom: float = 1.05,
        probe: float = 1.05,
        back_off: float = 0.9,
        ramp: float = 1.25,
        floor_per_s: float = 1 / 60,
        ceiling_per_s: float | None = None,
    ) -> None:
        self.period_s = period_s
        self.min_sends = min_sends
        self.min_refused = min_refused
        self.start_share = start_share
        self.cut_share = cut_share
        self.probe_below = probe_below
        self.headroom = headroom
        self.probe = probe
        self.back_off = back_off
        self.ramp = ramp
        self.ramping = False  # after the first measure, until the provider refuses again
        self.floor_per_s = floor_per_s
        self.ceiling_per_s = ceiling_per_s
        self.rate: float | None = None
        self.measuring = False  # a burst was seen: the period now open measures the first rate
        self.sent = 0.0  # units sent, ever (the client adds to it before every attempt)
        self.held = 0  # calls the rate held back this period (the pacer adds to it)
        self.turns = 0  # calls that went through the pacer this period (held back or not)
        self.refusals = 0  # 429s seen, ever
        self.cuts = 0
        self.probes = 0
        self.lowest: float | None = None
        # What the provider delivered in periods the rate held calls back and it still refused some (so
        # it took all it would): a moving average, the figure to report (the rate saw-tooths around it).
        self.observed: float | None = None
        self._seen_units = 0.0
        self._seen_s = 0.0
        # The window that tells a burst from isolated 429s, before any rate is kept.
        self._burst_start = float("-inf")
        self._burst_sent = 0.0  # `sent` when it began, less what was then in flight
        self._burst_refused = 0.0
        self._burst_events = 0
        # The measuring period.
        self._start = 0.0  # when it began (0: none open)
        self._sent_at_open = 0.0
        self._refused = 0.0  # units refused of calls sent in it
        self._events = 0
        self._settling = False  # it follows a cut: not judged

    @property
    def period_end(self) -> float:
        """When the open period may be judged (infinity when none is open)."""
        return self._start + self.period_s if self._start else float("inf")

    def refused(self, amount: float, sent_at: float, in_flight: float, now: float) -> bool:
        """Count a 429 of `amount` units for a call sent at `sent_at` (`in_flight`: units sent and not
        yet answered, this one included); True when the rate changed."""
        self.refusals += 1
        changed = self.tick(now)
        if self._start and sent_at >= self._start:
            self._refused += amount
            self._events += 1
        if self.rate is None and not self.measuring and self._burst(amount, in_flight, now):
            self.measuring = True
            self._open(now)
        elif self.measuring and sent_at < self._start:
            self._burst_refused += amount  # a call of the burst itself: counted against it
        return changed

    def _burst(self, amount: float, in_flight: float, now: float) -> bool:
        if now - self._burst_start > self.period_s:  # isolated 429s of an earlier window: forgotten
            self._burst_start, self._burst_sent = now, self.sent - in_flight
            self._burst_refused, self._burst_events = 0.0, 0
        self._burst_refused += amount
        self._burst_events += 1
        sent = max(amount, self.sent - self._burst_sent)
        return self._burst_events >= self.min_refused and self._burst_refused >= self.start_share * sent

    def tick(self, now: float) -> bool:
        """Judge the open period once it is long enough, and open the next; True when the rate changed."""
        if not self._start or now < self.period_end:
            return False
        sent, span = self.sent - self._sent_at_open, now - self._start
        if sent < self.min_sends and span < 2 * self.period_s:
            return False  # too few calls to judge yet: the period goes on
        refused, events, settling = self._refused, self._events, self._settling
        held = self.held * 2 >= max(1, self.turns)  # the rate bound: it held back half the calls or more
        admitted = max(0.0, sent - refused) / span
        if self.measuring and admitted <= 0 and span < 10 * self.period_s:
            return False  # nothing got through yet: measure on (never start at a crawl from nothing)
        # What the burst itself let through: its calls (those in flight when it began included) less
        # the 429s they got.
        burst = max(0.0, self._sent_at_open - self._burst_sent - self._burst_refused)
        self._open(now)
        if held and events >= self.min_refused and self.rate is not None:  # it took all it would
            # Calls over time, both decaying: a period that also drained the provider's saved-up burst
            # weighs by its length, not as a whole vote.
            self._seen_units = 0.95 * self._seen_units + max(0.0, sent - refused)
            self._seen_s = 0.95 * self._seen_s + span
            self.observed = self._seen_units / self._seen_s
        if self.measuring:
            # The first measure is a floor (callers told to retry after a second send nothing meanwhile):
            # ramp up quickly from it until the provider refuses again, then probe slowly.
            self.measuring = False
            self.ramping = True
            # At least what the burst itself let through in a second (a bucket's saved-up calls).
            admitted = max(admitted, burst / self.period_s, self.floor_per_s)
            changed = self._set(admitted * self.headroom, cut=True)
            self._settling = False  # nothing was paced before: no turns taken at an old rate
            return changed
        if self.rate is None or sent <= 0 or settling:
            # Right after a cut, calls that had already taken their turn at the old rate still go out:
            # their 429s are the old rate's, not news about the new one.
            return False
        share = refused / sent
        if events >= self.min_refused and share >= self.cut_share:
            self.ramping = False
            if share < 0.5 and held:
                # Paced and too many refused: a multiplicative step down, to what it took (the rate less
                # the share refused, plus headroom) but at least by `back_off` (429s come in clumps).
                step = min(self.back_off, (1.0 - share) * self.headroom)
                return self._set(self.rate * step, cut=True)
            # Far too many (a rate found too high, or a provider that now allows less): what it admitted.
            new = admitted * self.headroom if admitted > 0 else self.rate / 2
            return self._set(min(new, self.rate * self.back_off), cut=True)
        if held and (events < self.min_refused or share <= self.probe_below):
            return self._set(self.rate * (self.ramp if self.ramping else self.probe), cut=False)
        return False

    def _set(self, rate: float, *, cut: bool) -> bool:
        rate = max(self.floor_per_s, rate)
        if self.ceiling_per_s is not None:
            rate = min(rate, self.ceiling_per_s)
        if rate == self.rate:
            return False
        self.rate = rate
        if cut:
            self._settling = True
            self.cuts += 1
            self.lowest = rate if self.lowest is None else min(self.lowest, rate)
        else:
            self.probes += 1
        return True

    def _open(self, now: float) -> None:
        self._settling = False
        self._start = now
        self._sent_at_open = self.sent
        self._refused = 0.0
        self._events = 0
        self.held = 0
        self.turns = 0


# "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used ..."
# "This request would exceed your organization's rate limit of 50,000 input tokens per minute"
# "Number of request tokens has exceeded your per-minute rate limit"
_TOKENS = re.compile(r"\btokens?\b|\bTPM\b", re.IGNORECASE)
_PER_MINUTE = re.compile(r"per[ -]min(ute)?|\bTPM\b|\bRPM\b|/\s*min", re.IGNORECASE)
_LIMIT = re.compile(r"(?:\blimit(?: of|:)?)\s*([\d][\d,]*(?:\.\d+)?)", re.IGNORECASE)


def limit_in_message(message: str) -> tuple[str, float | None]:
    """What a 429's message says is limited: ("tokens" or "requests", its per-minute limit when stated)."""
    kind = "tokens" if _TOKENS.search(message) else "requests"
    found = _LIMIT.search(message)
    if found is None or not _PER_MINUTE.search(message):
        return kind, None
    try:
        value = float(found.group(1).replace(",", ""))
    except ValueError:
        return kind, None
    return kind, value if value > 0 else None
