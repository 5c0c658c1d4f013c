"""Model providers, one per file; a model is named `provider:model` and its SDK is imported only when used."""

from __future__ import annotations

__all__ = ["create_provider"]

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from simulator.config.providers import PROVIDERS
from simulator.config.secrets import declared_secrets
from simulator.record.redact import register_secrets

if TYPE_CHECKING:
    from simulator.config.providers import ProviderSettings
    from simulator.providers.base import Provider


def create_provider(name: str, settings: ProviderSettings) -> Provider:
    """Instantiate a provider by name; missing SDKs or keys raise a UserError that says what to do.

    What it will read (its key, its base URL's password and query values) is registered as a secret first,
    before any call can send or echo it: every command that calls a model (a run, `propose`, pairwise
    judging, drafting, the desk) writes nothing that holds it, whether it registered the suite or not."""
    module_name, _, class_name = PROVIDERS[name].partition(":")
    module = importlib.import_module(module_name)
    provider_class = getattr(module, class_name)
    register_secrets(_secrets_read(provider_class, settings, os.environ))
    provider: Provider = provider_class(settings)
    return provider


def _secrets_read(
    provider_class: type[Provider], settings: ProviderSettings, env: Mapping[str, str]
) -> set[str]:
    """The secret values a provider of `provider_class` reads from `env`: what its settings declare (the
    `api_key_env` variable's value, the base URL's secrets) and, when they name no variable, its own key
    variable's value (`Provider.key_env`)."""
    found = declared_secrets(settings, env)
    variable = settings.api_key_env or provider_class.key_env
    if variable is not None and env.get(variable):
        found.add(env[variable])
    return found
