"""A variant's id: the vignette (base scenario) it is a condition of, and each factor's level.

Persona factors, red-team attacks, several simulated users and languages all make variants of a vignette;
they share this one spelling of an id, and `vignette_of` reads the vignette back from it. The vignette is
the unit of every rate, bound, n_eff, gate, comparison and header: a variant is a condition of its
vignette, never new evidence about another one. Every reader that groups conversations into clusters calls
`vignette_of`; nothing else splits an id."""

from __future__ import annotations

__all__ = ["variant_id", "vignette_of", "vignettes_counted"]

from collections.abc import Iterable

from simulator.plural import plural

# Where a variant id's factor levels start: `base~attack=buried-self-harm~simulator=offline`.
_MARK = "~"


def variant_id(base: str, levels: dict[str, str]) -> str:
    """The stable id of a variant: the base id and each factor's level, factors in name order."""
    return base + "".join(f"{_MARK}{factor}={levels[factor]}" for factor in sorted(levels))


def vignette_of(scenario_id: str) -> str:
    """The vignette a scenario id belongs to (the cluster of its conversations): the id up to its first
    factor level; a plain scenario is its own vignette."""
    return scenario_id.split(_MARK, 1)[0]


def vignettes_counted(scenario_ids: Iterable[str]) -> str:
    """How many vignettes some scenario ids are, their variants said apart: `3 vignettes, 4 variants`, or
    `3 vignettes` when each is its own vignette (a variant is not new evidence, so vignettes come first)."""
    ids = set(scenario_ids)
    vignettes = len({vignette_of(i) for i in ids})
    unit = "vignette" if vignettes == 1 else "vignettes"
    return f"{vignettes} {unit}" + (f", {plural(len(ids), 'variant')}" if len(ids) != vignettes else "")
