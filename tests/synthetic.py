"""Synthetic outcome runs for statistics tests: scenarios x repeats written record by record."""

from __future__ import annotations

from pathlib import Path

from simulator.record.transcript import Turn
from tests.test_report_support import record, verdict, write_run

LEVELS = ["self_care", "gp", "urgent", "emergency"]


def _turns(scenario: str, repeat: int, user_turns: int, vary_user: bool) -> list[Turn]:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    turns = []
    for i in range(user_turns):
        text = f"{scenario}: message {i}" + (f" (take {repeat})" if vary_user else "")
        turns.append(Turn(index=2 * i, role="user", messages=[text], started_at=now))
        turns.append(Turn(index=2 * i + 1, role="bot", messages=[f"question {i}"], started_at=now))
    return turns


def synthetic_outcome_run(
    path: Path,
    plan: dict[str, list[bool | str | None]],
    expected: str = "emergency",
    turns: dict[str, int] | None = None,
) -> Path:
    """One run: for each scenario, per repeat, True = escalated to `expected`, False = one level lower,
    "undecided" = ended with no decision, None = the conversation crashed (a bot error). Outcome verdicts
    as the code check writes them."""
    records, verdicts = [], []
    for scenario, outcomes in plan.items():
        for repeat, outcome in enumerate(outcomes):
            n_turns = (turns or {}).get(scenario, 2)
            if outcome is None:
                rec = record(
                    scenario,
                    repeat,
                    stop_reason="error",
                    turns=_turns(scenario, repeat, n_turns, False)[:-1],
                    error={"source": "bot", "kind": "RuntimeError", "message": "crashed"},
                )
                records.append(rec)
                verdicts.append(verdict(rec, "outcome.triage_level", "error", kind="code", expected=expected))
                continue
            actual: str | None = expected if outcome is True else LEVELS[LEVELS.index(expected) - 1]
            if outcome == "undecided":
                actual = None
            rec = record(
                scenario,
                repeat,
                turns=_turns(scenario, repeat, n_turns, False),
                final_state=None if actual is None else {"triage_level": actual},
            )
            records.append(rec)
            verdicts.append(
                verdict(
                    rec,
                    "outcome.triage_level",
                    "pass" if outcome is True else "fail",
                    kind="code",
                    expected=expected,
                    actual=actual,
                )
            )
    runs = max(len(v) for v in plan.values())
    config = {
        "runs": runs,
        "outcome": {"key": "triage_level", "levels": LEVELS, "critical": "emergency"},
    }
    return write_run(path, records, verdicts, config)
