"""A loopback port taken by the test itself, for the tests of what a server says when its port is taken."""

from __future__ import annotations

__all__ = ["held_port"]

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def held_port() -> Iterator[int]:
    """A loopback port another program (this test) listens on."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]
