"""A service bot the engine starts for the run (`bot.start`, docs/bots.md): its command and readiness check.

Shared by every bot kind that talks to a service (http, whatsapp, openai_endpoint, voice)."""

from __future__ import annotations

__all__ = ["BotStart", "ReadyCheck"]

from pydantic import Field

from simulator.models import StrictModel


class ReadyCheck(StrictModel):
    """When a started bot is ready: an HTTP `url` answers (any status below 500), or a TCP `port` accepts."""

    url: str | None = Field(default=None, pattern=r"^https?://")
    port: int | str | None = None  # a number, or "{port}"
    timeout_s: float = Field(default=30.0, gt=0)


class BotStart(StrictModel):
    """A service bot the engine starts for the run (docs/bots.md): `command` (a list, no shell) with
    `{port}` (a free loopback port), `{python}` (this interpreter) and, for whatsapp, `{api_url}` (the local
    Graph API) filled in; `env` values may use ${VAR} and the same placeholders. Its output goes to the run
    folder's `bot.log`; it gets SIGTERM, then SIGKILL after `stop_timeout_s`, when the run ends."""

    command: list[str] = Field(min_length=1)
    ready: ReadyCheck | None = None  # default: the bot's own URL's port accepts connections
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None  # relative to the suite file; default the suite's folder
    stop_timeout_s: float = Field(default=5.0, gt=0)
