"""Issue 43, class 3: JSON nested deeper than anything real is refused at every door by one bounded reader
(`simulator/jsonbounds.py`), with one line naming what was read; never a RecursionError, a traceback or an
HTTP 500, whether it is 100,000 levels (the parser's own limit) or a few hundred (parses, but breaks every
later step). Doors tested: collect's OTLP JSON, an http bot's answer and its tool-call part, a python bot's
parts, a `state_url` answer, the desk's editor, and the WhatsApp local Graph API (tests/test_whatsapp_graph_calls.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.bots.base import BotError, parts_from_json
from simulator.bots.http_bot import HttpSession
from simulator.collect.decode import BodyError, decode_request
from simulator.jsonbounds import MAX_JSON_DEPTH, JSONRefused, check_depth, loads_bounded
from tests.desk_support import csrf, desk_client, make_desk_folders


def _lists(levels: int) -> str:
    return "[" * levels + "]" * levels


def _objects(levels: int, key: str = "a") -> str:
    return f'{{"{key}": ' * levels + "1" + "}" * levels


DEEP = {
    "100,000 lists": _lists(100_000),
    "500 lists": _lists(500),
    "just past the bound": _lists(MAX_JSON_DEPTH + 1),
    "200 objects": _objects(200),
    "mixed": '{"x": [' * 100 + "0" + "]}" * 100,
    "deep in a long flat list": "[" + "1," * 10_000 + _lists(300) + "]",
}


@pytest.mark.parametrize("case", sorted(DEEP))
def test_deep_json_is_refused_in_one_line(case: str) -> None:
    with pytest.raises(JSONRefused) as caught:
        loads_bounded(DEEP[case], "the body")
    assert str(caught.value).startswith("the body is nested more than") and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "text", [_lists(MAX_JSON_DEPTH), _objects(MAX_JSON_DEPTH - 1), '{"a": [1, {"b": "[[[[[[[[[[["}]}']
)
def test_json_within_the_bound_is_read(text: str) -> None:
    """At the bound, and brackets inside strings do not count."""
    assert loads_bounded(text, "x") is not None


@pytest.mark.timeout(120)  # a hang, not a slow machine, fails it: no timed assertion (noisy under load)
def test_cycles_and_shared_values_in_python_data() -> None:
    cycle: list[Any] = []
    cycle.append({"again": cycle})
    with pytest.raises(JSONRefused, match="contains itself"):
        check_depth(cycle, "the state")
    shared = [1, 2]
    wide: Any = shared
    for _ in range(40):  # 2^40 paths, 40 distinct values: visited once each per level
        wide = [wide, wide]
    check_depth(wide, "the state")  # per path, 2^40 visits: the test's timeout would end it


@pytest.mark.parametrize("case", sorted(set(DEEP) - {"just past the bound"}))
def test_collect_answers_400_naming_the_depth(case: str) -> None:
    """Collect's bound leaves room for the span decoder's own, per attribute (tests/test_traces_malformed.py)."""
    body = ('{"resourceSpans": [' + DEEP[case] + "]}").encode()
    with pytest.raises(BodyError) as caught:
        decode_request(body, "application/json", "", "traces", 10_000_000)
    assert caught.value.status == 400 and "nested more than" in str(caught.value)


async def _answering(body: bytes) -> AsyncIterator[str]:
    """A loopback server answering every request with `body` as JSON."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


ANSWERS = {
    "deep answer": DEEP["500 lists"],
    "deep messages": '{"messages": ' + _lists(1000) + "}",
    "deep tool-call part": '{"parts": [{"type": "tool_call", "name": "t", "arguments": '
    + _objects(300)
    + "}]}",
    "very deep tool arguments": '{"parts": [{"type": "tool_call", "name": "t", "arguments": {"a": '
    + _lists(100_000)
    + "}}]}",
}


@pytest.mark.parametrize("case", sorted(ANSWERS))
async def test_an_http_bots_deep_answer_is_a_recorded_bot_error(case: str) -> None:
    async for url in _answering(ANSWERS[case].encode()):
        async with httpx.AsyncClient(timeout=5.0) as client:
            session = HttpSession(client, f"{url}/chat", "c#0", timeout_s=5, max_bytes=2_000_000)
            with pytest.raises(BotError) as caught:
                await session.send("hello", 1)
    assert caught.value.kind == "invalid_reply" and "nested more than" in str(caught.value)


