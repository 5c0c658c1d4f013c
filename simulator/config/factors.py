"""Persona factors as a designed experiment: base scenarios crossed with factor levels.

A suite declares `factors:` (each factor a list of levels, the first one the reference) and
`factor_design: full | fractional`. Each level is a persona modifier, a fact filter and/or a style of the
suite's style catalogue (`user.styles`, simulator/config/styles.py). Every (base scenario, combination of levels) becomes a variant: a Scenario with
the stable id `base~factor=level~...` (factors in name order) and its levels in `factors`, so reports can
stratify by base scenario and estimate each level's effect (analysis/factors.py).

The fractional design is the regular 1/n fraction: the last factor's level index is the sum of the other
indices modulo its number of levels (for three two-level factors, the half fraction I = ABC). Main effects
are then aliased with two-factor interactions (resolution III): read them as main effects only.
"""

from __future__ import annotations

__all__ = ["design_points", "expand_factors", "level_names", "levels_of", "suite_scenarios", "variant_id"]

import itertools
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from simulator.config.languages import LANGUAGE_TAG
from simulator.config.scenario import Scenario
from simulator.config.styles import DEFAULT_STYLES, StyleCatalogue
from simulator.config.variants import variant_id
from simulator.models import StrictModel, empty_dict, empty_list

# `one_at_a_time`: the reference, then each non-reference level alone with every other factor at its
# reference (the perturbations behavioural relations compare; docs/relations.md).
FactorDesign = Literal["full", "fractional", "one_at_a_time"]


class FactFilter(StrictModel):
    """Which of the base scenario's facts the person knows at this level."""

    keep_first: int | None = Field(default=None, ge=0)


