"""Drafts written by a model, under the same schema as the offline cards.

The card still decides what matters clinically: the red flags (the clinicians' own words, kept verbatim as
the draft's first facts and its `key_facts`), the expected level, the tags, the id and the provenance. The
model writes only the person around them (persona, goal) and background facts, as structured output, and
the draft is validated as a scenario like any other; its notes name the model.
"""

from __future__ import annotations

__all__ = ["model_writer"]

from typing import Any

from simulator.authoring.draft import Writer, vignette_fields
from simulator.authoring.pathway import Pathway
from simulator.errors import UserError
from simulator.providers.hub import ModelHub
from simulator.traces.draft import ask_for_draft

PROMPT = (
    "You write test vignettes for a health triage service: a simulated patient (or someone writing for "
    "them) who will chat with the service. You are given the red flags this person has and the complaint "
    "they open with. Write `persona` (who writes, about whom, age, manner; they give the red flags only "
    "when asked), `goal` (what they want, in their own words, without naming the red flags) and `facts`: "
    "two to four background facts a real person might add (history, medicines, circumstances). Never add a "
    "red flag or a symptom beyond those given, never a diagnosis, never advice."
)


def _checked(data: Any, model: str) -> dict[str, Any]:
    ok = isinstance(data, dict) and all(
        isinstance(data.get(k), str) and data[k].strip() for k in ("persona", "goal")
    )
    if not ok or not isinstance(data.get("facts"), list):
        raise UserError(
            f"{model} answered a draft without persona, goal or facts; try another --model, or none"
        )
    return data


def model_writer(hub: ModelHub, model: str) -> Writer:
    """A Writer that asks `model` (through the suite's providers) for the person around each card."""

    async def write(
        pathway: Pathway, level: str, flags: tuple[str, ...], number: int, key: str
    ) -> dict[str, Any]:
        fields = vignette_fields(pathway, level, flags, number, key)
        card = (
            f"Pathway: {pathway.title}\nDisposition: {level}\nOpens with: {pathway.complaint or pathway.title}\n"
            "Red flags (they reveal these only when asked):\n" + "\n".join(f"- {f}" for f in flags)
        )
        answer = await ask_for_draft(
            hub, model, PROMPT, card, max_tokens=600, temperature=0.7, schema_name="draft_vignette"
        )
        data = _checked(answer, model)
        background = [str(f).strip() for f in data["facts"] if str(f).strip()]
        fields.update(
            persona=data["persona"].strip(),
            goal=data["goal"].strip(),
            facts=[*flags, *background],
            notes=f"{fields['notes']}; written by {model}",
        )
        return fields

    return write
