"""A streamed answer read as server-sent events, for both streaming providers: what the SSE standard says to
ignore is ignored, and everything else that is wrong with the stream is a classified error that names it.

The events are read here, not by the SDKs' stream iterators, because the openai SDK dispatches an event
that has no data (`event: ping` and a blank line, valid SSE) and fails on it with Python's JSONDecodeError;
the anthropic SDK skips it, as the standard says. The SDK still sends the request, raises its own errors for
a 4xx or 5xx, and owns the connection; only the body's bytes are read here.

Retries are decided by the class of the fault: a broken connection may not recur (transient, retried
within the provider's bounds); a stream that arrived whole at the HTTP level but is not a whole answer
(malformed, or ending before its end marker) comes the same way from the same server again, so it is
permanent; an error event says its own class (overloaded and server errors transient, the rest permanent).
"""

from __future__ import annotations

__all__ = ["in_stream_error", "read_json", "sse_events", "stream_fault", "stream_tokens", "unfinished"]

import json
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

from simulator.providers._answer import BadCount, usage_counts
from simulator.providers._httppool import NetworkError
from simulator.providers._sdkpost import _capped
from simulator.providers.base import ProviderError

# The advice on every stream fault that a retry cannot fix.
_FIX = "check that base_url points at a server that streams this API's format, or turn streaming off (stream: false)"
# In-stream error types (Anthropic's `error.type`, OpenAI's `error.type` or `code`) that a later call may not
# meet: the server says it is overloaded or failed on its side.
_TRANSIENT_TYPES = frozenset(
    {"overloaded_error", "api_error", "server_error", "internal_error", "timeout_error"}
)
_RATE_LIMIT_TYPES = frozenset({"rate_limit_error", "rate_limit_exceeded", "tokens", "requests"})


class SseEvent(NamedTuple):
    """One dispatched event: its type (None when it named none), its data lines joined by newlines, and
    whether a blank line ended it (`whole`); only the body's last event can be left open, by a cut."""

    event: str | None
    data: str
    whole: bool = True


def stream_fault(who: str, what: str) -> ProviderError:
    """A stream that came whole over HTTP but is not a whole answer: permanent, with what to check."""
    return ProviderError("permanent", f"the streamed answer from {who} {what}; it is not used; {_FIX}")


def stream_tokens(usage: object, fields: tuple[str, ...], who: str, where: str = "usage") -> list[int]:
    """`_answer.usage_counts` of a streamed answer's usage: a count that is not one is a stream fault."""
    try:
        return usage_counts(usage, fields, where)
    except BadCount as exc:
        raise stream_fault(who, f"has a bad token count: {exc}") from None


def unfinished(who: str, marker: str, *, events: int, chars: int, how: str, cut: bool) -> ProviderError:
    """A stream that ended before the API's end marker (`marker`): the answer may be cut short, so it is an
    error, never an answer; `how` it ended, and whether inside an event (`cut`)."""
    where = "in the middle of an event (no blank line after its last line)" if cut else how
    return stream_fault(
        who,
        f"stopped {where} without {marker}, after {events} events and {chars} characters of text: "
        "the answer may be cut short",
    )


async def sse_events(chunks: AsyncIterator[bytes], who: str) -> AsyncIterator[SseEvent]:
    """The events of an SSE body as the standard reads them: lines end at CR, LF or CRLF; a line starting
    with ':' is a comment; fields other than `event` and `data` are ignored; an event without data (or with
    empty data lines only) is not dispatched. A body that ends inside an event (lines after the last blank line) yields that event last,
    not `whole`, where the standard's reader would drop it without a word: the caller decides whether the
    answer was over by then. A connection that breaks is a transient error that says so; the body is capped
    at the providers' byte cap."""
    decoder = _Lines()
    event: str | None = None
    data: list[str] = []
    try:
        async for chunk in _capped(chunks):
            for line in decoder.feed(chunk):
                if line:
                    event, data = _field(line, event, data)
                    continue
                if any(data):  # no data, or only empty data lines: nothing to read (the anthropic SDK's rule)
                    yield SseEvent(event, "\n".join(data))
                event, data = None, []
    except (ProviderError, NetworkError, GeneratorExit):  # the pool's own words (a body cut short, decoded)
        raise
    except Exception as exc:
        if "Timeout" in type(exc).__name__ or isinstance(exc, TimeoutError):
            raise  # the provider's classifier names the timeout and the setting
        raise ProviderError(
            "transient",
            f"the connection to {who} broke in the middle of the streamed answer ({type(exc).__name__}: "
            f"{exc or 'no detail'}); a network cut may not recur, so it is retried; if it keeps happening, "
            "look for a proxy or load balancer that cuts long responses",
        ) from exc
    if decoder.rest:
        event, data = _field(decoder.rest.decode("utf-8", "replace"), event, data)
    if any(data):
        yield SseEvent(event, "\n".join(data), whole=False)


def _field(line: str, event: str | None, data: list[str]) -> tuple[str | None, list[str]]:
    """The event being built, after one non-blank line of it."""
    if line.startswith(":"):
        return event, data  # a comment (servers send them as keep-alives)
    name, _, value = line.partition(":")
    value = value.removeprefix(" ")
    if name == "event":
        return value or None, data
    if name == "data":
        return event, [*data, value]
    return event, data  # id, retry and unknown fields: nothing a single answer needs


class _Lines:
    """Bytes to text lines, ending at CR, LF or CRLF (a CRLF split across two chunks is one end)."""

    def __init__(self) -> None:
        self.rest = b""
        self._after_cr = False
        self._first = True

    def feed(self, chunk: bytes) -> list[str]:
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        text = self.rest + chunk
        if self._first and text:
            text = text.removeprefix(b"\xef\xbb\xbf")  # the standard strips one leading byte order mark
            self._first = False
        parts = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self.rest = parts.pop()
        return [part.decode("utf-8", "replace") for part in parts]


def read_json(data: str, who: str, index: int) -> dict[str, Any]:
    """An event's data as the JSON object the API sends in each event, or a permanent error naming it."""
    try:
        value = json.loads(data)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise stream_fault(
            who, f"has an event (number {index}) whose data is not a JSON object: {data[:200]!r}"
        )
    return value


def in_stream_error(
    body: dict[str, Any], who: str, where: str = "in the middle of the streamed answer"
) -> ProviderError:
    """An error the server sent inside the stream (`{"error": {"type", "message"}}` in both APIs), or `where`
    else it sent one (in place of a 200's answer), classified by its type or code: a rate limit waits, an
    overload or a failure on the server's side is retried, anything else (a bad request, a refused key)
    would come back the same and is not."""
    error = body.get("error")
    error = error if isinstance(error, dict) else {"message": str(error)}
    kind = str(error.get("type") or error.get("code") or "")
    message = str(error.get("message") or "no message")
    said = f"{who} sent an error {where}: {message}" + (f" ({kind})" if kind else "")
    if kind in _RATE_LIMIT_TYPES or kind == "429":
        return ProviderError("rate_limit", said, status=429)
    if kind in _TRANSIENT_TYPES or (len(kind) == 3 and kind.isdigit() and kind >= "500"):
        return ProviderError("transient", said, status=529 if kind in ("overloaded_error", "529") else None)
    return ProviderError(
        "permanent", f"{said}; a retry would get the same answer; check the request and the model"
    )
