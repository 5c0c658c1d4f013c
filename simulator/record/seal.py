"""A sealed held-out set: the transcripts and evidence of held-out conversations never reach a reader.

Scenarios marked `split: held_out` (or chosen by the suite's seeded `held_out.fraction`) carry the tag
`held-out`. A run folder opened for reading (`RunFolder.open`: report, show, compare, the desk, exports)
returns those conversations with every part of every turn replaced by one placeholder, their final state
cut to the outcome keys the scenarios expect (the decision, needed for every rate; tool arguments and
anything else the bot reported are withheld), no environment state, the facts' wording withheld, and their
verdicts without reasoning, evidence or compared values other than an outcome level; counts, results,
outcomes, timing and cost stay, so aggregate rates are computed as for any conversation. `simulator unseal RUN --by NAME` records who unsealed the run and when in
its manifest; from then on readers see everything. Writers (run, resume, judge, merge) always read the
real records.
"""

from __future__ import annotations

__all__ = ["HELD_OUT", "held_out_scenarios", "outcome_keys", "seal_record", "seal_verdict"]

from typing import Any

from simulator.record.manifest import Manifest
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.parts import TextPart

HELD_OUT = "held-out"
SEALED = "[sealed: a held-out conversation; `simulator unseal RUN --by NAME` reveals it]"


def held_out_scenarios(manifest: Manifest) -> set[str]:
    """The held-out scenario ids of a run that is still sealed (none once it was unsealed)."""
    if manifest.unsealed:
        return set()
    return {entry.id for entry in manifest.scenarios if HELD_OUT in entry.tags}


def outcome_keys(manifest: Manifest) -> frozenset[str]:
    """The final-state keys a sealed record keeps: the suite's outcome key and every key a scenario expects
    (the decision each rate counts), nothing else the bot reported."""
    keys = {key for entry in manifest.scenarios for key in entry.expected}
    suite = manifest.suite
    if suite is not None and suite.outcome is not None:
        keys.add(suite.outcome.key)
    return frozenset(keys)


def seal_record(record: ConversationRecord, keep: frozenset[str] = frozenset()) -> ConversationRecord:
    """The record with its content replaced: every turn one placeholder part; no raw exchange, quotes or
    messages of errors and character breaks; the final state cut to the `keep` keys; no environment state;
    each fact's wording withheld (its number and status stay)."""
    turns = [turn.model_copy(update={"parts": [TextPart(text=SEALED)], "raw": None}) for turn in record.turns]
    error = record.error.model_copy(update={"message": SEALED}) if record.error is not None else None
    provenance = [
        p.model_copy(update={"quote": None, "question": None, "text": SEALED}) for p in record.provenance
    ]
    state = record.final_state
    if state is not None:
        state = {key: value for key, value in state.items() if key in keep}
    return record.model_copy(
        update={
            "turns": turns,
            "error": error,
            "provenance": provenance,
            "final_state": state,
            "environment_state": None,
            "character_breaks": [SEALED for _ in record.character_breaks],
            "fidelity_regenerations": [SEALED for _ in record.fidelity_regenerations],
        }
    )


def seal_verdict(verdict: Verdict) -> Verdict:
    """The verdict's result kept; its reasoning and evidence withheld, and the values it compared unless it
    is an outcome check (an outcome level is a result)."""
    error = verdict.error.model_copy(update={"message": SEALED}) if verdict.error is not None else None
    update: dict[str, Any] = {"reasoning": SEALED, "evidence": [], "error": error}
    if not verdict.criterion_id.startswith("outcome."):  # a tool check's compared values are arguments
        update.update(expected=None, actual=None)
    return verdict.model_copy(update=update)
