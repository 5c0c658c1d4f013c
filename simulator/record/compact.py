"""Many records read from one file, sharing what they have in common: equal strings, equal field sets.

A report on 10^4 conversations holds ~10^5 verdicts. Each came out of its own JSON line with its own copy
of the same few strings (conversation and scenario ids, criterion, kind, result, judge model, judge set
hash) and its own set of the names of the fields its line gave (pydantic's `model_fields_set`, about
0.7 KB each). Sharing equal ones changes no value and halves the verdicts' memory. A shared field set is
only ever copied (`model_copy`) or read; nothing in the package reads it at all.
"""

from __future__ import annotations

__all__ = ["Sharing"]

from collections.abc import Iterable, Iterator
from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


class Sharing:
    """Streams records, replacing each string field named in `fields` and each record's field set by an
    equal one already seen (the pools live as long as this object)."""

    def __init__(self, fields: Iterable[str]) -> None:
        self.fields = tuple(fields)
        self._strings: dict[str, str] = {}
        self._field_sets: dict[tuple[str, ...], set[str]] = {}

    def __call__(self, records: Iterable[M]) -> Iterator[M]:
        strings, field_sets = self._strings, self._field_sets
        for record in records:
            values = record.__dict__
            for name in self.fields:
                value = values.get(name)
                if type(value) is str:
                    values[name] = strings.setdefault(value, value)
            own = record.__pydantic_fields_set__
            # Keyed by the names in iteration order: equal sets built alike iterate alike (a pair that
            # iterates differently only goes unshared), and a tuple is cheaper to build than a frozenset.
            shared = field_sets.setdefault(tuple(own), own)
            if shared is not own:
                object.__setattr__(record, "__pydantic_fields_set__", shared)
            yield record
