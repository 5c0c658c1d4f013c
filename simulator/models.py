"""The bases of every pydantic model of the package (tests/test_one_base_model.py fails on another):
`StrictModel` for what people write and what the record stores (unknown fields are an error),
`ResultModel` for analysis and report results (also: the JSON schema lists every field as present,
defaults included, so `docs/report-schema.json` says what a reader gets), `AnswerModel` for what a
model answers in a schema it was given (a judge's verdict, an audit), and `ForeignModel` for another
project's files read leniently (their unknown fields kept and listed as not mapped). `BuiltModel` is a `StrictModel` people
also build in Python (`simulator.Suite(...)`, `simulator.Scenario(...)`): a mistake in what was passed is
one `UserError` line naming the field, as the rest of the Python API's door (api/door.py)."""

from __future__ import annotations

__all__ = ["AnswerModel", "BuiltModel", "ForeignModel", "ResultModel", "StrictModel"]

import difflib
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic._internal._model_construction import ModelMetaclass

from simulator.errors import UserError


class StrictModel(BaseModel):
    """Unknown fields are an error (a misspelt field never passes silently)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class ResultModel(StrictModel):
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class AnswerModel(BaseModel):
    """A model's answer to a schema it was asked for: fields it adds beyond the schema are ignored (a
    model's extra words are no mistake of the person running the suite; the fields asked for are checked)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


class ForeignModel(BaseModel):
    """Another project's file read leniently (a peer's task format): unknown fields are kept in `model_extra`
    so the reader can list every field it did not map, never dropping one silently."""

    model_config = ConfigDict(extra="allow", defer_build=True)


class _BuiltMeta(ModelMetaclass):
    """Wraps the class call (`Suite(...)`) only: `model_validate`, which every file reader uses (and which
    runs a custom `__init__` too), keeps pydantic's ValidationError for its file:line problems."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise UserError(built_model_error(cls, exc)) from None  # type: ignore[arg-type]


if TYPE_CHECKING:  # mypy sees a plain model, so the pydantic plugin still checks each one's fields

    class BuiltModel(StrictModel):
        pass

else:

    class BuiltModel(StrictModel, metaclass=_BuiltMeta):
        """A StrictModel whose constructor speaks the API's error shape: `Suite(runs='x')` raises UserError
        "simulator.Suite: field 'runs': ...", one line, never pydantic's multi-line ValidationError. Files
        are read with `model_validate` (config/yamlfile.py gives file:line problems), which this does not
        touch."""


def built_model_error(model: type[BaseModel], exc: ValidationError) -> str:
    """The first problem of `exc` in one line, naming the field and the fix, and how many more there are."""
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")  # a misspelt name first
    first = errors[0]
    loc = tuple(first["loc"])
    field = ".".join(str(part) for part in loc) or "(the model)"
    kind = first["type"]
    if kind == "extra_forbidden":
        allowed = sorted(info.alias or name for name, info in model.model_fields.items())
        guess = difflib.get_close_matches(str(loc[-1]), allowed, n=1) if len(loc) == 1 else []
        message = f"unknown field; did you mean '{guess[0]}'?" if guess else "unknown field; remove it"
    elif kind == "missing":
        message = "missing; give it"
    else:
        got = first.get("input")
        shown = repr(got)[:60] if not isinstance(got, dict | list) else type(got).__name__
        message = f"{str(first['msg']).removeprefix('Value error, ')} (got {shown})"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"simulator.{model.__name__}: field '{field}': {message}{more}".replace("\n", " ")
