"""The access token of a server bound beyond loopback (the review desk's, the collector's) is a secret the
process knows, like a provider's key: a trace, a label, a log line or a traceback that quotes it, in any of
its forms, is written with `[redacted]` in its place. Only the line that hands a new token to whoever started
the server shows it (tests/test_serve.py and the collect tests check that line)."""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Iterator

import pytest

from simulator.commands.collect import TOKEN_ENV as COLLECT_TOKEN
from simulator.commands.serve import TOKEN_ENV as DESK_TOKEN
from simulator.record.redact import contains_secret, forget_secrets, redact
from simulator.serve.config import access_token
from simulator.visible import terminal_log_handler

GIVEN = "given-token-Zq81-long-enough"


@pytest.fixture(autouse=True)
def _no_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


@pytest.mark.parametrize("variable", [COLLECT_TOKEN, DESK_TOKEN])
@pytest.mark.parametrize("given", [True, False], ids=["from the environment", "made at start"])
@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::"])
def test_a_servers_token_is_redacted_wherever_it_is_written(
    variable: str, given: bool, host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if given:
        monkeypatch.setenv(variable, GIVEN)
    else:
        monkeypatch.delenv(variable, raising=False)
    token = access_token(host, variable)
    assert token is not None and (token == GIVEN) == given
    quoted = {
        "attributes": {"url.full": f"http://desk:8000/runs?token={token}", "auth": f"token {token}"},
        "note": base64.b64encode(token.encode()).decode(),  # another encoding of it
    }
    assert contains_secret(json.dumps(quoted))
    written = json.dumps(redact(quoted))
    assert token not in written and base64.b64encode(token.encode()).decode() not in written
    # A server's own log line (uvicorn's, through visible, cleaned as the commands clean it).
    stream = io.StringIO()
    logger = logging.getLogger(f"tests.access.{variable}.{given}.{host}")
    logger.propagate = False
    logger.addHandler(terminal_log_handler(stream, clean=redact))
    logger.warning("refused GET /runs?token=%s", token)
    assert token not in stream.getvalue() and "[redacted]" in stream.getvalue()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_server_on_loopback_asks_for_no_token_and_registers_none(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(COLLECT_TOKEN, GIVEN)
    assert access_token(host, COLLECT_TOKEN) is None
    assert not contains_secret(f"a label that says {GIVEN}")
