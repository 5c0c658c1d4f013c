"""The `test:` provider: the project's fake LLM server, started in process, behind the real OpenAI SDK.

`test:default` needs no key and no network: it answers deterministically (a minimal JSON instance when a
schema is asked for, the forced tool's call, else a short reply), in the real wire format; `test:tools`
calls every tool it is offered (two at a time, minimal arguments) before it answers, so a team can run
a chat bot, an LLM user or an LLM judge end to end before it has a key, and see how its suite behaves under
latency and faults: `test:default?latency_ms=200&error_429=0.1&error_500=0.05&seed=3`.

Its answers mean nothing; it tests the plumbing (configuration, adapters, retries, reports), never a bot.
`test:MODULE:FUNCTION` serves the answers of a responder of your own instead (a function that takes a
`simulator.testing.FakeCall` and returns a `FakeReply` or text), imported from the folder you run from like
a python bot: a scripted model whose behaviour you know, e.g. `examples.triage_chat_model:respond`, a
stand-in for a chat model that follows the questions its system prompt lists (docs/loop.md).

This module reads the model name; the provider itself (`simulator/testing/provider.py`) sits with the fake
server it starts, above the providers, and the registry names it like any other provider.
"""

from __future__ import annotations

__all__ = ["parse_test_model"]

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl

from simulator.errors import UserError

_KNOBS = ("latency_ms", "error_429", "error_500", "timeout", "seed")
_RESPONDER = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class TestModel:
    """What a `test:` model name asks the fake server to do."""

    behaviour: str = "default"  # or "tools", or MODULE:FUNCTION, a responder of your own
    latency_ms: float = 0.0
    error_429: float = 0.0
    error_500: float = 0.0
    timeout: float = 0.0
    seed: int = 0


def parse_test_model(model: str) -> TestModel:
    """`default?latency_ms=100&error_429=0.1` -> TestModel; a mistake names the knob and the fix."""
    behaviour, _, query = model.partition("?")
    if behaviour not in ("default", "tools") and not _RESPONDER.match(behaviour):
        raise UserError(
            f"test model '{model}': the behaviours are 'default' (test:default), 'tools' (test:tools, a "
            "model that calls the tools it is offered) or a responder of your own named MODULE:FUNCTION "
            "(test:examples.triage_chat_model:respond)"
        )
    values: dict[str, float] = {}
    for key, text in parse_qsl(query, keep_blank_values=True):
        if key not in _KNOBS:
            raise UserError(f"test model '{model}': unknown setting '{key}'; settings: {', '.join(_KNOBS)}")
        try:
            values[key] = float(text)
        except ValueError:
            raise UserError(f"test model '{model}': {key} must be a number, not '{text}'") from None
        share = key.startswith("error_") or key == "timeout"
        if values[key] < 0 or (share and values[key] > 1):
            raise UserError(f"test model '{model}': {key} must be {'0..1' if share else '>= 0'}")
    if sum(values.get(k, 0.0) for k in ("error_429", "error_500", "timeout")) > 1:
        raise UserError(f"test model '{model}': error_429 + error_500 + timeout must add up to at most 1")
    seed = int(values.pop("seed", 0))
    return TestModel(behaviour, seed=seed, **values)
