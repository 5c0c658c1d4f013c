"""Whole runs against a rate-limited fake provider, through the command line and the real openai SDK: rate
limits never abort a run (a wrong key still does), a resume may change rpm and concurrency (and records
it) but not what the run measures, and `show` / `report` say what pace each provider settled on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.cli import main as cli_main
from simulator.engine.budget import ErrorBudget
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply, ServerBudget
from tests._reliability_fixtures import triage_responder, write_suite


def _manifest(run: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((run / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("status", [429, 529])
def test_a_provider_that_only_rate_limits_never_aborts_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status: int
) -> None:
    # Every call refused; a short rate-limit budget so each item fails quickly, as rate limits.
    with FakeLLMServer(lambda call: FakeReply(status=status, text="slow down", retry_after=0.01)) as server:
        suite = write_suite(
            tmp_path / "suite", server.openai_base_url, runs=5, concurrency=4,
            provider={"rate_limit_retry_s": 0.05},
        )  # fmt: skip
        code = cli_main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"])
    out = capsys.readouterr()
    manifest = _manifest(tmp_path / "run")
    assert manifest["status"] == "complete"  # 15 items failed in a row, none aborted the run
    assert manifest["counts"]["conversations"] == 15 and manifest["counts"]["errors"] == 15
    assert code == 3  # nothing could be judged: said, not hidden
    assert "run aborted" not in out.err


def test_a_wrong_key_still_aborts_and_names_no_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLLMServer(lambda call: FakeReply(status=401, text="invalid key")) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url, runs=30, concurrency=4)
        code = cli_main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "the first 10 items all failed" in err and "check OPENAI_API_KEY" in err
    assert "rpm" not in err


@pytest.mark.parametrize(
    ("causes", "aborts"),
    [
        (["bot: provider_rate_limit: Error code: 429 - slow down"] * 12, False),
        (["judge rule-0: transient: Error code: 529 - overloaded"] * 12, False),
        (["bot: provider_permanent: the server rejected the API key (401)"] * 10, True),
        (["bot: provider_rate_limit: 429"] * 5 + ["bot: provider_permanent: 404 model"] * 10, True),
    ],
)
def test_the_failure_streak_counts_configuration_errors_not_rate_limits(
    causes: list[str], aborts: bool
) -> None:
    budget = ErrorBudget(None)
    reasons = [budget.account(cause) for cause in causes]
    assert any(reasons) is aborts
    assert budget.failed == len(causes)  # every failure still counted as one


def test_resume_takes_a_new_rpm_and_concurrency_and_records_the_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = {"key_ok": False}

    def responder(call: FakeCall) -> FakeReply | str:
        return triage_responder(call) if state["key_ok"] else FakeReply(status=401, text="invalid key")

    budget = ServerBudget(rpm=6000, burst_requests=20, send_headers=False, retry_after_s=0.2)
    with FakeLLMServer(responder, budget=budget) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url, runs=5, concurrency=4)
        run = tmp_path / "run"
        assert cli_main(["run", str(suite), "--out", str(run), "--no-progress"]) == 2  # aborted: wrong key
        state["key_ok"] = True
        code = cli_main(
            ["run", "--resume", str(run), "--retry-errors", "--rpm", "openai=1200", "--concurrency", "2",
             "--no-progress"]
        )  # fmt: skip
        shown = capsys.readouterr()
        assert code == 0, shown.err
        manifest = _manifest(run)
        assert manifest["status"] == "complete" and manifest["counts"]["errors"] == 0
        resumed = manifest["sessions"][-1]
        assert resumed["settings_changed"] == {"providers.openai.rpm": [None, 1200.0], "concurrency": [4, 2]}
        assert manifest["suite"]["providers"]["openai"]["rpm"] == 1200  # a later resume keeps them
        assert manifest["suite"]["concurrency"] == 2
        assert (
            resumed["limits"]["openai"]["rpm"] == 1200
            and resumed["limits"]["openai"]["rpm_source"] == "suite"
        )

        # `show` and `report` print the pace each provider settled on, from the manifest.
        assert cli_main(["show", str(run), "--scenario", "chest", "--repeat", "0"]) == 0
        assert "limits: openai: paced at 1200 requests/min (suite)" in capsys.readouterr().out
        assert cli_main(["report", str(run)]) == 0
        assert "paced at 1200 requests/min (suite)" in capsys.readouterr().out


def test_resume_with_a_suite_file_takes_its_operational_settings_and_refuses_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLLMServer(lambda call: FakeReply(status=401, text="invalid key")) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url, runs=4, concurrency=4)
        run = tmp_path / "run"
        assert cli_main(["run", str(suite), "--out", str(run), "--no-progress"]) == 2
        capsys.readouterr()
        data = json.loads(suite.read_text())
        data["judges"] = {"paths": [], "model": "openai:another-judge"}  # changes what is measured
        data["providers"]["openai"]["tpm"] = 90000
        changed = tmp_path / "suite" / "changed.yaml"
        changed.write_text(json.dumps(data), encoding="utf-8")
        code = cli_main(["run", str(changed), "--resume", str(run), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and "judges.model" in err and "another-judge" in err and "Start a new run" in err
        assert cli_main(["run", "--resume", str(run), "--runs", "9", "--no-progress"]) == 2
        assert "--runs would change its results" in capsys.readouterr().err
        del data["judges"]  # only operational changes left: accepted (the key is still wrong: aborts)
        data["concurrency"] = 3
        changed.write_text(json.dumps(data), encoding="utf-8")
        cli_main(["run", str(changed), "--resume", str(run), "--no-progress"])
    resumed = _manifest(run)["sessions"][-1]
    assert resumed["settings_changed"] == {"providers.openai.tpm": [None, 90000.0], "concurrency": [4, 3]}