class FactorLevel(StrictModel):
    """One level of a factor. Empty: the reference level (the base scenario as written)."""

    persona: str | None = None  # appended to the base persona
    style: str | None = None  # a style of the suite's catalogue
    facts: FactFilter | None = None
    # Facts this level adds to the base scenario's (a red flag, for a directional relation).
    add_facts: list[str] = Field(default_factory=empty_list)
    volunteers: int | None = Field(default=None, ge=0)
    tags: list[str] = Field(default_factory=empty_list)
    expected: dict[str, Any] = Field(default_factory=empty_dict)  # overrides the base's expected keys
    # Languages the person switches into at this level (code-switching: docs/languages.md).
    switches_to: list[str] = Field(default_factory=empty_list)

    @field_validator("switches_to")
    @classmethod
    def _language_codes(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not LANGUAGE_TAG.match(tag):
                raise ValueError(f"'{tag}' is not a language code; write a code such as es, pt or pt-BR")
        return value


LevelEntry = str | dict[str, FactorLevel]


def levels_of(entries: list[Any], styles: StyleCatalogue | None = None) -> list[tuple[str, FactorLevel]]:
    """(name, level) for each entry: a string names a style of `styles` (the first may be any reference
    name), a one-key mapping names a custom level. Raises ValueError naming the bad entry. Without `styles`
    only the shape is checked (any later string is taken for a style name)."""
    out: list[tuple[str, FactorLevel]] = []
    for position, entry in enumerate(entries):
        if isinstance(entry, str):
            if (styles is None and position > 0) or (styles is not None and entry in styles):
                out.append((entry, FactorLevel(style=entry)))
            elif position == 0:
                out.append((entry, FactorLevel()))  # the reference level: the scenario as written
            else:
                assert styles is not None
                raise ValueError(
                    f"level '{entry}' is not a style in {styles.source} ({styles.names()}); only the first "
                    "(reference) level may be a plain name, or write {name: {persona: ...}}"
                )
        elif isinstance(entry, dict) and len(entry) == 1:
            name, spec = next(iter(entry.items()))
            level = spec if isinstance(spec, FactorLevel) else FactorLevel.model_validate(spec or {})
            if styles is not None and level.style is not None and level.style not in styles:
                raise ValueError(f"level '{name}': unknown style '{level.style}' (not in {styles.source})")
            out.append((str(name), level))
        else:
            raise ValueError("each level is a style name or a one-key mapping {name: {persona: ...}}")
    names = [name for name, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"level names repeat: {names}")
    if len(out) < 2:
        raise ValueError("a factor needs at least two levels (the first is the reference)")
    return out


def level_names(entries: list[Any]) -> list[str]:
    """The level names of a factor, in order, without reading any style catalogue (for reports)."""
    return [entry if isinstance(entry, str) else str(next(iter(entry))) for entry in entries]


def design_points(counts: list[int], design: FactorDesign) -> list[tuple[int, ...]]:
    """Level indices of every run of the design: all combinations, or the regular 1/n fraction."""
    if design == "one_at_a_time":
        reference = tuple(0 for _ in counts)
        singles = [
            tuple(level if i == factor else 0 for i in range(len(counts)))
            for factor, n in enumerate(counts)
            for level in range(1, n)
        ]
        return [reference, *singles]
    full = list(itertools.product(*(range(n) for n in counts)))
    if design == "full" or len(counts) < 2:
        return full
    return [p for p in full if p[-1] == sum(p[:-1]) % counts[-1]]


def _variant(
    base: Scenario, chosen: list[tuple[str, str, FactorLevel]], catalogue: StyleCatalogue
) -> Scenario:
    persona, styles, tags = [base.persona], list(base.styles), list(base.tags)
    facts, key_facts, volunteers = list(base.facts), list(base.key_facts), base.volunteers
    expected, switches = dict(base.expected), list(base.switches_to)
    topics = dict(base.fact_topics)
    for _, _, level in chosen:
        switches += [code for code in level.switches_to if code not in switches]
        shipped = catalogue.get(level.style) if level.style else None
        if shipped is not None:
            persona.append(shipped.persona)
            styles.append(shipped.name)
            tags += [t for t in shipped.tags if t not in tags]
            expected.update(shipped.expected)
            if shipped.volunteers is not None:
                volunteers = shipped.volunteers
        if level.persona:
            persona.append(level.persona.strip())
        if level.facts is not None and level.facts.keep_first is not None:
            facts = facts[: level.facts.keep_first]
            key_facts = [n for n in key_facts if n <= len(facts)]
            topics = {n: t for n, t in topics.items() if n <= len(facts)}
        facts += [fact.strip() for fact in level.add_facts if fact.strip()]
        if level.volunteers is not None:
            volunteers = level.volunteers
        tags += [t for t in level.tags if t not in tags]
        expected.update(level.expected)
    factors = {factor: name for factor, name, _ in chosen}
    variant = base.model_copy(
        update={
            "id": variant_id(base.id, factors),
            "persona": " ".join(persona),
            "styles": styles,
            "tags": tags,
            "facts": facts,
            "key_facts": key_facts,
            "fact_topics": topics,
            "volunteers": volunteers,
            "expected": expected,
            "switches_to": switches,
            "base": base.id,
            "factors": factors,
        }
    )
    variant._source, variant._line = base._source, base._line
    return variant


def expand_factors(
    scenarios: list[Scenario],
    factors: dict[str, list[Any]],
    design: FactorDesign = "full",
    styles: StyleCatalogue = DEFAULT_STYLES,
) -> list[Scenario]:
    """Every base scenario crossed with the design's level combinations (bases without factors unchanged);
    string levels are styles of `styles` (the suite's catalogue)."""
    if not factors:
        return scenarios
    names = list(factors)
    parsed = [levels_of(factors[name], styles) for name in names]
    points = design_points([len(levels) for levels in parsed], design)
    out: list[Scenario] = []
    for base in scenarios:
        for point in points:
            chosen = [(names[i], *parsed[i][index]) for i, index in enumerate(point)]
            out.append(_variant(base, chosen, styles))
    return out


def suite_scenarios(
    suite: Any, tags: list[str] | None = None, files: list[Path] | None = None
) -> list[Scenario]:
    """The scenarios a suite runs (read it as `Suite.scenarios_to_run`): its files (or `files`, or the
    scenarios given in code), filtered by tags, crossed with its factors when it has any. Styles a scenario
    names must be in the suite's style catalogue."""
    from simulator.config.loading import by_tags, load_scenarios
    from simulator.config.redteam import expand_attacks
    from simulator.config.styles import suite_styles
    from simulator.errors import UserError

    # The held-out share is drawn over every scenario of the files, then the tags are applied: a run of
    # some tags holds out the same vignettes as a run of all.
    inline = getattr(suite, "_inline", None)
    if files is None and inline is not None:
        bases = [s for s in mark_held_out(list(inline), suite) if not tags or set(s.tags) & set(tags)]
        if not bases:
            raise UserError(f"no scenario has any of the tags {tags}; check the tags asked for")
    else:
        every = load_scenarios(files if files is not None else suite.named_paths("scenarios"))
        bases = by_tags(mark_held_out(every, suite), tags) if tags else mark_held_out(every, suite)
    styles = suite_styles(suite)
    check_scenario_styles(bases, styles)
    from simulator.config.simulators import expand_simulators

    variants = expand_attacks(expand_factors(bases, suite.factors, suite.factor_design, styles), suite)
    return expand_simulators(variants, suite)


def held_out_ids(ids: list[str], fraction: float, seed: int) -> set[str]:
    """Exactly round(fraction × len(ids)) of `ids` (halves up): those whose seeded sha256 ranks lowest. The
    same ids and seed give the same choice on every run and machine, and adding or removing one id moves
    at most one other across (the cut is a rank, not a draw per id)."""
    import hashlib

    def rank(scenario_id: str) -> tuple[bytes, str]:
        return hashlib.sha256(f"{seed}:{scenario_id}".encode()).digest(), scenario_id

    share = int(fraction * len(set(ids)) + 0.5)
    return set(sorted(set(ids), key=rank)[:share])


def mark_held_out(scenarios: list[Scenario], suite: Any) -> list[Scenario]:
    """Tag held-out scenarios `held-out` (their variants inherit it): `split: held_out`, or chosen by the
    suite's `held_out.fraction` among the scenarios without a split of their own (`held_out_ids`);
    `split: tuned` keeps a scenario visible."""
    config = getattr(suite, "held_out", None)
    drawn = (
        held_out_ids([s.id for s in scenarios if s.split is None], config.fraction, config.seed)
        if config is not None
        else set()
    )
    out = []
    for scenario in scenarios:
        held = scenario.split == "held_out" or scenario.id in drawn
        if held and "held-out" not in scenario.tags:
            marked = scenario.model_copy(update={"tags": [*scenario.tags, "held-out"]})
            marked._source, marked._line = scenario._source, scenario._line
            scenario = marked
        out.append(scenario)
    return out


def check_scenario_styles(scenarios: list[Scenario], styles: StyleCatalogue) -> None:
    """Raise UserError naming each scenario file whose `styles` names a style the catalogue lacks."""
    from simulator.errors import Problem, UserError

    problems = [
        Problem(
            str(s._source or s.id),
            f"styles {unknown} are not in {styles.source} ({styles.names()}); name a style catalogue "
            "with user.styles in the suite",
            s.line_of("styles"),
            "styles",
        )
        for s in scenarios
        if (unknown := [name for name in s.styles if name not in styles])
    ]
    if problems:
        raise UserError("unknown persona styles", problems)
