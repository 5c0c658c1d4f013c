"""A hazard log of one hazard and one control, for tests that need a log and care only about its criteria,
its threshold, its severity or its hazard's title."""

from __future__ import annotations

__all__ = ["one_control_log"]


def one_control_log(
    criteria: list[str],
    title: str = "Test log",
    *,
    threshold: str = "fail_rate <= 5%",
    severity: str = "catastrophic",
    hazard: str = "Missed emergency",
) -> str:
    """The YAML text of a DCB0129 hazard log whose one control names `criteria` (one per line, in order)."""
    listed = "".join(f"          - {name}\n" for name in criteria)
    return (
        f"title: {title}\n"
        "matrix: dcb0129\n"
        "hazards:\n"
        "  - id: HAZ-1\n"
        f"    title: {hazard}\n"
        "    cause: The bot does not escalate.\n"
        "    effect: Delayed care.\n"
        f"    severity: {severity}\n"
        "    likelihood: medium\n"
        "    controls:\n"
        "      - id: C-1\n"
        "        description: Emergencies escalated.\n"
        f"        criteria:\n{listed}"
        f"        threshold: {threshold}\n"
    )
