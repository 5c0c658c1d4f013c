"""One HTTP exchange with a bot, bounded in total time and in bytes.

A per-read timeout does not stop a bot that trickles one byte every half second, nor an endless chunked
stream or a gzip bomb: the whole answer gets one deadline, and its size is counted after decompression and
cut at a cap. Every adapter that reads from the bot under test (its turns, its state) reads through here,
so each of those ends as a recorded bot error within the stated time and memory.
"""

from __future__ import annotations

__all__ = ["read_bounded", "read_bounded_aiohttp"]

import asyncio
from typing import Any

import httpx

from simulator.bots.base import BotError


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
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream(method, url, **request) as response:
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        raise _too_long(who, max_bytes)
                    chunks.append(chunk)
                return response.status_code, b"".join(chunks)
    except TimeoutError as exc:
        raise _late(who, timeout_s, size) from exc


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
    the same deadline, cap (after decompression: aiohttp inflates as it reads) and errors; aiohttp's own
    errors are left to the caller."""
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async with session.request(method, url, **request) as response:
                async for chunk in response.content.iter_chunked(64 * 1024):
                    size += len(chunk)
                    if size > max_bytes:
                        raise _too_long(who, max_bytes)
                    chunks.append(chunk)
                return int(response.status), b"".join(chunks)
    except TimeoutError as exc:
        raise _late(who, timeout_s, size) from exc


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
