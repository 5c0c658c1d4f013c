"""Sections of the derived documents (safety case, history) as data: a title, notes, columns and rows of cells with a state.

A state is `ok`, `warn`, `fail` or `""` (neutral). The safety case and the history build their sections
with these; the terminal and HTML renderers only draw them (docs/design.md, "Reports").
"""

from __future__ import annotations

__all__ = ["Row", "Section", "State"]

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

State = Literal["ok", "warn", "fail", ""]


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cells: list[str]
    state: State = ""
    # Text shown under the row (quoted evidence, advice); each item one paragraph.
    details: list[str] = Field(default_factory=list)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    notes: list[str] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    rows: list[Row] = Field(default_factory=list)
