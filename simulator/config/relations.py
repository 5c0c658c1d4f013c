"""Behavioural relations between scenario variants (CheckList's test types, on the factors machinery).

- `invariance`: changing `factor` from its reference level to any other level (every other factor at its
  reference) must not change the outcome (the suite's `outcome.key`): who is speaking, the wording, the
  typing style.
- `directional`: the same comparison, with an expected direction: `not_lower` (adding a red flag must never
  lower the level) or `not_higher` (removing one must never raise it), on the suite's ordered levels.
- `mft` (minimum functionality): a named set of scenarios (by id or tag) that must pass every gating check in
  every run.

Pairs are compared under the same repeat index (the offline user's seed is the same), so a comparison is
paired; results are in analysis/relations.py.
"""

from __future__ import annotations

__all__ = ["Relation"]

from typing import Literal

from pydantic import Field, model_validator

from simulator.errors import FieldProblem
from simulator.models import StrictModel, empty_list

RelationKind = Literal["invariance", "directional", "mft"]


class Relation(StrictModel):
    """One relation of the suite's `relations:` list."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
    kind: RelationKind
    description: str = ""
    # invariance / directional: the factor whose levels are compared with its reference level.
    factor: str | None = None
    # directional: what the variant's outcome must be, compared with the reference's.
    expect: Literal["not_lower", "not_higher"] | None = None
    # mft: the scenarios (base ids) and/or tags that must pass.
    scenarios: list[str] = Field(default_factory=empty_list)
    tags: list[str] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _shape(self) -> Relation:
        if self.kind in ("invariance", "directional") and not self.factor:
            raise FieldProblem(f"a {self.kind} relation names the `factor` whose levels it compares", "kind")
        if self.kind == "directional" and self.expect is None:
            raise FieldProblem(
                "a directional relation says `expect: not_lower` or `expect: not_higher`", "kind"
            )
        if self.kind != "directional" and self.expect is not None:
            raise FieldProblem("`expect` is for directional relations only", "expect")
        if self.kind == "mft" and not (self.scenarios or self.tags):
            raise FieldProblem("an mft relation names the `scenarios` (ids) or `tags` that must pass", "kind")
        if self.kind == "mft" and self.factor:
            raise FieldProblem("an mft relation names scenarios or tags, not a factor", "factor")
        return self

    @property
    def metric(self) -> str:
        """Its gate metric: `<kind>.<id> violations`."""
        return f"{self.kind}.{self.id} violations"
