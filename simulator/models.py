"""The bases of every pydantic model of the package (tests/test_one_base_model.py fails on another):
`StrictModel` for what people write and what the record stores (unknown fields are an error),
`ResultModel` for analysis and report results (also: the JSON schema lists every field as present,
defaults included, so `docs/report-schema.json` says what a reader gets), `AnswerModel` for what a
model answers in a schema it was given (a judge's verdict, an audit), and `ForeignModel` for another
project's files read leniently (their unknown fields kept and listed as not mapped). `BuiltModel` is a `StrictModel` people
also build in Python (`simulator.Suite(...)`, `simulator.Scenario(...)`): a mistake in what was passed is
one `UserError` line naming the field, as the rest of the Python API's door (api/door.py).

A `StrictModel`'s numbers are numbers: pydantic reads `true` as 1 and `false` as 0 where an int or a float
goes, so `runs: true` ran once and `max_turns: false` ran none, silently. Every int and float a
`StrictModel` declares (in lists, dicts, unions and optionals too) refuses a boolean instead, and every
float refuses infinity and NaN (a `ResultModel`'s may be NaN)."""

from __future__ import annotations

__all__ = [
    "AnswerModel",
    "BuiltModel",
    "ForeignModel",
    "ResultModel",
    "StrictModel",
    "empty_dict",
    "empty_list",
]

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, ValidationError
from pydantic._internal._model_construction import ModelMetaclass
from pydantic_core import core_schema

from simulator.errors import (
    UserError,
    choices_of,
    did_you_mean,
    error_loc,
    field_path,
    pattern_or_message,
    shown_input,
)
from simulator.plural import plural


# A model field's default factory: `Field(default_factory=empty_list)`, never the built-in `list`. pydantic
# asks every factory for its signature (whether it takes the validated data), and for the built-in `list`
# that tokenizes `object.__init__`'s text signature: 0.14 ms a field against 6 us for a function, with about
# 150 such fields (3.5% of a run's start-up). tests/test_one_base_model.py fails on a built-in factory.
def empty_list() -> list[Any]:
    return []


def empty_dict() -> dict[Any, Any]:
    return {}


class StrictModel(BaseModel):
    """Unknown fields are an error (a misspelt field never passes silently), and so is a boolean where a
    number goes."""

    # YAML's `.inf`, `.nan` and `1e400` are floats: a timeout, a rate or a temperature of infinity passed
    # as a setting (`providers.openai.rpm: .inf`, `temperature: 1e400`). A stored record never holds one.
    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> Any:
        schema = handler(source)
        inner: Any = schema
        while inner["type"] != "model" and isinstance(inner.get("schema"), dict):
            inner = inner["schema"]  # past definitions and the model's own validators
        if inner["type"] == "model":  # its own fields only: a nested model's schema is its own call's
            inner["schema"] = _numbers_refuse_booleans(inner["schema"])
        return schema


def _refuse_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()}; write the number itself")
    return value


# The keys of a core schema that hold the schemas of what it contains (pydantic_core.core_schema).
_INNER = ("schema", "items_schema", "keys_schema", "values_schema", "lax_schema", "strict_schema",
          "python_schema", "json_schema", "extras_schema")  # fmt: skip


def _numbers_refuse_booleans(schema: Any) -> Any:
    """`schema` with every int and float it holds checked for a boolean first. A nested model (its own
    schema does it), a reference, a chain (its later steps see converted values) and a plain dataclass (a
    result the code builds, never a file) are left as they are."""
    kind = schema["type"]
    if kind in _NUMBERS:
        return core_schema.no_info_before_validator_function(_refuse_boolean, schema)
    if kind in _LEFT:
        return schema
    if kind == "function-before" and schema["function"].get("function") is _refuse_boolean:
        return schema  # done already: a built model's schema, reused inside another model's
    for key in _INNER:
        inner = schema.get(key)
        if inner is None:
            continue
        if isinstance(inner, dict):
            schema[key] = _numbers_refuse_booleans(inner)
        elif isinstance(inner, list):  # a tuple's positions
            schema[key] = [_numbers_refuse_booleans(item) for item in inner]
    fields = schema.get("fields")
    if isinstance(fields, dict):  # a model's fields, a typed dict's
        for field in fields.values():
            field["schema"] = _numbers_refuse_booleans(field["schema"])
    choices = schema.get("choices")
    if isinstance(choices, dict):  # a tagged union
        schema["choices"] = {tag: _numbers_refuse_booleans(choice) for tag, choice in choices.items()}
    elif isinstance(choices, list):  # a union: a schema, or (schema, label)
        schema["choices"] = [
            (_numbers_refuse_booleans(c[0]), c[1]) if isinstance(c, tuple) else _numbers_refuse_booleans(c)
            for c in choices
        ]
    return schema


_NUMBERS = frozenset({"int", "float"})
# Left as they are: what holds no schema (most of a model's nodes: a quick way out) and what is not walked.
_LEFT = frozenset({"str", "bool", "literal", "none", "any", "bytes", "enum", "is-instance", "is-subclass",
                   "date", "datetime", "time", "timedelta", "url", "multi-host-url", "uuid", "decimal",
                   "callable", "model", "definition-ref", "definitions", "chain", "dataclass"})  # fmt: skip


class ResultModel(StrictModel):
    # A result is computed, never written by a person: a ratio may be undefined (NaN), as before.
    model_config = ConfigDict(
        extra="forbid", json_schema_serialization_defaults_required=True, allow_inf_nan=True
    )


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
        if args:  # pydantic's own TypeError says only "takes 1 positional argument"
            first = next(iter(cls.model_fields), "field")  # type: ignore[attr-defined]
            raise UserError(
                f"simulator.{cls.__name__}: fields are given by name ({cls.__name__}({first}=..., ...)), "
                f"not by position: got {plural(len(args), 'positional argument')}"
            )
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
    loc = error_loc(first)
    field = field_path(loc) or "(the model)"
    kind = first["type"]
    if kind == "extra_forbidden":
        allowed = sorted(info.alias or name for name, info in model.model_fields.items())
        guess = did_you_mean(loc[-1], allowed) if len(loc) == 1 else None
        message = f"unknown field; {guess}" if guess else "unknown field; remove it"
    elif kind == "missing":
        message = "missing; give it"
    else:
        value = first.get("input")
        message = f"{pattern_or_message(first)} (got {shown_input(value, yaml=False)})"
        guess = did_you_mean(value, choices_of(first)) if isinstance(value, str) else None
        message += f"; {guess}" if guess else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"simulator.{model.__name__}: field '{field}': {message}{more}".replace("\n", " ")
