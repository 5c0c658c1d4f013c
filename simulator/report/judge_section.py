"""The report's judge-quality section: stability of repeated judgements, jury agreement, and failure
rates corrected for the judge's measured sensitivity and specificity (when the run folder has labels)."""

from __future__ import annotations

__all__ = ["JudgeQuality", "judge_notes", "judge_quality"]

from typing import Literal

from pydantic import Field

from simulator.analysis.corrected import CorrectedRate, run_corrected_rates
from simulator.analysis.rundata import RunData
from simulator.analysis.stability import UNSTABLE, JuryRow, StabilityRow, jury_rows, stability_rows
from simulator.models import ResultModel
from simulator.stats.interrater import BOOTSTRAP
from simulator.stats.rates import pct


class JudgeQuality(ResultModel):
    """How far the judges can be trusted on this run; each list is empty when there is nothing to show."""

    unstable_threshold: float = UNSTABLE
    stability: list[StabilityRow] = Field(default=[])
    jury: list[JuryRow] = Field(default=[])
    corrected_rates: list[CorrectedRate] = Field(default=[])


def judge_quality(run: RunData, replicates: int = BOOTSTRAP) -> JudgeQuality | None:
    """The section for a run, or None when it has no samples, no jury and no labels."""
    section = JudgeQuality(
        stability=stability_rows(run.samples),
        jury=jury_rows(run.samples, run.verdicts),
        corrected_rates=run_corrected_rates(run, replicates),
    )
    if not (section.stability or section.jury or section.corrected_rates):
        return None
    return section


def judge_notes(section: JudgeQuality | None) -> list[tuple[Literal["warning"], str, str]]:
    """(level, title, detail) findings: unstable criteria, and corrected rates far above the raw ones."""
    if section is None:
        return []
    notes: list[tuple[Literal["warning"], str, str]] = []
    unstable: dict[str, list[str]] = {}
    for row in section.stability:
        if row.unstable:
            unstable.setdefault(row.criterion_id, []).append(f"{row.judge_model} {row.flips.text}")
    for criterion, flips in unstable.items():
        notes.append(
            (
                "warning",
                f"unstable judge on {criterion}: samples of one conversation disagreed on "
                + "; ".join(flips),
                f"at or above {pct(section.unstable_threshold, 0)} of conversations: the rubric is probably "
                "vague; read the disagreeing samples and sharpen it (docs/judges.md)",
            )
        )
    for rate in section.corrected_rates:
        if (
            rate.corrected is not None
            and rate.raw is not None
            and rate.low is not None
            and rate.low > rate.raw
        ):
            notes.append(
                (
                    "warning",
                    f"{rate.criterion_id}: corrected failure rate {pct(rate.corrected)} "
                    f"(95% CI {pct(rate.low)}–{pct(rate.high)}) is above the raw {pct(rate.raw)}",
                    "the judge passes failures the labellers caught (sensitivity "
                    f"{pct(rate.sensitivity)}); trust the corrected rate",
                )
            )
    return notes
