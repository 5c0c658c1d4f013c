"""A provider key a model echoes, or a provider's error quotes, is written by no command that calls a model:
not only `run` registers the secrets it knows. The provider registers the key it reads and a hub made for a
suite registers the suite's secrets (providers/__init__.py `create_provider`, providers/hub.py
`ModelHub.create`), and every answer but the bot's, and every provider error, is redacted before its caller
reads it (`redacted_response`). Each command runs here as a separate process would: nothing registered
before it starts. The model is the fake LLM server behind the real Anthropic SDK wire."""

from __future__ import annotations

import base64
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from simulator.api import atalk, load_suite
from simulator.api.judging import common_conversations, judge_pairs, pairwise_criterion
from simulator.cli import main
from simulator.config.loading import load_scenarios
from simulator.config.providers import ProviderSettings
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.hub import ModelHub
from simulator.record import redact as redact_module
from simulator.record.folder import RunFolder
from simulator.record.redact import contains_secret, forget_secrets, register_secrets, secret_forms
from simulator.record.transcript import Turn
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from simulator.users.base import UserMessage

# The provider key: of no well-known credential format (so only its registration can find it), with a
# quote, a slash and a plus so that its JSON, URL and base64 forms differ from it.
KEY = 'ek-Q8w3"Er5Ty7/Ui9Op2As4Df+Zk'
RAW = KEY.encode()
# The key as a model may echo it: as it is, in base64 and base64url, in hex, and escaped inside JSON text.
ENCODED = {
    "plain": KEY,
    "base64": base64.b64encode(RAW).decode(),
    "base64url": base64.urlsafe_b64encode(RAW).decode(),
    "hex": RAW.hex(),
    "json": json.dumps(KEY)[1:-1],
}
ECHO = " | ".join(f"{name}: {form}" for name, form in ENCODED.items())

BOT = '''
class Bot:
    """Asks one question, then sends everyone to the GP (the scenario expects an emergency)."""

    def __init__(self):
        self.turn, self.state = 0, None

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            return "Does the pain spread to your arm?"
        self.state = {"triage_level": "gp"}
        return "Please book a GP appointment."

    def final_state(self):
        return self.state
'''
SCENARIO = """\
id: chest-1
persona: 52-year-old man, short messages.
goal: Find out whether his chest pain needs a doctor today.
facts: [Pressure in the chest for two hours., The pain goes to the left arm.]
expected: {triage_level: emergency}
tags: [cardiac]
"""
CRITERION = """\
id: asks-arm
criterion: The bot asks whether the chest pain spreads to the arm.
pass: it asked.
fail: it did not.
severity: critical
category: omission
"""
PATHWAY = """\
# Chest pain

## emergency
- The pain spreads to the left arm.
- Short of breath at rest.
"""


def _forms() -> set[str]:
    """Every form of the key the records' search covers, and those the fake model says."""
    return secret_forms(KEY) | set(ENCODED.values())


def _leaks(text: str) -> list[str]:
    return sorted(form for form in _forms() if form in text)


def _written(folder: Path) -> str:
    """Every file under `folder`, and the data of each YAML or JSON-lines file (a long line folded by YAML
    could split a form)."""
    texts = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        if path.suffix == ".yaml":
            texts.append(json.dumps(yaml.safe_load(text)))
    return "\n".join(texts)


def _echo(call: FakeCall) -> FakeReply | str:
    """A model that says the key in every field it is asked for (a judge, pairwise judging, a draft, a
    proposal), in every encoding above."""
    properties = (call.schema or {}).get("properties", {})
    if "better" in properties:
        return json.dumps({"reasoning": ECHO, "better": "first"})
    if "persona" in properties:
        return json.dumps({"persona": ECHO, "goal": ECHO, "facts": [ECHO, *ENCODED.values()]})
    if "kind" in properties:
        return json.dumps({"kind": "other", "summary": ECHO, "where": ECHO, "rationale": ECHO})
    if "result" in properties:
        return json.dumps({"reasoning": ECHO, "evidence": [], "result": "fail"})
    return ECHO


