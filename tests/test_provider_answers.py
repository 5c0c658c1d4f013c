"""Answers a provider endpoint can give that are neither a good answer nor a plain error, through both
providers and both of their paths (the wire path, `_wire`; the SDK's, `_sdkpost`): each is a ProviderError
of the kind a retry can or cannot fix, said in words (never a Python exception's text alone), the same on
both paths, never a crash, a hang or a success made of garbage (providers/_answer.py)."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from typing import Any

import pytest

from simulator.providers._http import _longest
from simulator.providers.base import ModelResponse, ProviderError
from simulator.providers.ratelimits import rate_limits_from_headers
from tests.support.raw_answer import After, Writer, answer
from tests.support.two_paths import APIS, GOOD, both_paths, same_failure


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")


def _json(value: Any, *headers: bytes) -> bytes:
    return answer(b"200 OK", b"Content-Type: application/json", *headers, body=json.dumps(value).encode())


# --- a status that is neither an answer nor an error: permanent, and where a redirect points


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("status", "location", "fix"),
    [
        (b"301 Moved Permanently", b"https://api.example.com{path}", "set base_url to https://api.example.com{base}"),
        (b"308 Permanent Redirect", b"https://api.example.com{path}", "set base_url to https://api.example.com{base}"),
        (b"302 Found", b"/login", "a redirect to http://127.0.0.1:"),
        (b"307 Temporary Redirect", None, "neither an answer nor an error"),
        (b"304 Not Modified", None, "neither an answer nor an error"),
        (b"099 Odd", None, "neither an answer nor an error"),
    ],
)  # fmt: skip
async def test_a_status_that_is_neither_an_answer_nor_an_error_is_permanent_and_not_followed(
    api: str, status: bytes, location: bytes | None, fix: str
) -> None:
    path, base = (b"/v1/chat/completions", "/v1") if api == "openai" else (b"/v1/messages", "")
    headers = [b"Location: " + location.replace(b"{path}", path)] if location else []
    error = same_failure(await both_paths(api, answer(status, *headers)))
    assert error.kind == "permanent" and error.status == int(status[:3])
    assert f"answered {int(status[:3])}" in str(error)
    assert fix.replace("{base}", base) in str(error)


# --- a 2xx whose body is not JSON: what came, in words


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>", "is not JSON"),
        (b"", "is empty"),
        (b'{"choices": "caf\xe9"}', "is not JSON (not UTF-8 text)"),
        (b'{"choices": []} trailing', "more than one JSON value"),
        (b"[" * 2000 + b"]" * 2000, "nested more than"),
        (b'{"usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}", "5,000 digits"),
        (b'{"usage": {"prompt_tokens": NaN}}', "NaN"),
        (b'{"id": "cut", "content": [', "is not JSON"),
    ],
    ids=["web page", "empty", "not utf-8", "trailing text", "too deep", "huge number", "NaN", "cut short"],
)
async def test_a_2xx_that_is_not_json_says_what_came(api: str, body: bytes, said: str) -> None:
    error = same_failure(await both_paths(api, answer(b"200 OK", b"Content-Type: text/html", body=body)))
    assert error.kind == "transient"  # as before: a server that cut one answer short may not cut the next
    assert said in str(error) and "check that base_url points at a server that speaks this API" in str(error)
    assert f"(200 OK, text/html, {len(body):,} byte" in str(error)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        (b"br", b"\x1b\x03\x00\xf8\xa5\x92\x8e\x15"),
        (b"zstd", b"\x28\xb5\x2f\xfd\x00\x58\x01\x00\x00"),
        (b"x-compress-9", b"\x1f\x9d\x90{\x00"),
        (b"gzip, gzip", gzip.compress(gzip.compress(b"{}", mtime=0), mtime=0)),
    ],
    ids=["br", "zstd", "unknown", "two layers"],
)
async def test_an_answer_in_an_encoding_not_asked_for_is_permanent_on_both_paths(
    api: str, encoding: bytes, body: bytes
) -> None:
    error = same_failure(
        await both_paths(api, answer(b"200 OK", b"Content-Encoding: " + encoding, body=body))
    )
    assert error.kind == "permanent"
    assert f"is in the {encoding.decode()} content encoding, which the request did not ask for" in str(error)


# --- JSON that is not the API's answer: a ProviderError, never a crash or an empty success

SHAPES = {
    "a list": ([1, 2], [1, 2]),
    "null": (None, None),
    "text": ("hi", "hi"),
    "an empty object": ({}, {}),
    "choices/content not a list": ({"choices": 5}, {"content": 5}),
    "items that are not objects": ({"choices": ["a"]}, {"content": ["a"]}),
    "message/content block as text": ({"choices": [{"message": "hi"}]}, {"content": "hi"}),
    "text that is a number": (
        {"choices": [{"message": {"content": 5}}]},
        {"content": [{"type": "text", "text": 5}]},
    ),
    "a tool call that is not an object": (
        {"choices": [{"message": {"content": "", "tool_calls": ["x"]}}]},
        {"content": [{"type": "tool_use", "id": "a", "name": "f", "input": [1, 2]}]},
    ),
}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_json_that_is_not_the_apis_answer_is_a_provider_error(api: str, shape: str) -> None:
    value = SHAPES[shape][0 if api == "openai" else 1]
    error = same_failure(await both_paths(api, _json(value)))
    assert error.kind == "transient"
    kind = "a Chat Completions answer" if api == "openai" else "a Messages API answer"
    assert f"is JSON but not {kind}: {json.dumps(value, separators=(',', ':'))[:40]}" in str(error)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"type": "server_error", "message": "upstream overloaded"}, "transient"),
        ({"code": 502, "message": "upstream overloaded"}, "transient"),
        ({"code": 429, "message": "upstream overloaded"}, "rate_limit"),
        ({"type": "invalid_request_error", "message": "upstream overloaded"}, "permanent"),
    ],
)
async def test_an_error_sent_with_200_is_classified_by_its_type(api: str, error: Any, kind: str) -> None:
    failure = same_failure(await both_paths(api, _json({"type": "error", "error": error})))
    assert failure.kind == kind
    assert "sent an error in place of an answer (200): upstream overloaded" in str(failure)


async def test_tool_arguments_sent_as_an_object_are_read_as_the_arguments() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": {"city": "Oslo"}}}
    body = {"choices": [{"message": {"content": None, "tool_calls": [call]}, "finish_reason": "tool_calls"}]}
    for response in await both_paths("openai", _json(body)):
        assert isinstance(response, ModelResponse)
        assert [(c.name, c.arguments, c.id) for c in response.tool_calls] == [
            ("lookup", {"city": "Oslo"}, "c1")
        ]


# --- an error status: what its body said, in words, not the SDK's "Error code: 502"


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("status", "body", "kind", "said"),
    [
        (b"502 Bad Gateway", b"<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>", "transient",
         "answered 502: 502 Bad Gateway nginx"),
        (b"500 Internal Server Error", b"", "transient", "answered 500 Internal Server Error"),
        (b"503 Service Unavailable", b'{"detail": "warming up"}', "transient", "answered 503: warming up"),
        (b"429 Too Many Requests", b'{"error": {"message": "slow down", "type": "rate_limit_error"}}',
         "rate_limit", "answered 429: slow down"),
        (b"429 Too Many Requests", b"<html><body>slow down</body></html>", "rate_limit", "answered 429: slow down"),
        (b"404 Not Found", b"no such route", "permanent", "answered 404: no such route; check the model name"),
    ],
)  # fmt: skip
async def test_an_error_status_says_what_its_body_said(
    api: str, status: bytes, body: bytes, kind: str, said: str
) -> None:
    error = same_failure(await both_paths(api, answer(status, body=body)))
    assert (error.kind, error.status) == (kind, int(status[:3]))
    assert said in str(error)


# --- a broken connection: said as broken on both paths (the SDK path called it a timeout)


async def _headers_then_close(writer: Any) -> None:
    writer.write(answer(b"200 OK", b"Content-Length: 100", length=False))
    await writer.drain()


async def _chunk_then_close(writer: Any) -> None:
    writer.write(answer(b"200 OK", b"Transfer-Encoding: chunked", length=False) + b'5\r\n{"cho')
    await writer.drain()


async def _nothing(writer: Any) -> None:
    return None


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("raw", "after", "words"),
    [
        (_nothing, "close", "broke before the whole answer came"),
        (_nothing, "reset", "broke before the whole answer came"),
        (_headers_then_close, "close", "broke before the whole answer came"),
        (_chunk_then_close, "close", "broke before the whole answer came"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "close", "was not a whole HTTP/1.1 answer"),
        (answer(b"200 OK", b"Content-Length: 2", b"Transfer-Encoding: chunked", length=False), "close",
         "was not a whole HTTP/1.1 answer"),
    ],
    ids=["closed at once", "reset at once", "closed after the head", "closed in a chunk", "not http", "two lengths"],
)  # fmt: skip
async def test_a_broken_connection_is_said_as_broken_on_both_paths(
    api: str, raw: bytes | Writer, after: After, words: str
) -> None:
    results = await both_paths(api, raw, after, timeout_s=10)
    for error in results:
        assert isinstance(error, ProviderError) and error.kind == "transient"
        assert str(error).startswith(
            ("the connection to http://127.0.0.1:", "the answer from http://127.0.0.1:")
        )
        assert words in str(error) and "did not answer within" not in str(error)


@pytest.mark.parametrize("api", APIS)
async def test_a_body_that_drips_is_cut_at_timeout_s_on_both_paths(api: str) -> None:
    async def drip(writer: Any) -> None:
        writer.write(answer(b"200 OK", b"Content-Length: 1000", length=False))
        for _ in range(1000):
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.05)

    started = time.monotonic()
    for error in await both_paths(api, drip, timeout_s=0.5):
        assert isinstance(error, ProviderError) and error.kind == "transient"
        assert "did not answer within 0.5 s" in str(error)
    assert time.monotonic() - started < 20  # the drip would take 50 s a path


# --- what the SDK path's parser reads, the wire path reads too


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "shape",
    ["folded header", "folded header with a tab", "lines ending in LF alone", "spaces after a chunk size"],
)
async def test_answers_the_sdk_path_reads_are_read_on_the_wire_path(api: str, shape: str) -> None:
    body = json.dumps(GOOD[api]).encode()
    if shape.startswith("folded"):
        fold = b"X-Note: first\r\n\tsecond" if "tab" in shape else b"X-Note: first\r\n   second"
        raw = answer(b"200 OK", b"Content-Type: application/json", fold, body=body)
    elif shape.startswith("lines"):
        raw = answer(b"200 OK", b"Content-Type: application/json", body=body).replace(b"\r\n", b"\n")
    else:
        raw = answer(b"200 OK", b"Transfer-Encoding: chunked", length=False)
        raw += b"%x  \r\n%s\r\n0\r\n\r\n" % (len(body), body)
    for response in await both_paths(api, raw):
        assert isinstance(response, ModelResponse) and response.text == "fine", response


# --- a header sent twice (a proxy adding its own): read the same on every path, the cautious value kept


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("values", "wait"),
    [
        ([b"5", b"7"], 7.0),
        ([b"7", b"nonsense"], 7.0),
        ([b"1", b"Sun, 01 Jan 2090 00:00:00 GMT"], None),
        ([b"-3", b"2"], 2.0),
    ],
)
async def test_a_retry_after_sent_twice_keeps_the_longer_wait(
    api: str, values: list[bytes], wait: float | None
) -> None:
    headers = [b"Retry-After: " + value for value in values]
    error = same_failure(await both_paths(api, answer(b"429 Too Many Requests", *headers, body=b"{}")))
    assert error.kind == "rate_limit"
    if wait is None:
        assert error.retry_after is not None and error.retry_after > 365 * 86400  # the date, years away
    else:
        assert error.retry_after == wait


@pytest.mark.parametrize("api", APIS)
async def test_rate_limit_headers_sent_twice_keep_the_tighter_budget_on_success_and_on_429(api: str) -> None:
    names = (
        (b"x-ratelimit-remaining-requests", b"x-ratelimit-limit-requests", b"x-ratelimit-reset-requests")
        if api == "openai"
        else (b"anthropic-ratelimit-requests-remaining", b"anthropic-ratelimit-requests-limit", b"")
    )
    twice = [names[0] + b": 9", names[0] + b": 3", names[1] + b": 100", names[1] + b": 50"]
    if names[2]:
        twice += [names[2] + b": 1s", names[2] + b": 6m0s"]
    for raw in (
        _json(GOOD[api], *twice),
        answer(b"429 Too Many Requests", *twice, b"Retry-After: 1", body=b"{}"),
    ):
        for result in await both_paths(api, raw):
            limits = result.rate_limits
            assert limits is not None and limits.requests is not None, result
            assert (limits.requests.remaining, limits.requests.limit) == (3.0, 50.0)
            if names[2]:
                assert limits.requests.reset_s == 360.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("5", 5.0), ("5, 7", 7.0), ("nan", None), ("nan, 4", 4.0), ("", None), ("soon", None), ("-1", 0.0)],
)
def test_retry_after_values(value: str, seconds: float | None) -> None:
    assert _longest(value) == seconds


@pytest.mark.parametrize(
    ("headers", "remaining"),
    [
        ({"x-ratelimit-remaining-requests": "0, 9"}, 0.0),
        ({"x-ratelimit-remaining-requests": "abc, 4"}, 4.0),
        ({"x-ratelimit-remaining-requests": "12"}, 12.0),
    ],
)
def test_a_budget_sent_twice_reads_as_the_smaller(headers: dict[str, str], remaining: float) -> None:
    limits = rate_limits_from_headers(headers)
    assert limits is not None and limits.requests is not None and limits.requests.remaining == remaining
