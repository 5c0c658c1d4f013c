"""One provider call made twice against a raw server, on the wire path (the engine's own pool, `_wire`) and on
the SDK's (`_sdkpost`), for tests that both paths give the same answer or the same classified error."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from simulator.config.suite import ProviderSettings
from simulator.providers._wire import WirePost
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.openai import OpenAIProvider
from tests.conftest import close_after_test
from tests.support.raw_answer import After, RawAnswer, Writer

APIS = ["openai", "anthropic"]
GOOD: dict[str, dict[str, Any]] = {
    "openai": {"choices": [{"message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}]},
    "anthropic": {
        "content": [{"type": "text", "text": "fine"}],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}
REQUEST = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi")])
# A Python exception's name in a message: the words should say what happened instead.
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|Error code:|\(path: ")


def provider_on(api: str, url: str, path: str, timeout_s: float = 5.0) -> Any:
    """The `api`'s provider at `url`, on the wire path or (`path` "sdk") on the SDK's own transport."""
    if api == "openai":
        provider: Any = OpenAIProvider(ProviderSettings(base_url=f"{url}/v1", timeout_s=timeout_s))
    else:
        provider = AnthropicProvider(ProviderSettings(base_url=url, timeout_s=timeout_s))
    assert isinstance(provider._post, WirePost)
    if path == "sdk":
        provider._post = provider._sdk_posting()  # the SDK's own transport, as without the wire path
    return close_after_test(provider)


async def both_paths(
    api: str, raw: bytes | Writer, after: After = "keep", timeout_s: float = 5.0
) -> list[Any]:
    """The same call on the wire path, then on the SDK's: its response or its ProviderError."""
    results: list[Any] = []
    async with RawAnswer(raw, after) as server:
        for path in ("wire", "sdk"):
            provider = provider_on(api, server.url, path, timeout_s)
            try:
                results.append(await asyncio.wait_for(provider.generate(REQUEST), timeout_s + 30))
            except ProviderError as exc:
                results.append(exc)
        assert server.requests == 2  # one request each: nothing followed, nothing retried here
    return results


def same_failure(results: list[Any]) -> ProviderError:
    """The one failure both paths gave: the same kind, status and words, none of them an exception's name."""
    wire, sdk = results
    assert isinstance(wire, ProviderError) and isinstance(sdk, ProviderError), results
    assert (wire.kind, wire.status, str(wire)) == (sdk.kind, sdk.status, str(sdk))
    assert not _EXCEPTION.search(str(wire)), str(wire)
    return wire
