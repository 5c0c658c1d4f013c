"""A raw HTTP/1.1 server that answers every POST with the exact SSE bytes a test gives, then ends the body
cleanly (the chunked terminator) or cuts the connection: for the truncations and protocol faults a real
server or proxy produces, which the fake LLM server (well-formed by design) never sends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, Literal

End = Literal["end", "close"]


class RawSse:
    """`async with RawSse(chunks, end) as server:` serves `chunks` (each sent as one HTTP chunk) to every
    request at `server.url`; `server.requests` counts them (a retried call is seen twice)."""

    def __init__(self, chunks: Sequence[bytes | str], end: End = "end") -> None:
        self.chunks = [c.encode() if isinstance(c, str) else c for c in chunks]
        self.end = end
        self.requests = 0
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> RawSse:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        length = next(
            (
                int(line.split(":", 1)[1])
                for line in head.split("\r\n")
                if line.lower().startswith("content-length")
            ),
            0,
        )
        await reader.readexactly(length)
        self.requests += 1
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n"
        )
        for chunk in self.chunks:
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
        if self.end == "end":
            writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()


WORDS = ["Call ", "999 ", "now: ", "this ", "may ", "be ", "a ", "heart ", "attack."]


def openai_events(words: Sequence[str] = WORDS, *, finish: bool = True, done: bool = True) -> list[str]:
    """A Chat Completions stream of `words`, with its finish_reason chunk, usage and [DONE] unless told not."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        body = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "raw",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        return f"data: {json.dumps(body)}\n\n"

    events = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": w}) for w in words]
    if finish:
        events.append(chunk({}, "stop"))
        usage = {"prompt_tokens": 5, "completion_tokens": len(words), "total_tokens": 5 + len(words)}
        events.append(f"data: {json.dumps({'id': 'c1', 'model': 'raw', 'choices': [], 'usage': usage})}\n\n")
    if done:
        events.append("data: [DONE]\n\n")
    return events


def anthropic_events(words: Sequence[str] = WORDS, *, stop: bool = True) -> list[str]:
    """A Messages stream of `words`, ending in message_delta and message_stop unless `stop` is False."""

    def event(kind: str, body: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **body})}\n\n"

    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "raw", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1},
    }  # fmt: skip
    events = [
        event("message_start", {"message": message}),
        event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    events += [
        event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": w}}) for w in words
    ]
    if stop:
        events.append(event("content_block_stop", {"index": 0}))
        events.append(
            event(
                "message_delta",
                {"delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 9}},
            )
        )
        events.append(event("message_stop", {}))
    return events
