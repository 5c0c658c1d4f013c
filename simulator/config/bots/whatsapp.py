"""The `whatsapp` bot kind's config: a bot behind WhatsApp Cloud API webhooks (docs/whatsapp.md). The
adapter is simulator/bots/whatsapp/."""

from __future__ import annotations

__all__ = ["TEMPLATE_PLACEHOLDER", "WhatsAppBotConfig"]

import re
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from simulator.config.bot_kinds import (
    LIMIT_FIELDS,
    BotConfig,
    BotKind,
    register_bot_kind,
    turn_timeout,
)
from simulator.config.bots import BotStart
from simulator.config.secrets import SecretEnv, SecretURL
from simulator.models import empty_dict, empty_list

# A placeholder of a template's body: numbered (`{{1}}`) or named (`{{first_name}}`), as in Meta's templates.
TEMPLATE_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")


class WhatsAppBotConfig(BotConfig):
    """A bot behind WhatsApp Cloud API webhooks (docs/whatsapp.md): the engine posts signed webhook events to
    `webhook_url` and serves the Graph API the bot replies to. Secrets are read from the variables named."""

    type: Literal["whatsapp"] = "whatsapp"
    webhook_url: Annotated[str, SecretURL] = Field(pattern=r"^https?://")
    app_secret_env: Annotated[str, SecretEnv] = "WHATSAPP_APP_SECRET"
    access_token_env: Annotated[str, SecretEnv] = "WHATSAPP_ACCESS_TOKEN"
    verify_token_env: Annotated[str, SecretEnv] = "WHATSAPP_VERIFY_TOKEN"
    # Play the GET verification handshake (hub.mode=subscribe) once before the first conversation.
    verify: bool = True
    phone_number_id: str = Field(default="106540352242922", pattern=r"^\d+$")
    display_phone_number: str = Field(default="15550783881", pattern=r"^\d+$")
    business_account_id: str = Field(default="102290129340398", pattern=r"^\d+$")
    # The bot's turn ends once it has been quiet this long after its last message (or sent an interactive one).
    quiet_s: float = Field(default=2.0, gt=0)
    # How a bot turn ends besides an interactive message (docs/whatsapp.md#one-bot-turn): `quiet` waits for
    # quiet_s after the last message; `auto` ends it at the webhook's answer once the run has seen that this
    # bot sends its messages while handling the webhook (opt-in: a bot that also sends after answering, on a
    # path the first turns did not take, could have a turn ended early).
    turn_end: Literal["auto", "quiet"] = "quiet"
    # The whole bot turn's deadline, from the webhook delivery: the bot's first message must come within it,
    # and the turn must have ended (quiet or interactive) by it; a bot still posting then is an error.
    timeout_s: float = turn_timeout()
    # Status callbacks posted to the webhook for each accepted message, in this order.
    statuses: list[Literal["sent", "delivered", "read"]] = Field(default_factory=empty_list)
    # Optional: GET this (with {wa_id}) after the conversation for the bot's final state (a JSON object).
    state_url: Annotated[str | None, SecretURL] = Field(default=None, pattern=r"^https?://")
    profile_name: str = "Alex"
    country: str = Field(default="GB", pattern=r"^[A-Z]{2}$")  # the BSUID's prefix
    start: BotStart | None = None
    # The texts of the message templates the bot sends (template name -> body, with {{1}} or {{name}}
    # placeholders), as in Meta's template manager: a template message is recorded as the person reads it.
    templates: dict[str, str] = Field(default_factory=empty_dict)

    operational: ClassVar[frozenset[str]] = LIMIT_FIELDS | {"timeout_s"}

    @field_validator("templates")
    @classmethod
    def _numbered_in_order(cls, templates: dict[str, str]) -> dict[str, str]:
        """Numbered placeholders run {{1}} to {{n}} with none skipped (Meta refuses a template otherwise)."""
        for name, body in templates.items():
            if not name.strip() or not body.strip():
                raise ValueError(f"template {name!r}: give the template's name and its body text")
            numbers = {int(p) for p in TEMPLATE_PLACEHOLDER.findall(body) if p.isdigit()}
            if numbers and numbers != set(range(1, max(numbers) + 1)):
                skipped = min(set(range(1, max(numbers) + 1)) - numbers)
                raise ValueError(
                    f"template {name!r}: placeholders are numbered {{{{1}}}} to {{{{n}}}} with none skipped; "
                    f"{{{{{skipped}}}}} is missing"
                )
        return templates

    def describe(self) -> str:
        return f"whatsapp:{self.webhook_url}"

    def declared_tools(self) -> set[str] | None:
        return set()  # the Cloud API carries messages only: no tool call of the bot is ever seen


# No ENVIRONMENT: the WhatsApp channel carries no environment API.
register_bot_kind(
    BotKind(
        "whatsapp",
        WhatsAppBotConfig,
        "simulator.bots.whatsapp.adapter:whatsapp_bot_factory",
    )
)
