"""The calibration panel's tables as data (section.py): per criterion, the judge against each labeller and
the labellers against each other, in the strings `PairAgreement.cells` gives. `simulator calibrate RUN`
draws them in the terminal and the review desk's calibration page draws the same tables as HTML."""

from __future__ import annotations

__all__ = ["criterion_tables"]

from simulator.analysis.agreement import CriterionPanel, PairAgreement
from simulator.report.section import Column, Table


def pair_table(title: str, pairs: list[PairAgreement]) -> Table:
    """One row per pair of raters; a pair with false passes is red."""
    names = list(pairs[0].cells())
    table = Table([Column(n, numeric=n not in ("reference", "rater")) for n in names], title=title)
    for pair in pairs:
        table.add(*pair.cells().values(), state="fail" if pair.false_pass.k else None)
    return table


def criterion_tables(criterion: CriterionPanel) -> list[Table]:
    """The judge against each labeller, then the labellers against each other (each when there is one)."""
    tables = []
    if criterion.judge:
        tables.append(pair_table("judge against each labeller", criterion.judge))
    if criterion.between_labellers:
        tables.append(pair_table("labellers against each other", criterion.between_labellers))
    return tables
