"""The base of every analysis and report result model: unknown fields are an error, and the JSON schema
lists every field as present (defaults included), so `docs/report-schema.json` says what a reader gets."""

from __future__ import annotations

__all__ = ["ResultModel", "StrictModel"]

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown fields are an error (a misspelt field never passes silently)."""

    model_config = ConfigDict(extra="forbid")


class ResultModel(StrictModel):
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)
