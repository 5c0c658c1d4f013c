"""The demo triage bot with a record that disagrees with what it says: its case system has no `urgent` code,
so an urgent case is stored as `gp` while the patient is told to be seen today.

A planted flaw for outcome sources (docs/outcome-sources.md): a suite that reads only the bot's state sees a
GP case and under-triage; one that reads what the bot told the patient sees the urgent advice the patient
actually got; with both (`outcome.source: [messages, state]`) the report lists every urgent case as a
disagreement between the record and the words. examples/miscoded/suite.yaml runs it.
"""

from __future__ import annotations

from typing import Any

from examples.triage_bot import TriageBot

# What the case system stores for each level the bot decides: it has no code for `urgent`.
STORED = {"emergency": "emergency", "urgent": "gp", "gp": "gp", "self_care": "self_care"}


class MiscodedTriageBot(TriageBot):
    """Advises exactly as the demo bot; records `urgent` as `gp`."""

    def final_state(self) -> dict[str, Any] | None:
        state = super().final_state()
        if state is None:
            return None
        return {**state, "triage_level": STORED[state["triage_level"]]}


def make_bot() -> MiscodedTriageBot:
    """The factory examples/miscoded/suite.yaml names: a fresh bot per conversation."""
    return MiscodedTriageBot()