def _refusing(call: FakeCall) -> FakeReply:
    """A provider whose error quotes the key it was sent."""
    return FakeReply(status=400, text=f"invalid request for key {KEY} ({ENCODED['base64']})")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(_echo) as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeLLMServer) -> Iterator[Path]:
    """A suite whose anthropic provider is the fake server, its key in ECHO_KEY, and one run of it (made
    without a model: the outcome check fails it). Nothing is registered when the test starts."""
    name = f"echo_bots_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(BOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ECHO_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "chest.yaml").write_text(SCENARIO)
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "asks-arm.yaml").write_text(CRITERION)
    (tmp_path / "pathway.md").write_text(PATHWAY)
    (tmp_path / "suite.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: echoed
            scenarios: {{paths: [scenarios]}}
            bot: {{type: python, factory: "{name}:Bot"}}
            user: {{model: offline}}
            judges: {{paths: [judges], model: null}}
            outcome: {{key: triage_level, levels: [gp, emergency], critical: emergency}}
            runs: 1
            providers:
              anthropic: {{base_url: '{server.base_url}', api_key_env: ECHO_KEY, max_attempts: 1}}
            """
        )
    )
    assert main(["run", "suite.yaml", "--out", "run", "--no-progress"]) == 0
    forget_secrets()  # the run registered them: each command below starts as its own process would
    yield tmp_path
    sys.modules.pop(name, None)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def test_propose_writes_no_key_the_model_echoes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, said = _cli(capsys, "propose", "run", "--out", "proposals", "--model", "anthropic:echo")
    assert code == 0, said
    written = _written(project / "proposals")
    assert "[redacted]" in written  # the model's summary was written, without the key
    assert _leaks(written) == [] and _leaks(said) == []


def test_propose_writes_no_key_a_provider_error_quotes(
    project: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.responder = _refusing
    code, said = _cli(capsys, "propose", "run", "--out", "proposals", "--model", "anthropic:echo")
    assert code == 0, said
    written = _written(project / "proposals")
    assert "invalid request for key [redacted]" in written  # the error is recorded, without the key
    assert _leaks(written) == [] and _leaks(said) == []


def test_judge_pairwise_writes_and_prints_no_key(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["judge-pairwise", "run", "run", "--criterion", "asks-arm", "--judge-model", "anthropic:echo"]
    code, said = _cli(capsys, *args, "--out", "pairs.jsonl")
    assert code == 0, said
    written = (project / "pairs.jsonl").read_text()
    assert "[redacted]" in written
    assert _leaks(written) == [] and _leaks(said) == []


def test_draft_scenario_writes_no_key(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["draft-scenario", "run", "--conversation", "chest-1#0", "--model", "anthropic:echo"]
    code, said = _cli(capsys, *args, "--out", "drafted/draft.yaml")
    assert code == 0, said
    written = _written(project / "drafted")
    assert "[redacted]" in written
    assert _leaks(written) == [] and _leaks(said) == []
    code, said = _cli(capsys, *args)  # printed, not written
    assert code == 0 and "[redacted]" in said and _leaks(said) == []


def test_draft_scenario_prints_no_key_a_provider_error_quotes(
    project: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.responder = _refusing
    args = ["draft-scenario", "run", "--conversation", "chest-1#0", "--model", "anthropic:echo"]
    code, said = _cli(capsys, *args, "--suite", "suite.yaml", "--out", "drafted/draft.yaml")
    assert code == 2 and "[redacted]" in said
    assert _leaks(said) == [] and not (project / "drafted").exists()


def test_draft_from_a_pathway_writes_no_key(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["draft", "suite.yaml", "--pathway", "pathway.md", "--count", "1", "--queue", "queue"]
    code, said = _cli(capsys, *args, "--model", "anthropic:echo")
    assert code == 0, said
    written = _written(project / "queue")
    assert "[redacted]" in written
    assert _leaks(written) == [] and _leaks(said) == []


def test_draft_from_a_pathway_prints_no_key_a_provider_error_quotes(
    project: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.responder = _refusing
    args = ["draft", "suite.yaml", "--pathway", "pathway.md", "--count", "1", "--queue", "queue"]
    code, said = _cli(capsys, *args, "--model", "anthropic:echo")
    assert code == 2 and "[redacted]" in said
    assert _leaks(said) == [] and not (project / "queue").exists()


async def test_pairwise_judging_through_the_api_reads_no_key(project: Path) -> None:
    suite = load_suite(project / "suite.yaml")
    forget_secrets()  # loading a suite registers nothing: the hub made for it does
    criterion = pairwise_criterion(suite, None, "asks-arm")
    folder = RunFolder.open(project / "run")
    pairs = common_conversations(folder, folder, criterion)
    [result] = await judge_pairs(suite, "anthropic:echo", criterion, pairs, None)
    text = result.model_dump_json()
    assert "[redacted]" in text and _leaks(text) == []


class _Person:
    """A person at the desk: says one thing, then is done."""

    def __init__(self) -> None:
        self.said = 0

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        self.said += 1
        return UserMessage("I have pressure in my chest.", done=self.said > 1)


async def test_a_talk_through_the_api_writes_no_key_its_judge_echoes(project: Path) -> None:
    """`atalk` (the desk's talk to the bot) judges with the suite's judge model and writes a run folder."""
    suite = load_suite(project / "suite.yaml", judges={"paths": ["judges"], "model": "anthropic:echo"})
    [scenario] = load_scenarios([project / "scenarios"])
    await atalk(suite, scenario, _Person(), "human:Ada", project / "talk")
    written = _written(project / "talk")
    assert "[redacted]" in written  # the judge's reasoning was written, without the key
    assert _leaks(written) == []


@pytest.mark.parametrize("variable", ["ECHO_KEY", None])
async def test_a_hub_made_without_a_suite_reads_no_key(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, variable: str | None
) -> None:
    """The provider registers the key it reads, from the variable its settings name or its own default
    (ANTHROPIC_API_KEY), before any call: an answer and an error read through the hub hold none."""
    monkeypatch.setenv(variable or "ANTHROPIC_API_KEY", KEY)
    settings = ProviderSettings(base_url=server.base_url, api_key_env=variable, max_attempts=1)
    hub = ModelHub({"anthropic": settings})
    client, model = hub.client("anthropic:echo")
    request = ModelRequest(model=model, messages=[ChatMessage(role="user", content="hello")], max_tokens=50)
    try:
        answer = await client.generate(request)
        assert "[redacted]" in answer.text and _leaks(answer.model_dump_json()) == []
        server.responder = _refusing
        with pytest.raises(ProviderError) as refused:
            await client.generate(request)
    finally:
        await hub.aclose()
    assert "[redacted]" in str(refused.value) and _leaks(str(refused.value)) == []


def test_a_value_registered_again_costs_a_look_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every hub and provider built registers what it reads: a value seen before is not worked out again."""
    worked_out: list[str] = []
    forms = redact_module.secret_forms

    def counted(value: str) -> set[str]:
        worked_out.append(value)
        return forms(value)

    monkeypatch.setattr(redact_module, "secret_forms", counted)
    for _ in range(3):
        register_secrets([KEY, "another-key-42"])
    assert sorted(worked_out) == sorted([KEY, "another-key-42"])


@pytest.mark.parametrize("calls", [[["zq9Wv", "Qw7Er9t"]], [["zq9Wv"], ["Qw7Er9t"]], [["Qw7Er9t", "zq9Wv"]]])
def test_the_shortest_secret_sets_the_text_run_decoded_bytes_are_searched_for(calls: list[list[str]]) -> None:
    """Decoded bytes that are no UTF-8 are searched when they hold a printable run as long as the shortest
    secret: a 7-character secret registered after a 5-character one left the run at 7."""
    for values in calls:
        register_secrets(values)
    blob = base64.b64encode(b"\x80\x81\x82\x83zq9Wv\x84\x85\x86\x87" * 3).decode()
    assert contains_secret(f"data {blob}")
