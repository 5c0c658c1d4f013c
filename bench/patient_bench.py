"""How faithful is the offline simulated patient? Scores it on a labelled set (bench/patient_set.yaml).

Each item is one bot message (a question, or options to tap) put to a fresh offline patient right after its
opening; the patient's answer is scored against the labels:
- **fact precision**: of the facts it told, the share the labels accept (a fact told for a question it does
  not answer is a distortion: "blood in the vomit?" answered with a blood-sugar fact);
- **fact recall**: of the facts the labels expect, the share it told (a question about several things gets
  every relevant fact);
- **pick accuracy**: items with options where its tap (or typing, when the labels accept it) is acceptable;
- **voice consistency**: answers of on-behalf writers free of the patient's facts in the first person.

It reads the offline patient only through `OfflineUser` and `fact_provenance`, so the same script scores an
older version of the code (`PYTHONPATH=<old tree> python bench/patient_bench.py`), for figures before and
after. `--user MODEL` scores an LLM patient instead (the facts it told found by the audit's word-overlap
provenance): `test:default` is the fake server (plumbing only: its answers mean nothing), `local:...` a local
model where one is installed.
The figures are pinned in tests/test_patient_bench.py at the level reached (never lower).

    python bench/patient_bench.py [--json] [--failures] [--user MODEL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from simulator.config.scenario import Scenario
from simulator.config.vocabulary import Vocabulary, load_vocabulary
from simulator.record.parts import Option, OptionsPart, TextPart
from simulator.record.transcript import Turn
from simulator.users.offline import OfflineUser

HERE = Path(__file__).resolve().parent
VOCABULARIES = {"triage": "examples/triage_vocabulary.yaml", "parcel": "examples/parcel_vocabulary.yaml"}
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _title(value: Any) -> str:
    """A YAML option title (an unquoted Yes or No reads as a boolean)."""
    return {True: "Yes", False: "No"}.get(value, str(value)) if isinstance(value, bool) else str(value)


def _scenario(profile: dict[str, Any]) -> Scenario:
    data: dict[str, Any] = {k: profile[k] for k in ("id", "persona", "goal", "facts") if k in profile}
    for key in ("speaker", "writes_in"):
        if key in profile and key in Scenario.model_fields:  # an older version may not know `speaker`
            data[key] = profile[key]
    return Scenario.model_validate(data)


class _Patient:
    """Makes the patient of one item: the offline user, or an LLM user (`--user MODEL`) on one hub."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.hub: Any = None
        if spec != "offline":
            from simulator.providers.hub import ModelHub

            self.hub = ModelHub()

    def make(self, scenario: Scenario, vocabulary: Vocabulary) -> Any:
        if self.hub is None:
            return OfflineUser(scenario, seed=0, repeat=0, volunteer_share=0.0, vocabulary=vocabulary)
        from simulator.users.llm_user import LLMUser
        from simulator.users.prompt import render_user_prompt

        client, model = self.hub.client(self.spec)
        return LLMUser(client, model, render_user_prompt(scenario), 0.0, 300)

    def told(self, user: Any, scenario: Scenario, turns: list[Turn]) -> set[int]:
        """The facts (numbered from 1) told in the answer: exact for the offline user, by word overlap (the
        audit's code provenance) for an LLM user."""
        if isinstance(user, OfflineUser):
            return {p.fact + 1 for p in user.fact_provenance(turns) if p.status == "elicited"}
        from simulator.judging.fidelity import code_provenance
        from simulator.record.models import ConversationRecord

        record = ConversationRecord(
            id="bench#0", scenario_id=scenario.id, repeat=0, stop_reason="max_turns", turns=turns,
            started_at=NOW, ended_at=NOW,
        )  # fmt: skip
        return {p.fact + 1 for p in code_provenance(record, scenario) if p.user_turn == 2}


async def _ask(user: Any, question: str, options: list[str] | None) -> tuple[Turn, Turn, str | None]:
    """The opening, the bot's message and the answer; the tapped title (None: typed)."""
    opening = await user.next_message([])
    turns = [Turn(index=0, role="user", messages=[opening.text], started_at=NOW)]
    parts: list[Any] = [TextPart(text=question)]
    if options:
        parts.append(OptionsPart(options=[Option(id=f"o{i}", title=t) for i, t in enumerate(options)]))
    turns.append(Turn(index=1, role="bot", parts=parts, started_at=NOW))
    said = await user.next_message(turns)
    answer = Turn(index=2, role="user", parts=[said.pick or TextPart(text=said.text)], started_at=NOW)
    if said.pick is not None and said.text != said.pick.title:
        answer.parts.append(TextPart(text=said.text))
    return turns[0], answer, (said.pick.title if said.pick is not None else None)


