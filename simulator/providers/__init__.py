"""Model providers, one per file; a model is named `provider:model` and its SDK is imported only when used."""

from __future__ import annotations

__all__ = ["DEFAULT_MODELS", "PROVIDERS", "create_provider", "split_model"]

import importlib
from typing import TYPE_CHECKING

from simulator.errors import UserError

if TYPE_CHECKING:
    from simulator.providers.base import Provider
    from simulator.providers.settings import ProviderSettings

# provider name -> "module:Class"; imported lazily so `simulator --help` stays fast.
PROVIDERS: dict[str, str] = {
    "anthropic": "simulator.providers.anthropic:AnthropicProvider",
    "openai": "simulator.providers.openai:OpenAIProvider",
    "local": "simulator.providers.local:LocalProvider",
    # The project's fake server in process: no key, no network, meaningless answers (plumbing tests).
    "test": "simulator.testing.provider:TestProvider",
}

DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "anthropic:claude-sonnet-4-5",
    "openai": "openai:gpt-4.1-mini",
}


def split_model(spec: str) -> tuple[str, str]:
    """`anthropic:claude-sonnet-4-5` -> ("anthropic", "claude-sonnet-4-5"), with a clear error otherwise."""
    provider, sep, model = spec.partition(":")
    if not sep or not model:
        raise UserError(
            f"model '{spec}' must be written provider:model, e.g. anthropic:claude-sonnet-4-5, "
            f"openai:gpt-4.1-mini, local:smollm2 or test:default"
        )
    if provider not in PROVIDERS:
        raise UserError(f"unknown provider '{provider}' in '{spec}'; use one of: {', '.join(PROVIDERS)}")
    return provider, model


def create_provider(name: str, settings: ProviderSettings) -> Provider:
    """Instantiate a provider by name; missing SDKs or keys raise a UserError that says what to do."""
    module_name, _, class_name = PROVIDERS[name].partition(":")
    module = importlib.import_module(module_name)
    provider_class = getattr(module, class_name)
    provider: Provider = provider_class(settings)
    return provider
