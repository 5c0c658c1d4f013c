"""Provider settings and names: how to reach a provider, how hard to push it, and which `provider:model`
names exist. A suite file fills these in; the providers package (above the record) reads them."""

from __future__ import annotations

__all__ = [
    "DEFAULT_MODELS",
    "PROVIDERS",
    "CacheConfig",
    "MaxTokens",
    "ProviderSettings",
    "Role",
    "Temperature",
    "split_model",
]

from typing import Annotated, Literal

from pydantic import Field, model_validator

from simulator.config.named_files import NamesPlace
from simulator.config.secrets import SecretEnv, SecretURL
from simulator.errors import FieldProblem, UserError
from simulator.models import StrictModel as _Strict


class ProviderSettings(_Strict):
    """Per-provider connection settings; `api_key_env` names the variable, the key itself is never stored."""

    base_url: Annotated[str | None, SecretURL] = None
    api_key_env: Annotated[str | None, SecretEnv] = None
    max_connections: int = Field(default=16, ge=1, le=10_000)
    timeout_s: float = Field(default=120.0, gt=0)
    # Retries of transient errors (5xx, timeouts): bounded in attempts and in total time per call.
    max_attempts: int = Field(default=6, ge=1)
    max_retry_time_s: float = Field(default=300.0, gt=0)
    # Rate limits (429, 529 overloaded) are never a reason to give up early: retried, however many
    # attempts it takes, for up to this long per call (default 15 minutes: several per-minute windows).
    rate_limit_retry_s: float = Field(default=900.0, gt=0)
    backoff_initial_s: float = Field(default=1.0, ge=0)  # first wait; doubles per attempt, with jitter
    backoff_max_s: float = Field(default=60.0, ge=0)
    # Halve the connection limit on a burst of rate limits and grow it back as calls succeed.
    adaptive_concurrency: bool = True
    # A request budget: at most this many requests per minute to this provider, spread evenly. With
    # several workers (shards run at once, Ray actors) each gets its share of it.
    rpm: float | None = Field(default=None, gt=0)
    # A token budget (input + max_tokens per request, as providers count it before answering).
    tpm: float | None = Field(default=None, gt=0)
    # Keep to the budget the provider reports in its rate-limit headers (remaining requests and tokens,
    # reset times), learning `rpm` / `tpm` from them when not set here.
    pace_from_headers: bool = True
    # Without headers or `rpm`, find the provider's rate from its 429s and pace every call to it.
    find_rate: bool = True
    # The adaptive limit never goes below this (default: a quarter of max_connections).
    min_connections: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _ranges_in_order(self) -> ProviderSettings:
        """A first wait longer than the longest, or a floor above the limit, is a typo: the engine would
        quietly use the other number."""
        if self.backoff_initial_s > self.backoff_max_s:
            raise FieldProblem(
                f"backoff_initial_s ({self.backoff_initial_s:g} s) is longer than backoff_max_s "
                f"({self.backoff_max_s:g} s); make the first wait at most the longest",
                "backoff_initial_s",
            )
        if self.min_connections is not None and self.min_connections > self.max_connections:
            raise FieldProblem(
                f"min_connections ({self.min_connections}) is above max_connections ({self.max_connections}); "
                "make the floor at most the limit",
                "min_connections",
            )
        return self


Role = Literal["user", "bot", "judge"]

# A model request's sampling settings as a suite writes them: a negative temperature or a reply of no tokens
# passed `validate` and failed only at the provider, conversation after conversation.
Temperature = Annotated[float | None, Field(ge=0)]
MaxTokens = Annotated[int, Field(ge=1)]


def _all_roles() -> list[Role]:
    return ["user", "bot", "judge"]


class CacheConfig(_Strict):
    """Opt-in response cache (SQLite) for the roles listed; a path is relative to the suite file."""

    # Runs write it, so two runs compare where it is (config/named_files.py), never its content.
    path: Annotated[str, NamesPlace()] = ".simulator-cache.sqlite"
    roles: list[Role] = Field(default_factory=_all_roles, min_length=1)


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
