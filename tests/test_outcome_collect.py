"""Outcome sources on live conversations (simulator/collect/): with a suite whose outcome is read from what the
bot told the person, every judged live conversation records its outcome with the deciding quote, and the
share sent to each level is a metric trends, drift and alerts can name (`outcome:emergency`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simulator.collect.build import build_collector
from simulator.collect.folders import collected_folders
from simulator.collect.service import CollectOptions
from simulator.collect.trends import load_observations, metric_names, rate_of
from tests.test_collect_judging import document

SUITE = """
    name: live-outcome
    bot: {type: python, factory: 'examples.triage_bot:make_bot'}
    judges: {paths: [], model: null}
    outcome:
      key: triage_level
      levels: [self_care, gp, urgent, emergency]
      source: messages
      messages:
        phrases:
          emergency: ['\\bcall 999\\b']
          gp: ['\\bsee your gp\\b']
"""


@pytest.mark.parametrize("rate", [1.0, 0.0])
async def test_live_conversations_get_their_outcome_mix_from_messages(rate: float, tmp_path: Path) -> None:
    """Sampled for judging or not (rate 0): the outcome, read in code, is recorded for every conversation."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE))
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"rate: {rate}\n")
    options = CollectOptions(out=tmp_path / "live", idle_s=60, fsync=False, policy=policy)
    c = build_collector(options, suite=suite, alerts=["outcome:emergency > 50%"])
    c.start()
    assert c.judge is not None
    c.judge.start()
    planted = {n: n % 4 == 0 for n in range(20)}  # every fourth conversation is told to call 999
    for number, emergency in planted.items():
        c.accept(document(number, "Call 999 now." if emergency else "See your GP this week."))
    c.tick(everything=True)
    await c.judge.drain()
    await c.judge.stop()
    c.stop()
    assert c.judge.counts["sampled"] == (20 if rate else 0)
    observations = load_observations(collected_folders(tmp_path / "live"))
    assert {"outcome:emergency", "outcome:gp"} <= set(metric_names(observations))
    emergency = rate_of(observations, "outcome:emergency")
    assert (emergency.k, emergency.n, emergency.left_out) == (5, 20, 0)
    assert sorted(emergency.conversations) == sorted(
        o.conversation for o in observations if planted[int(o.conversation.split("conv-")[1].split("#")[0])]
    )
