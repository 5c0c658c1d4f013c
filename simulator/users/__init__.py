"""Simulated users: an LLM playing a persona, or the offline rule-based stand-in."""

from __future__ import annotations

__all__ = ["END", "CharacterBreak", "SimulatedUser", "UserMessage"]

from simulator.users.base import END, CharacterBreak, SimulatedUser, UserMessage