def test_a_python_bots_deep_or_cyclic_parts_are_a_bot_error() -> None:
    deep: Any = "x"
    for _ in range(2000):
        deep = {"a": deep}
    cyclic: dict[str, Any] = {"type": "tool_call", "name": "t"}
    cyclic["arguments"] = {"self": cyclic}
    for parts in ([{"type": "tool_call", "name": "t", "arguments": deep}], [cyclic]):
        with pytest.raises(BotError) as caught:
            parts_from_json(parts, "the reply's parts")
        assert caught.value.kind == "invalid_reply" and "nested more than" in str(caught.value)


@pytest.mark.parametrize("case", ["100,000 lists", "200 objects"])
def test_the_desk_editor_answers_deep_json_with_400(tmp_path: Path, case: str) -> None:
    client = desk_client(make_desk_folders(tmp_path))
    response = client.post(
        "/edit/validate",
        content=DEEP[case].encode(),
        headers={"X-CSRF-Token": csrf(client), "Content-Type": "application/json"},
    )
    assert response.status_code == 400 and "nested more than" in response.text


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.integers() | st.text(max_size=5),
        lambda c: st.lists(c) | st.dictionaries(st.text(max_size=3), c),
        max_leaves=60,
    )
)
def test_fuzz_loads_bounded_reads_or_refuses_in_one_line(value: Any) -> None:
    """Any JSON: read back equal, or refused with one line; never another exception."""
    import json

    text = json.dumps(value)
    try:
        assert loads_bounded(text, "fuzz") == value
    except JSONRefused as exc:
        assert "\n" not in str(exc)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.text(alphabet='[]{}":,1 a', max_size=300))
def test_fuzz_loads_bounded_on_arbitrary_bytes(data: bytes | str) -> None:
    try:
        loads_bounded(data, "fuzz")
    except JSONRefused as exc:
        assert "\n" not in str(exc)


STATE_ANSWERS = {
    "deep json": (DEEP["500 lists"], "nested more than"),
    "200 html": ("<html><body>OK</body></html>", "not JSON"),
    "a json list": ("[1, 2]", "a JSON object is expected"),
}


@pytest.mark.parametrize("case", sorted(STATE_ANSWERS))
async def test_a_state_url_answer_that_is_not_a_json_object_is_a_bot_error(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 200 that is not a JSON object (HTML, a list, JSON too deep) is said so, never taken as no state."""
    from simulator.bots.whatsapp import WhatsAppBotFactory
    from simulator.config.bots.whatsapp import WhatsAppBotConfig
    from simulator.record.redact import forget_secrets
    from tests._whatsapp_bots import PlantedBot, serve, text

    for key, value in {
        "WHATSAPP_APP_SECRET": "app-secret-123",
        "WHATSAPP_ACCESS_TOKEN": "access-token-456",
        "WHATSAPP_VERIFY_TOKEN": "verify-token-789",
    }.items():
        monkeypatch.setenv(key, value)
    answer, phrase = STATE_ANSWERS[case]
    bot = PlantedBot(lambda message, bot: [(0.0, text("Noted."))])
    stop = await serve(bot)
    try:
        async for url in _answering(answer.encode()):
            config = WhatsAppBotConfig(
                webhook_url=bot.url,
                verify=False,
                quiet_s=0.2,
                timeout_s=3,
                state_url=f"{url}/state/{{wa_id}}",
            )
            factory = WhatsAppBotFactory(config, tmp_path)
            bot.api_url = factory.graph.url
            await factory.start()
            try:
                session = await factory.open("run/state#0/1")
                await session.send("hello", 0)
                with pytest.raises(BotError) as caught:
                    await session.final_state()
            finally:
                await factory.aclose()
            assert caught.value.kind == "invalid_reply" and "bot.state_url" in str(caught.value)
            assert phrase in str(caught.value)
    finally:
        await stop()
        forget_secrets()
