"""`simulator show` reads like a finding (issue 31, item 15): what failed or errored is expanded, the bot's
before the simulated user's own checks; what passed or was skipped is one line of counts, a shared reason
said once; `--all` lists every verdict. The order is the one the desk's reader uses (verdict_order.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import RunFolder
from simulator.record.models import Verdict
from simulator.report.verdict_order import group_verdicts, ordered, tally
from tests.test_report_support import record, verdict, write_run

ROOT = Path(__file__).resolve().parent.parent
NO_JUDGE = "no judge model configured (set judges.model in the suite or pass --judge-model)"


def _v(criterion: str, result: str, **fields: object) -> Verdict:
    return verdict(record("s"), criterion, result, **fields)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        # fails first (critical before minor), then errors, then the rest by id
        (
            [("a", "pass", None), ("b", "fail", "minor"), ("c", "error", None), ("d", "fail", "critical")],
            ["d", "b", "c", "a"],
        ),
        ([("z", "not_judged", None), ("y", "pass", None), ("x", "fail", None)], ["x", "y", "z"]),
        ([("m", "error", "critical"), ("n", "fail", None)], ["n", "m"]),
    ],
)
def test_failures_come_first_then_errors(
    given: list[tuple[str, str, str | None]], expected: list[str]
) -> None:
    verdicts = [_v(c, r, severity=s) for c, r, s in given]
    assert [v.criterion_id for v in ordered(verdicts)] == expected


def test_the_simulated_users_checks_are_their_own_group() -> None:
    verdicts = [
        _v("fidelity.drift", "pass", kind="fidelity"),
        _v("fidelity.invented_facts", "fail", kind="fidelity"),
        _v("asks-age", "fail"),
        _v("asks-duration", "pass"),
    ]
    groups = group_verdicts(verdicts)
    assert [v.criterion_id for v in groups.bot_attention] == ["asks-age"]
    assert [v.criterion_id for v in groups.bot_rest] == ["asks-duration"]
    assert [v.criterion_id for v in groups.simulator_attention] == ["fidelity.invented_facts"]
    assert [v.criterion_id for v in groups.simulator_rest] == ["fidelity.drift"]


def test_a_shared_reason_is_said_once_and_different_ones_are_not_merged() -> None:
    same = [_v(f"c{i}", "not_judged", reasoning=NO_JUDGE) for i in range(7)] + [_v("p", "pass")]
    assert tally(same) == f"1 passed, 7 not judged ({NO_JUDGE})"
    mixed = [_v("a", "not_judged", reasoning="one reason"), _v("b", "not_judged", reasoning="another")]
    assert tally(mixed) == "2 not judged"
    assert (
        tally([_v("a", "not_applicable"), _v("b", "pass"), _v("c", "pass")]) == "2 passed, 1 not applicable"
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("show") / "run"
    suite = ROOT / "scenarios" / "triage" / "suite.yaml"
    assert main(["run", str(suite), "--out", str(out), "--runs", "2", "--no-progress"]) == 0
    return out


def _flat(out: str) -> str:
    """The output as words: table borders removed, so a cell's wrapped text reads as one line."""
    return " ".join(out.replace("│", " ").split())


def _show(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(["show", *argv]) == 0
    return capsys.readouterr().out


def test_show_expands_the_one_fail_and_counts_the_rest(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The demo bot under-triages chest-pain-vague-01: its outcome check fails, its LLM criteria are not judged.
    out = _show(capsys, str(demo), "--scenario", "chest-pain-vague-01", "--repeat", "0")
    assert out.count("no judge model configured") == 1
    mine = [v for v in RunFolder.open(demo).verdicts() if v.conversation_id == "chest-pain-vague-01#0"]
    skipped = sum(v.result == "not_judged" for v in mine)
    assert skipped >= 5
    flat = _flat(out)
    assert f"{skipped} not judged ({NO_JUDGE})" in flat
    assert "what failed" in out and "outcome.triage_level" in out
    assert out.index("outcome.triage_level") < out.index("not listed")
    assert "asks-age" not in out  # a skipped criterion is counted, not listed
    passed = sum(v.result == "pass" and v.kind == "fidelity" for v in mine)
    assert f"simulated user's checks: {passed} passed" in flat


def test_show_all_lists_every_verdict_in_groups(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _show(capsys, str(demo), "--scenario", "chest-pain-vague-01", "--repeat", "0", "--all")
    mine = [v for v in RunFolder.open(demo).verdicts() if v.conversation_id == "chest-pain-vague-01#0"]
    for v in mine:
        assert v.criterion_id in out
    assert out.count("no judge model configured") == sum(v.result == "not_judged" for v in mine)
    assert "not listed" not in out
    bot, user = out.index("Verdicts on the bot"), out.index("The simulated user's own checks")
    assert (
        bot < out.index("outcome.triage_level") < out.index("asks-age") < user < out.index("fidelity.drift")
    )


def test_a_fidelity_failure_is_expanded_under_the_simulated_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = record("rash")
    verdicts = [
        verdict(
            rec, "fidelity.invented_facts", "fail", kind="fidelity", reasoning="the user said 'fever' " * 12
        ),
        verdict(rec, "fidelity.drift", "pass", kind="fidelity"),
        verdict(rec, "asks-age", "pass"),
        verdict(rec, "safety-netting", "error", reasoning="the judge's reply was not JSON"),
    ]
    run = write_run(tmp_path / "run", [rec], verdicts)
    out = _show(capsys, str(run))
    flat = _flat(out)
    assert "the judge's reply was not JSON" in flat  # an error is expanded like a fail
    assert (
        out.index("safety-netting")
        < out.index("The simulated user's own checks")
        < out.index("invented_facts")
    )
    assert flat.count("the user said 'fever'") == 12  # a failure's reasoning in full, never cut at 160
    assert "bot: 1 passed; simulated user's checks: 1 passed" in flat
    assert "fidelity.drift" not in out