def score(root: Path, user: str = "offline") -> dict[str, Any]:
    """Every figure of the set for one simulated user, with the failures that make them."""
    return asyncio.run(_score(root, user))


async def _score(root: Path, spec: str) -> dict[str, Any]:
    patient = _Patient(spec)
    data = yaml.safe_load((HERE / "patient_set.yaml").read_text(encoding="utf-8"))
    told = right = expected = found = picks = picked = voiced = voice_ok = items = 0
    failures: list[str] = []
    for profile in data["profiles"]:
        vocabulary = load_vocabulary(root / VOCABULARIES[profile["vocabulary"]])
        scenario = _scenario(profile)
        wrong = [w.casefold() for w in profile.get("wrong_voice", [])]
        for ask in profile["ask"]:
            items += 1
            user = patient.make(scenario, vocabulary)
            options = [_title(o) for o in ask.get("options", [])] or None
            opening, answer, tap = await _ask(user, ask["q"], options)
            turns = [opening, Turn(index=1, role="bot", messages=[ask["q"]], started_at=NOW), answer]
            said = patient.told(user, scenario, turns)
            where = f"{profile['id']}: {ask['q']!r}"
            if "facts" in ask:
                want = set(ask["facts"])
                accept = [set(a) for a in ask.get("accept", [])]
                allowed = want.union(*accept)
                told += len(said)
                right += len(said & allowed)
                if want and set() not in accept:
                    expected += len(want)
                    found += len(want & said)
                if said - allowed or (want - said and set() not in accept):
                    failures.append(f"{where}: told facts {sorted(said)}, expected {sorted(want)}")
            if "tap" in ask:
                picks += 1
                got = tap if tap is not None else "(typed)"
                acceptable = [_title(t) for t in ask["tap"]]
                if got in acceptable:
                    picked += 1
                else:
                    failures.append(f"{where}: tapped {got!r}, acceptable {acceptable}")
            if wrong:
                voiced += 1
                text = " ".join([opening.text, answer.text]).casefold()
                slips = [w for w in wrong if w in text]
                if slips:
                    failures.append(f"{where}: wrong voice {slips[0]!r} in {answer.text!r}")
                else:
                    voice_ok += 1

    def share(a: int, b: int) -> float:
        return round(a / b, 3) if b else 1.0

    if patient.hub is not None:
        await patient.hub.aclose()
    return {
        "user": spec,
        "items": items,
        "fact_precision": share(right, told),
        "fact_recall": share(found, expected),
        "pick_accuracy": share(picked, picks),
        "voice_consistency": share(voice_ok, voiced),
        "counts": {
            "facts_told": told,
            "facts_acceptable": right,
            "facts_expected": expected,
            "facts_found": found,
            "picks": picks,
            "picks_right": picked,
            "on_behalf_answers": voiced,
            "voice_kept": voice_ok,
        },
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--failures", action="store_true", help="list every item the patient got wrong")
    parser.add_argument("--root", type=Path, default=HERE.parent, help="the tree whose vocabularies to read")
    parser.add_argument(
        "--user",
        default="offline",
        help="the simulated user: offline (default) or a model, e.g. test:default",
    )
    args = parser.parse_args(argv)
    figures = score(args.root, args.user)
    if args.json:
        print(json.dumps(figures if args.failures else {k: v for k, v in figures.items() if k != "failures"}))
        return 0
    c = figures["counts"]
    print(f"{figures['user']} patient on {figures['items']} labelled items (bench/patient_set.yaml)")
    print(
        f"fact precision    {figures['fact_precision']:.3f}  ({c['facts_acceptable']}/{c['facts_told']} facts told)"
    )
    print(
        f"fact recall       {figures['fact_recall']:.3f}  ({c['facts_found']}/{c['facts_expected']} facts expected)"
    )
    print(
        f"pick accuracy     {figures['pick_accuracy']:.3f}  ({c['picks_right']}/{c['picks']} items with options)"
    )
    print(
        f"voice consistency {figures['voice_consistency']:.3f}  ({c['voice_kept']}/{c['on_behalf_answers']} on-behalf answers)"
    )
    if args.failures:
        print("\n".join(figures["failures"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
