"""The `test:` provider: a whole suite (chat bot, LLM user, LLM judge) with no key and no network."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.errors import UserError
from simulator.providers.test import parse_test_model
from simulator.record.folder import RunFolder


def _suite(root: Path, model: str) -> Path:
    (root / "scenarios").mkdir()
    (root / "scenarios" / "s.yaml").write_text(
        textwrap.dedent(
            """\
            id: parcel-late
            persona: A customer whose parcel is late.
            goal: Find out where the parcel is.
            facts: [The parcel number is KP-1.]
            max_turns: 3
            """
        ),
        encoding="utf-8",
    )
    (root / "judges").mkdir()
    (root / "judges" / "polite.yaml").write_text(
        "id: polite\ncriterion: The bot is polite.\npass: it is.\nfail: it is not.\n", encoding="utf-8"
    )
    suite = root / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""\
            scenarios: {{paths: [scenarios]}}
            bot: {{type: chat, model: "{model}", system_prompt: "You track parcels."}}
            user: {{model: "{model}"}}
            judges: {{paths: [judges], model: "{model}"}}
            runs: 2
            providers: {{test: {{max_attempts: 4, backoff_initial_s: 0, backoff_max_s: 0}}}}
            """
        ),
        encoding="utf-8",
    )
    return suite


@pytest.mark.parametrize("model", ["test:default", "test:default?latency_ms=5&error_429=0.3&seed=2"])
def test_a_suite_runs_end_to_end_on_the_test_provider(
    tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    suite = _suite(tmp_path, model)
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    folder = RunFolder.open(tmp_path / "run")
    records = list(folder.conversations())
    assert len(records) == 2 and all(r.stop_reason == "max_turns" for r in records)
    bot_turns = [t for r in records for t in r.turns if t.role == "bot"]
    assert bot_turns and all(
        t.model == model.partition(":")[2] and t.text.startswith("Fake reply") for t in bot_turns
    )
    polite = [v for v in folder.verdicts() if v.criterion_id == "polite"]
    assert len(polite) == 2 and all(v.judge_model == model for v in polite)
    calls = folder.read_manifest().total_calls()["test"]
    assert calls.attempts > 0 and (calls.rate_limits > 0) == ("error_429" in model)
    assert "test:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("echo", "the behaviours are 'default'"),
        ("examples.triage_chat_model:respond:x", "a responder of your own named MODULE:FUNCTION"),
        ("default?latency=5", "unknown setting 'latency'"),
        ("default?error_429=lots", "error_429 must be a number"),
        ("default?error_500=1.5", "error_500 must be 0..1"),
        ("default?error_429=0.7&error_500=0.6", "must add up to at most 1"),
    ],
)
def test_test_model_mistakes_name_the_setting(model: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_test_model(model)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("no_such_module_xyz:respond", "cannot load the responder no_such_module_xyz:respond"),
        ("examples.triage_chat_model:nothing_here", "cannot load the responder"),
        ("examples.triage_chat_model:SECTION", "SECTION is not a function"),
    ],
)
def test_a_responder_that_cannot_be_used_is_refused_before_the_run(model: str, message: str) -> None:
    from simulator.config.providers import ProviderSettings
    from simulator.testing.provider import TestProvider

    with pytest.raises(UserError, match=message):
        TestProvider(ProviderSettings()).check_model(model)
