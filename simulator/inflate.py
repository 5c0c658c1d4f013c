"""A gzip or deflate HTTP body decoded piece by piece, and taken only whole: the one home of that rule.

zlib decodes what it has and waits for more; the HTTP clients' decoders (httpx's, aiohttp's for gzip) take
what it gave when the body ends, so a body cut before its compressed stream's end (a proxy that stopped, a
server that crashed mid-write, with a Content-Length that matched what it sent) read as a shorter answer.
Here a body whose compressed stream did not reach its end marker (zlib's `eof`), or goes on after it, is a
`DamagedBody`, as a body zlib cannot read is: the provider pool, the SDK path, the bots' HTTP channels and
the collector's OTLP receiver decode through this, each saying the error its own way.
"""

from __future__ import annotations

__all__ = ["ACCEPT_ENCODING", "ENCODINGS", "DamagedBody", "Inflate"]

import zlib
from collections.abc import Iterator
from typing import Any

from simulator.plural import noun

# The content encodings decoded here, and the Accept-Encoding every request read through this sends (brotli
# or zstd would need a package the machine may not have).
ENCODINGS = frozenset({"gzip", "x-gzip", "deflate"})
ACCEPT_ENCODING = "gzip, deflate"
# A body is decoded in pieces of at most this size, so a gzip bomb never inflates at once beyond it before
# the caller's byte cap sees it.
_PIECE = 1 << 20


class DamagedBody(ValueError):
    """A compressed body that is not one whole stream: unreadable, cut before its end, or going on after it."""


class Inflate:
    """`feed` each piece of a body as it arrives, then `end`: the decoded pieces, or DamagedBody. `what` names
    whose body it is in the error ("the answer", "the request"). An encoding not in ENCODINGS passes as it is,
    for the caller to refuse or read; an empty body is empty (there is no stream to end)."""

    def __init__(self, encoding: str, what: str) -> None:
        encoding = encoding.strip().lower()
        self._encoding = encoding if encoding in ENCODINGS else ""
        self._what = what
        self._zlib: Any = None
        self._size = 0  # the compressed bytes fed

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not self._encoding:
            if data:
                yield data
            return
        if not data:
            return
        if self._zlib is None:
            if self._encoding == "deflate":
                # RFC 9110's deflate is zlib-wrapped; some servers send it raw (aiohttp reads both, so do we).
                wbits = zlib.MAX_WBITS if data[0] & 0x0F == 8 else -zlib.MAX_WBITS
            else:
                wbits = 16 + zlib.MAX_WBITS
            self._zlib = zlib.decompressobj(wbits)
        self._size += len(data)
        try:
            piece = self._zlib.decompress(data, _PIECE)
            while True:
                if piece:
                    yield piece
                if not self._zlib.unconsumed_tail:
                    break
                piece = self._zlib.decompress(self._zlib.unconsumed_tail, _PIECE)
        except zlib.error as exc:
            raise DamagedBody(f"{self._what}'s {self._encoding} body is damaged: {exc}") from exc
        if self._zlib.eof and self._zlib.unused_data:  # failed at once: what follows is never held
            raise DamagedBody(
                f"{self._what}'s {self._encoding} body goes on after the end of its compressed data: it is "
                "not one whole stream"
            )

    def end(self) -> bytes:
        """What the decoder still holds, once the body has ended; DamagedBody when its stream did not."""
        if self._zlib is None:
            return b""
        tail: bytes = self._zlib.flush()
        if not self._zlib.eof:
            size = f"{self._size:,} {noun(self._size, 'byte')}"
            raise DamagedBody(
                f"{self._what}'s {self._encoding} body ends before its compressed data does (after {size}): "
                "it was cut short"
            )
        return tail
