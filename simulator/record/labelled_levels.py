"""Clinician-labelled expected levels: the level a clinician says a conversation without a scenario (an
imported or a collected one) needed, written in the `expected_level` column of a labels sheet and kept in
the run folder's labels.jsonl (`simulator labels import`).

Why labels.jsonl, and not the conversation's record or the manifest: a label is data *about* a run, appended
with who gave it and when, never a rewrite of what was recorded. Keeping the level there keeps the trace's
own expected level (if any) intact beside it, lets a second clinician disagree without erasing the first,
and needs no command beyond `labels import`. Every reader of an expected level consults it through this
module: the report (analysis/rundata.py), re-judging (engine/rejudge.py) and the live rates of `collect`
and `drift` (collect/trends.py). A clinician-labelled level outranks the trace's and the red-flag floor.
"""

from __future__ import annotations

__all__ = ["labelled_levels", "read_labelled_levels"]

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from simulator.record.folder import LABELS, RunFolder
from simulator.record.models import Label

# The words every rate resting on these levels uses for where its expected level came from.
CLINICIAN_LABELLED = "clinician-labelled"


@dataclass
class LabelledLevels:
    """Per conversation id, the level its clinicians labelled; `disputed`: conversations whose labellers
    gave different levels (each labeller's latest), which get none until they agree."""

    levels: dict[str, str] = field(default_factory=dict)
    disputed: dict[str, list[str]] = field(default_factory=dict)


def labelled_levels(labels: Iterable[Label], criterion_id: str) -> LabelledLevels:
    """The labelled levels on `criterion_id` (the outcome criterion): each labeller's latest level per
    conversation; where labellers differ, the conversation is disputed and has no labelled level."""
    latest: dict[str, dict[str, str]] = {}
    for label in labels:
        if label.criterion_id == criterion_id and label.expected_level:
            latest.setdefault(label.conversation_id, {})[label.labeller] = label.expected_level
    found = LabelledLevels()
    for conversation, by_labeller in latest.items():
        given = sorted(set(by_labeller.values()))
        if len(given) == 1:
            found.levels[conversation] = given[0]
        else:
            found.disputed[conversation] = given
    return found


def read_labelled_levels(folder: Path, criterion_id: str) -> LabelledLevels:
    """The labelled levels in a run folder's labels.jsonl (none when nobody has labelled it)."""
    if not (folder / LABELS).is_file():
        return LabelledLevels()
    return labelled_levels(RunFolder.open(folder).labels(), criterion_id)
