"""`simulator draft`: new vignettes for thin cells, built from a pathway's presentation cards, distinct or
refused, landing in a review queue as drafts (never run until a clinician accepts them).

Offline the drafts are deterministic: each takes a different set of the pathway's red flags for one
disposition (one flag, then pairs, then threes) and a different person card (who writes, their age and
manner, what they leave out until asked), so two drafts never differ by wording alone. Every draft records
where it came from in its `notes` (the pathway file, section, red flags, person card and hazard).
"""

from __future__ import annotations

__all__ = ["Writer", "draft_vignettes", "offline_writer", "vignette_fields", "write_drafts"]

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml

from simulator.authoring.distinct import NEAR_DUPLICATE, nearest
from simulator.authoring.pathway import Pathway
from simulator.config.scenario import Scenario

# Person cards: who writes, about whom, how. Rotated over drafts, so no two drafts share card and flags.
PEOPLE: tuple[dict[str, Any], ...] = (
    {"who": "a {age}-year-old man writing about himself", "age": 58, "manner": "short messages with typos; plays it down"},
    {"who": "a daughter writing about her {age}-year-old father", "age": 74, "manner": "anxious, types in bursts"},
    {"who": "a care-home carer writing about an {age}-year-old resident", "age": 81, "manner": "calm and factual"},
    {"who": "a {age}-year-old woman writing about herself", "age": 45, "manner": "polite, writes long messages"},
    {"who": "a man writing about his {age}-year-old wife", "age": 66, "manner": "worried; English is his second language"},
    {"who": "a {age}-year-old student writing about themself", "age": 22, "manner": "casual, lowercase, no punctuation"},
)  # fmt: skip
ONSETS = ("about 30 minutes ago", "about an hour ago", "this morning", "two hours ago", "after lunch")


@dataclass
class DraftBatch:
    """What one `draft` call made: the drafts kept, and the refused near-duplicates with the pair named."""

    drafts: list[Scenario] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:32].strip("-") or "pathway"


def _flag_sets(flags: list[str]) -> list[tuple[str, ...]]:
    """One flag, then pairs, then threes: each a different clinical picture of the same disposition."""
    return [subset for size in (1, 2, 3) for subset in combinations(flags, size)]


def vignette_fields(
    pathway: Pathway, level: str, flags: tuple[str, ...], number: int, key: str
) -> dict[str, Any]:
    person = PEOPLE[number % len(PEOPLE)]
    onset = ONSETS[number % len(ONSETS)]
    complaint = pathway.complaint or pathway.title.lower()
    context = [pathway.context[number % len(pathway.context)]] if pathway.context else []
    facts = [*flags, f"It started {onset}.", f"The person is {person['age']} years old.", *context]
    who = person["who"].format(age=person["age"])
    return {
        "id": f"{_slug(pathway.title)}-{level.replace('_', '-')}-{number + 1:02d}",
        "persona": f"{who[0].upper()}{who[1:]}; {person['manner']}. Opens with '{complaint}' and gives the "
        "rest only when asked.",
        "goal": f"Find out what to do about {complaint}.",
        "facts": facts,
        "key_facts": list(range(1, len(flags) + 1)),
        "volunteers": 0,
        "expected": {key: level},
        "tags": list(pathway.tags),
        "draft": True,
        "notes": (
            f"drafted by `simulator draft` from {pathway.file} (section {level}; red flags: "
            f"{'; '.join(flags)}); person card {number % len(PEOPLE) + 1}; hazard {pathway.hazard or 'none named'}"
        ),
    }


# Writes one draft's fields for (pathway, level, red flags, number, outcome key): the offline cards, or a
# model (authoring/model_writer.py) under the same schema.
Writer = Callable[[Pathway, str, tuple[str, ...], int, str], Awaitable[dict[str, Any]]]


async def offline_writer(
    pathway: Pathway, level: str, flags: tuple[str, ...], number: int, key: str
) -> dict[str, Any]:
    """The deterministic offline draft of a presentation card."""
    return vignette_fields(pathway, level, flags, number, key)


async def draft_vignettes(
    pathway: Pathway,
    existing: list[Any],
    key: str,
    count: int,
    levels: list[str] | None = None,
    threshold: float = NEAR_DUPLICATE,
    write: Writer = offline_writer,
) -> DraftBatch:
    """Up to `count` drafts per level of the pathway (all its levels, or `levels`), each distinct from the
    `existing` vignettes and from each other at `threshold`; near-duplicates are refused with the pair.
    `write` writes each draft (offline cards by default); whatever writes it, the draft is validated as a
    scenario and its red flags are its key facts."""
    batch = DraftBatch()
    taken = {s.id for s in existing}
    for level, flags in pathway.flags.items():
        if levels and level not in levels:
            continue
        made = 0
        for number, subset in enumerate(_flag_sets(flags)):
            if made >= count:
                break
            draft = Scenario.model_validate(await write(pathway, level, subset, number, key))
            if draft.id in taken:
                batch.refused.append(f"{draft.id}: the id is taken; it was drafted before")
                continue
            close = nearest(draft, [*existing, *batch.drafts])
            if close is not None and close[1] >= threshold:
                other = close[0]
                where = f" ({other.source})" if getattr(other, "source", "") else ""
                batch.refused.append(
                    f"{draft.id}: a near-duplicate of {other.id}{where}: facts overlap {close[1]:.2f} "
                    f">= {threshold:.2f}"
                )
                continue
            batch.drafts.append(draft)
            taken.add(draft.id)
            made += 1
    return batch


# The fields a draft file holds, in the order people write them.
_DRAFT_FIELDS = (
    "id",
    "draft",
    "persona",
    "goal",
    "facts",
    "key_facts",
    "volunteers",
    "expected",
    "tags",
    "notes",
)


def draft_text(draft: Scenario) -> str:
    """A draft as the YAML file a reviewer reads (fields in the order people write them)."""
    data = draft.model_dump(include=set(_DRAFT_FIELDS))
    return yaml.safe_dump({k: data[k] for k in _DRAFT_FIELDS}, sort_keys=False, allow_unicode=True, width=110)


def write_drafts(batch: DraftBatch, queue: Path) -> list[Path]:
    """Write each draft into the review queue folder as `<id>.yaml` (never over a file)."""
    queue.mkdir(parents=True, exist_ok=True)
    written = []
    for draft in batch.drafts:
        path = queue / f"{draft.id}.yaml"
        if path.exists():
            batch.refused.append(f"{draft.id}: {path} is already in the review queue")
            continue
        path.write_text(draft_text(draft), encoding="utf-8")
        written.append(path)
    return written
