"""Detect a simulated user breaking character, in code: such a conversation is not a valid test."""

from __future__ import annotations

__all__ = ["END", "character_break_reason"]

import re
from functools import lru_cache

# The sentinel a simulated user sends to end the conversation (users/base.py hands it to every user).
END = "[END]"

# What the persona would never send, in order (the first that matches names the reason), matched case-blind.
_BREAKS = [
    (re.compile(pattern, re.I), reason)
    for pattern, reason in [
        (r"\bas an? (ai|a\.i\.|artificial intelligence|assistant|language model|llm)\b", "said it is an AI"),
        (r"\b(large )?language model\b", "mentioned being a language model"),
        (r"\bi('m| am) (an? )?(ai|chatbot|bot|virtual assistant|assistant)\b", "said it is an AI"),
        (
            r"\b(this is|this was|it's|it is) (just )?(a|an) (test|simulation|role[- ]?play)\b",
            "said this is a test",
        ),
        (
            r"\b(simulated user|role[- ]?playing|in character|out of character)\b",
            "talked about the role-play",
        ),
        (r"\bhow (can|may) i (help|assist) you\b", "switched to the assistant's side"),
        (
            r"\b(i('m| am)|we('re| are)) (always )?(here|happy|glad) to (help|assist)\b",
            "switched to the assistant's side",
        ),
        (r"\byour (friendly |helpful )?(virtual )?assistant\b", "switched to the assistant's side"),
        (r"\bis there anything else i can (help|do|assist)\b", "switched to the assistant's side"),
    ]
]
# One pass over the text for the common case (no break); the list, in order, names the reason when it hits.
_ANY_BREAK = re.compile("|".join(f"(?:{pattern.pattern})" for pattern, _ in _BREAKS), re.I)


@lru_cache(maxsize=4096)  # the user checks its message, and the fidelity audit checks it again
def character_break_reason(text: str) -> str | None:
    """Why `text` is not something the persona would send, or None when it is fine."""
    stripped = text.strip()
    if not stripped:
        return "sent an empty message"
    if END in stripped and stripped != END:
        return f"put the end sentinel {END} inside other text"
    if not _ANY_BREAK.search(stripped):
        return None
    for pattern, reason in _BREAKS:
        if pattern.search(stripped):
            return reason
    return None
