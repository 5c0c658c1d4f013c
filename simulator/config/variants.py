"""A variant's id: the vignette (base scenario) it is a condition of, and each factor's level.

Persona factors, red-team attacks, several simulated users and languages all make variants of a vignette;
they share this one spelling of an id, and `base_of` reads the vignette back from it (the unit of every
rate: a variant is never new evidence about another vignette)."""

from __future__ import annotations

__all__ = ["base_of", "variant_id"]


def variant_id(base: str, levels: dict[str, str]) -> str:
    """The stable id of a variant: the base id and each factor's level, factors in name order."""
    return base + "".join(f"~{factor}={levels[factor]}" for factor in sorted(levels))


def base_of(scenario_id: str) -> str:
    """The vignette a scenario id is a condition of: the id before its first `~factor=level`."""
    return scenario_id.split("~", 1)[0]
