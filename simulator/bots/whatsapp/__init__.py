"""The WhatsApp channel: the engine plays Meta's WhatsApp Cloud API (signed webhooks in, a local Graph API
out) to a bot that runs as the team ships it. See docs/whatsapp.md."""

from __future__ import annotations

__all__ = ["WhatsAppBotFactory"]

from simulator.bots.whatsapp.adapter import WhatsAppBotFactory
