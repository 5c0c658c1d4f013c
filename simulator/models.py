"""The bases of every pydantic model of the package (tests/test_one_base_model.py fails on another):
`StrictModel` for what people write and what the record stores (unknown fields are an error),
`ResultModel` for analysis and report results (also: the JSON schema lists every field as present,
defaults included, so `docs/report-schema.json` says what a reader gets), and `AnswerModel` for what a
model answers in a schema it was given (a judge's verdict, an audit)."""

from __future__ import annotations

__all__ = ["AnswerModel", "ResultModel", "StrictModel"]

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown fields are an error (a misspelt field never passes silently)."""

    model_config = ConfigDict(extra="forbid")


class ResultModel(StrictModel):
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class AnswerModel(BaseModel):
    """A model's answer to a schema it was asked for: fields it adds beyond the schema are ignored (a
    model's extra words are no mistake of the person running the suite; the fields asked for are checked)."""

    model_config = ConfigDict(extra="ignore")
