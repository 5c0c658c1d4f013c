"""Alert rules on collected conversations: `fail_rate(no-diagnosis-no-prescribing) > 1%`, parsed as
`gate --require` is, and judged as gate judges: on the clustered 95% bound, not the point estimate.

A rule `metric > t` (or `>=`) fires when the window's clustered *lower* bound is above t: the data show the
rate is over the line, not merely that one bad day nudged the point estimate; `metric < t` fires when the
upper bound is under t. The window is the last N conversations with a decision for the metric. A rule
fires once, and again only after it has cleared. Firing appends a JSON line to the alert file and/or
POSTs it to the webhook, with the conversations behind it and the change against the reference window.
"""

from __future__ import annotations

__all__ = ["Alerts", "parse_rules"]

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.collect.supervise import LOGGER
from simulator.collect.trends import Observation, change, counts_for, left_out, rate_of, unit_of
from simulator.errors import UserError
from simulator.readers import InputRefused, missing, read_json
from simulator.report.gate import Requirement, parse_requirement
from simulator.safefiles import FileRefused, read_capped, write_atomic

MAX_CONVERSATIONS_SENT = 200


@dataclass
class AlertRule:
    requirement: Requirement

    def fires(self, low: float, high: float) -> bool:
        t, op = self.requirement.threshold, self.requirement.op
        return {">": low > t, ">=": low >= t, "<": high < t, "<=": high <= t}[op]


def parse_rules(texts: list[str], known: list[str]) -> list[AlertRule]:
    """Each `--alert`, parsed by the gate's parser (one UserError naming the rule and the metrics)."""
    rules = [AlertRule(parse_requirement(text, known, flag="--alert")) for text in texts]
    for rule in rules:
        if rule.requirement.op not in (">", ">=", "<", "<="):
            raise UserError(f'--alert "{rule.requirement.text}": an alert compares with >, >=, < or <=')
    return rules


class Alerts:
    """The rules, where they go when they fire, and which are firing now (kept across restarts)."""

    def __init__(
        self,
        rules: list[AlertRule],
        state: Path,
        *,
        window: int = 500,
        reference: int | None = None,
        webhook: str | None = None,
        file: Path | None = None,
        log: Path | None = None,
    ) -> None:
        self.rules = rules
        self.state = state
        self.window = window
        self.reference = reference or window
        self.webhook = webhook
        self.file = file
        self.log = log  # the collector's own record of fired alerts (the desk's live page reads it)
        self.firing = _firing(state)
        self.fired: list[dict[str, Any]] = []

    def counted(self, observations: list[Observation]) -> int:
        """The fewest conversations that count for any rule (those with a decision for its metric)."""
        metrics = [rule.requirement.metric for rule in self.rules]
        return min((sum(counts_for(o, m) for o in observations) for m in metrics), default=len(observations))

    def evaluate(self, observations: list[Observation]) -> list[dict[str, Any]]:
        """Check every rule on the newest window; the alerts that fired now (sent or written)."""
        out = []
        for rule in self.rules:
            metric = rule.requirement.metric
            counted = [o for o in observations if counts_for(o, metric)]
            current = counted[-self.window :]
            reference = counted[: min(self.reference, max(0, len(counted) - self.window))]
            rate = rate_of(current, metric)
            if rate.n == 0:
                continue
            text = rule.requirement.text
            if not rule.fires(rate.low, rate.high):
                self.firing.discard(text)
                continue
            if text in self.firing:
                continue
            self.firing.add(text)
            alert = _payload(rule, rate, current, reference)
            alert["left_out_count"] = sum(
                o.started_at >= current[0].started_at and not counts_for(o, metric) for o in observations
            )
            self._send(alert)
            out.append(alert)
        write_atomic(self.state, json.dumps(sorted(self.firing)), sync=False)
        self.fired += out
        return out

    def _send(self, alert: dict[str, Any]) -> None:
        line = json.dumps(alert, ensure_ascii=False)
        for path in (self.file, self.log):
            if path is not None:
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
        if self.webhook is not None:
            request = urllib.request.Request(
                self.webhook, data=line.encode(), headers={"Content-Type": "application/json"}, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    alert["webhook_status"] = response.status
            except (urllib.error.URLError, OSError) as exc:
                alert["webhook_error"] = str(exc)


MAX_STATE_BYTES = 64_000_000  # the rules firing: a few lines of text each


def _firing(state: Path) -> set[str]:
    """The rules firing when the collector last checked (sent once, not again while they fire). A state
    that is not a regular file is the one-line refusal of the bounded reader; one whose content cannot be
    read back is said and read as none firing (those firing are then sent again)."""
    if missing(state):
        return set()
    try:
        raw = read_capped(state, MAX_STATE_BYTES, "move it away")
    except FileRefused as exc:
        raise UserError(f"{state}: {exc}") from None
    try:
        firing = read_json(raw, str(state))
    except InputRefused as exc:
        firing, why = None, str(exc)
    else:
        why = f"{state}: not a list of rule texts"
    if isinstance(firing, list) and all(isinstance(rule, str) for rule in firing):
        return set(firing)
    LOGGER.warning(
        "collect: %s; the file was edited or damaged: read as no alert firing (those firing are sent again)",
        why,
    )
    return set()


def _payload(
    rule: AlertRule, rate: Any, current: list[Observation], reference: list[Observation]
) -> dict[str, Any]:
    ref = rate_of(reference, rule.requirement.metric) if reference else None
    p, diff = change(rate, ref) if ref is not None else (None, None)
    return {
        "alert": rule.requirement.text,
        "metric": rule.requirement.metric,
        "fired_at": datetime.now(UTC).isoformat(),
        "unit": unit_of(rule.requirement.metric),
        "window": {
            "conversations": len(current),
            "from": current[0].started_at.isoformat(),
            "to": current[-1].started_at.isoformat(),
        },
        "k": rate.k,
        "n": rate.n,
        "rate": rate.rate,
        "interval_95": [rate.low, rate.high],
        "clusters": rate.clusters,
        "threshold": rule.requirement.threshold,
        "left_out": left_out(rule.requirement.metric),
        "reference": None
        if ref is None
        else {"k": ref.k, "n": ref.n, "rate": ref.rate, "p_value": p, "difference_95": diff},
        "conversations": rate.conversations[:MAX_CONVERSATIONS_SENT],
    }
