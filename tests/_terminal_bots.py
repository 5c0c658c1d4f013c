"""A python bot whose every reply carries terminal control sequences (tests/test_terminal_output.py)."""

from __future__ import annotations

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\rPASS\x9b31m\u202eevil\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"


class HostileBot:
    def send(self, text: str) -> str:
        return f"reply {HOSTILE}"


def make_bot() -> HostileBot:
    return HostileBot()
