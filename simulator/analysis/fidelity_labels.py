"""A blind labelling sheet for the simulated user: people label each fidelity check per conversation, and
`simulator calibrate` then measures the fidelity checks against those labels like any judge."""

from __future__ import annotations

__all__ = ["export_simulator_labels", "labels_from_run"]

import random
from pathlib import Path

from simulator.analysis.calibrate import REQUIRED, LabelRow, refuse_filled_sheet
from simulator.analysis.rundata import RunData
from simulator.config.scenario import Scenario
from simulator.errors import UserError
from simulator.judging.fidelity import FIDELITY_CHECKS
from simulator.readers import write_sheet
from simulator.record.selection import latest_labels
from simulator.record.transcript import render_transcript


def _scenarios(run: RunData) -> dict[str, Scenario]:
    """The run's scenarios from their files (variants re-derived), for the persona and facts; {} if gone."""
    from simulator.config.loading import load_scenarios

    files = [Path(f) for f in sorted({e.file for e in run.manifest.scenarios if e.file})]
    files = [f for f in files if f.is_file()]
    if not files:
        return {}
    wanted = {e.id for e in run.manifest.scenarios}
    if run.manifest.suite is None:
        return {s.id: s for s in load_scenarios(files)}
    suite = run.manifest.rebuild_suite(run.path)  # its style catalogue too, for the variants' personas
    return {s.id: s for s in suite.scenarios_to_run(ids=wanted, files=files)}


def _rubric() -> str:
    lines = [
        f"- **{check}**: {what} Pass: {ok}. Fail: {bad}."
        for check, (what, ok, bad) in FIDELITY_CHECKS.items()
    ]
    return "\n".join(lines)


def export_simulator_labels(
    run: RunData, out: Path, sample: int | None = None, seed: int = 0
) -> tuple[Path, Path, int]:
    """Write blind transcripts with each persona, goal and facts (no verdicts, no outcome) and a labels.csv
    with one row per (conversation, fidelity check)."""
    audited = sorted({v.conversation_id for v in run.fidelity})
    if not audited:
        raise UserError(f"{run.path} has no simulator fidelity verdicts; run it with user.fidelity enabled")
    random.Random(seed).shuffle(audited)
    if sample is not None:
        audited = audited[:sample]
    records = {r.id: r for r in run.conversations}
    scenarios = _scenarios(run)
    refuse_filled_sheet(out / "labels.csv")
    out.mkdir(parents=True, exist_ok=True)
    parts = [
        "# Labelling the simulated user\n",
        "Read each conversation as the person's side only: did the simulated user behave like this person? "
        "For each check write pass, fail or n/a in labels.csv. The checks' own verdicts are not shown.\n",
        f"## The checks\n\n{_rubric()}\n",
    ]
    for number, cid in enumerate(audited, start=1):
        record = records[cid]
        scenario = scenarios.get(record.scenario_id)
        about = "(the scenario file is no longer available)"
        if scenario is not None:
            facts = "\n".join(f"{i + 1}. {f}" for i, f in enumerate(scenario.facts)) or "(none)"
            about = f"Persona: {scenario.persona}\n\nGoal: {scenario.goal}\n\nFacts (volunteers up to {scenario.volunteers}):\n{facts}"
        parts.append(f"## {number}. {cid}\n\n{about}\n\n```text\n{render_transcript(record.turns)}\n```\n")
    transcripts, labels = out / "transcripts.md", out / "labels.csv"
    transcripts.write_text("\n".join(parts), encoding="utf-8")
    write_sheet(
        labels, [*REQUIRED, "notes"], ([cid, check, "", ""] for cid in audited for check in FIDELITY_CHECKS)
    )
    return transcripts, labels, len(audited)


def labels_from_run(run: RunData, labeller: str | None) -> list[LabelRow]:
    """One labeller's latest label per (conversation, criterion) from the run's labels.jsonl."""
    path = run.path
    line = {id(label): position for position, label in enumerate(run.labels, start=1)}
    latest = latest_labels(run.labels)
    labellers = sorted(latest)
    if not labellers:
        raise UserError(f"{path}/labels.jsonl holds no labels; pass a labels CSV or label the run first")
    if labeller is None and len(labellers) > 1:
        raise UserError(f"{path} has labels from {', '.join(labellers)}; choose one with --labeller NAME")
    chosen = labeller or labellers[0]
    if chosen not in labellers:
        raise UserError(f"no labels by '{chosen}' in {path}; labellers: {', '.join(labellers)}")
    return [
        LabelRow(conversation_id=c, criterion_id=k, label=label.label, line=line[id(label)])
        for (c, k), label in sorted(latest[chosen].items())
    ]
