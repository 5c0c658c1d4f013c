"""Model providers, one per file; a model is named `provider:model` and its SDK is imported only when used."""

from __future__ import annotations

__all__ = ["create_provider"]

import importlib
from typing import TYPE_CHECKING

from simulator.config.providers import PROVIDERS

if TYPE_CHECKING:
    from simulator.config.providers import ProviderSettings
    from simulator.providers.base import Provider


def create_provider(name: str, settings: ProviderSettings) -> Provider:
    """Instantiate a provider by name; missing SDKs or keys raise a UserError that says what to do."""
    module_name, _, class_name = PROVIDERS[name].partition(":")
    module = importlib.import_module(module_name)
    provider_class = getattr(module, class_name)
    provider: Provider = provider_class(settings)
    return provider
