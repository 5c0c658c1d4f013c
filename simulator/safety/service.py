"""Likelihood in the service: a control's rate per conversation turned into expected incidents per month.

A likelihood level on the matrix is a rate per conversation in the verifying scenarios, not a frequency in
the service. With the hazard log's optional `exposure` (conversations per month, and each presentation's
share of them by scenario tag), a control's failure rate becomes expected incidents per month: the volume
times the share times the rate, with the same times its clustered 95% upper bound. It is a projection: it
assumes the service's presentations fail as the verifying scenarios did.
"""

from __future__ import annotations

__all__ = ["Projection", "projections"]

from simulator.models import ResultModel
from simulator.safety.controls import ControlResult
from simulator.safety.hazards import Exposure


class Projection(ResultModel):
    """One test control's expected incidents per month in the service (a projection, not a measurement)."""

    hazard: str
    control: str
    share: float
    conversations_per_month: float
    rate: float
    bound: float | None
    per_month: float
    per_month_bound: float | None
    note: str


def projections(
    exposure: Exposure | None, hazards: list[tuple[str, list[ControlResult]]]
) -> list[Projection]:
    """Each test control (of each hazard id) with a measured failure rate, projected onto the exposure."""
    if exposure is None:
        return []
    out = []
    for hazard_id, controls in hazards:
        for c in controls:
            if c.kind != "test" or c.rate is None or c.rate.rate is None:
                continue
            tagged = [t for t in c.tags if t in exposure.case_mix]
            if c.tags and not tagged:
                continue  # no share declared for these presentations: nothing to project
            share = min(1.0, sum(exposure.case_mix[t] for t in tagged)) if c.tags else 1.0
            upper = c.bound_side == "upper"
            rate = c.rate.rate if upper else 1.0 - c.rate.rate
            bound = None if c.bound is None else (c.bound if upper else 1.0 - c.bound)
            volume = exposure.conversations_per_month * share
            out.append(
                Projection(
                    hazard=hazard_id,
                    control=c.id,
                    share=share,
                    conversations_per_month=exposure.conversations_per_month,
                    rate=rate,
                    bound=bound,
                    per_month=volume * rate,
                    per_month_bound=None if bound is None else volume * bound,
                    note=(
                        f"projection: {exposure.conversations_per_month:g} conversations a month × share "
                        f"{share:g} ({', '.join(tagged) or 'all'}) × the failure rate of {c.metric} per conversation"
                    ),
                )
            )
    return out
