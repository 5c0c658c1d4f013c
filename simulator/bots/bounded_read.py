"""One HTTP exchange with a bot, bounded in total time and in bytes.

A per-read timeout does not stop a bot that trickles one byte every half second, nor an endless chunked
stream or a gzip bomb: the whole answer gets one deadline, and its size is counted after decompression and
cut at a cap; a compressed answer that is not one whole stream (cut before its end, or going on after it) is
a bot error, never a shorter reply. Every adapter that reads from the bot under test (its turns, its state)
reads through here, so each of those ends as a recorded bot error within the stated time and memory.
"""

from __future__ import annotations

__all__ = ["read_bounded", "read_bounded_aiohttp"]

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx

from simulator.bots.base import BotError
from simulator.inflate import ACCEPT_ENCODING, ENCODINGS, DamagedBody, Inflate
from simulator.visible import visible

# The answer is decoded here (`_Body`): the request asks for what `Inflate` decodes, and nothing else.
_ASKED = {"Accept-Encoding": ACCEPT_ENCODING}


async def read_bounded(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    timeout_s: float | None,
    max_bytes: int,
    who: str,
    **request: Any,
) -> tuple[int, bytes]:
    """(status, body) of one request; BotError `timeout` past `timeout_s` (None: no deadline) for the whole answer, and
    `invalid_reply` past `max_bytes`. `who` is who answers, in the errors ("the bot", "bot.state_url").
    httpx's own errors are left to the caller, which knows how to explain them."""
    body = _Body(who, max_bytes)
    headers = {**(request.pop("headers", None) or {}), **_ASKED}
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream(method, url, headers=headers, **request) as response:
                await body.read(response.aiter_raw(), response.headers.get("content-encoding", ""))
                return response.status_code, body.joined()
    except TimeoutError as exc:
        raise _late(who, timeout_s, body.size) from exc


async def read_bounded_aiohttp(
    session: Any,
    method: str,
    url: str,
    *,
    timeout_s: float | None,
    max_bytes: int,
    who: str,
    **request: Any,
) -> tuple[int, bytes]:
    """`read_bounded` on an aiohttp session (the whatsapp adapter's: a fifth of httpx's CPU a request), with
    the same deadline, cap, decoding and errors; aiohttp's own errors are left to the caller."""
    body = _Body(who, max_bytes)
    headers = {**(request.pop("headers", None) or {}), **_ASKED}
    try:
        async with asyncio.timeout(timeout_s):
            async with session.request(
                method, url, headers=headers, auto_decompress=False, **request
            ) as response:
                encoding = response.headers.get("Content-Encoding", "")
                await body.read(response.content.iter_chunked(64 * 1024), encoding)
                return int(response.status), body.joined()
    except TimeoutError as exc:
        raise _late(who, timeout_s, body.size) from exc


class _Body:
    """An answer's body as it arrives, decoded here (`simulator.inflate`: the HTTP clients' own decoders
    take a gzip body cut short as its decoded prefix, a shorter reply) and counted after decoding."""

    def __init__(self, who: str, max_bytes: int) -> None:
        self._who, self._max_bytes = who, max_bytes
        self._chunks: list[bytes] = []
        self.size = 0  # decoded bytes so far

    async def read(self, pieces: AsyncIterator[bytes], encoding: str) -> None:
        shown = encoding.strip().lower()
        if shown not in ENCODINGS and shown not in ("", "identity"):
            raise BotError(
                "invalid_reply",
                f"{self._who} answered in the {visible(shown[:40], keep_newlines=False)} content encoding, "
                "which the request did not ask for (it accepts gzip and deflate) and which cannot be read",
            )
        inflate = Inflate(encoding, self._who)
        try:
            async for data in pieces:
                for chunk in inflate.feed(data):
                    self._add(chunk)
            self._add(inflate.end())
        except DamagedBody as exc:
            raise BotError("connection", f"{exc}; the answer is not used") from exc

    def _add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self._max_bytes:
            raise _too_long(self._who, self._max_bytes)
        self._chunks.append(chunk)

    def joined(self) -> bytes:
        return b"".join(self._chunks)


def _too_long(who: str, max_bytes: int) -> BotError:
    return BotError(
        "invalid_reply",
        f"{who}'s answer is longer than {max_bytes:,} bytes (after decompression); it was cut there "
        "(bot.max_reply_bytes)",
    )


def _late(who: str, timeout_s: float | None, size: int) -> BotError:
    return BotError(
        "timeout",
        f"{who} did not answer within {timeout_s or 0:g} s (bot.timeout_s, the whole answer's deadline; "
        f"{size:,} bytes had arrived)",
    )
