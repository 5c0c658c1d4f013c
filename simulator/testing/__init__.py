"""Test doubles that speak real protocols: the fake LLM server (needs aiohttp, from the `test` extra)."""

from __future__ import annotations

__all__ = [
    "FakeCall",
    "FakeLLMServer",
    "FakeReply",
    "FaultConfig",
    "LatencyModel",
    "ServerBudget",
    "default_responder",
    "minimal_instance",
]

from typing import Any


def __getattr__(name: str) -> Any:
    """Import the fake server lazily, so `simulator.testing` itself does not require aiohttp."""
    if name in __all__:
        from simulator.testing import fake_llm

        return getattr(fake_llm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
