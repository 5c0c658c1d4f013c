"""Credentials in well-known formats (record/redact.py CREDENTIALS) that the engine was never configured
with are never written by a run either: a python bot says each in its replies, holds one in its state and
one in a tool result, and a started HTTP bot says them, holds one in its state and prints them to its log
(a private key over several lines). No file under the run folder (records, raw exchanges, verdicts,
bot.log, the manifest) nor the HTML and JSON reports shows one, in plain or in any encoding the known-value
search covers; each is its typed placeholder, the name before it kept. A scenario's `must_not_match` on a
key still fails when the bot says one (the checks in code read what it said), its verdict quoting the
placeholder; a judge model (the criteria's, the outcome judge, the fidelity audit) is shown the record as it
is written. The near-misses (ordinary words, trace ids, hex hashes, `sk-learn`) and a scenario's phone
number stay, redacting twice changes nothing, and the manifest's session counts the
different credentials it replaced."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.config.assertions import AssertionSpec
from simulator.config.scenario import Scenario
from simulator.judging.criteria import Criterion
from simulator.judging.fidelity import FidelityAuditor
from simulator.judging.outcome_judge import OutcomeJudge
from simulator.judging.stage import JudgeStage
from simulator.providers.base import ModelRequest, ProviderError
from simulator.record.folder import dump_line
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.redact import (
    CREDENTIALS,
    MAX_KEY_LINES,
    LogRedactor,
    credential_placeholder,
    forget_secrets,
    redact,
    redact_text,
    redacted_record,
    register_secrets,
    secret_forms,
)
from simulator.record.transcript import Turn
from tests.support.records import bot_said
from tests.test_redaction_credentials import FORMATS, NEAR_MISSES

PHONE = "+44 7700 900123"
SHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
KEPT = [*NEAR_MISSES, SHA256, f"call {PHONE}"]
# The scenario's check in code that no OpenAI project key is said: it must fail when the bot says one.
LEAK_CHECK = r"sk-proj-[A-Za-z0-9]{10,}"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# The different credentials in FORMATS, by label (two AWS key ids and two Stripe keys share a case).
DIFFERENT = {"api_key": 13, "aws_secret_key": 1, "password": 4, "private_key": 1, "token": 2}

BOT = """
from simulator.bots import Reply

SAID = {said!r}
KEPT = {kept!r}


class Bot:
    def __init__(self):
        self.turn = 0

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            return Reply(list(SAID.values()))
        return Reply(
            parts=[
                *KEPT,
                {{"type": "tool_call", "name": "lookup", "arguments": {{"q": SAID["github"]}}, "id": "c1",
                  "result": {{"found": SAID["stripe"], "note": SAID["bearer"]}}}},
            ],
            closed=True,
            state={{"triage_level": "emergency", "login": SAID["password_is"], "jwt": SAID["jwt"]}},
        )


def make():
    return Bot()
"""

# An http bot (docs/bots.md): POST {conversation_id, turn, message}, answered {messages, state, closed}. It
# prints each credential to its output as it is, the private key over three lines (bot.log).
HTTP_BOT = """
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

SAID = {said!r}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        for text in SAID.values():
            print("bot log:", text, flush=True)
        body = json.dumps({{
            "messages": list(SAID.values()),
            "state": {{"triage_level": "emergency", "key": SAID["openai"], "turn": request["turn"]}},
            "closed": True,
        }}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

_RUNS: dict[str, tuple[Path, str]] = {}
SAID = {case: said for case, (said, _, _) in FORMATS.items()}


def _suite(folder: Path, bot: str) -> Path:
    folder.mkdir()
    (folder / "chest.yaml").write_text(
        f"id: chest-1\npersona: a man of 52, phone {PHONE}.\ngoal: Ask about chest pain.\n"
        "facts: [Pressure in the chest.]\nmax_turns: 2\nexpected: {triage_level: emergency}\n"
        f"assertions: {{must_not_match: '{LEAK_CHECK}'}}\n"
    )
    (folder / "suite.yaml").write_text(
        f"name: creds\nscenarios: {{paths: ['.']}}\n{bot}user: {{model: offline}}\nruns: 1\n"
        "outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}\n"
    )
    return folder / "suite.yaml"


def _run(
    kind: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str]:
    """One run of the `kind` bot (python, or an http bot the suite starts) and its reports: once per test
    process. Returns the run folder and the text of every file written."""
    if kind not in _RUNS:
        base = tmp_path_factory.mktemp(f"creds-{kind}")
        if kind == "python":
            (base / "creds_bot.py").write_text(BOT.format(said=SAID, kept=KEPT))
            monkeypatch.syspath_prepend(str(base))
            bot = "bot: {type: python, factory: 'creds_bot:make'}\n"
        else:
            (base / "creds_http_bot.py").write_text(HTTP_BOT.format(said=SAID))
            command = json.dumps(["{python}", str(base / "creds_http_bot.py"), "{port}"])
            bot = f"bot:\n  type: http\n  url: http://127.0.0.1:{{port}}/chat\n  start: {{command: {command}}}\n"
        suite, out, reports = _suite(base / "suite", bot), base / "run", base / "reports"
        reports.mkdir()
        forget_secrets()  # no configured secret: the credentials are found by their format alone
        main(["run", str(suite), "--out", str(out), "--no-progress"])
        main(["report", str(out), "--html", str(reports / "r.html"), "--json", str(reports / "r.json")])
        files = [p for d in (out, reports) for p in sorted(d.rglob("*")) if p.is_file()]
        _RUNS[kind] = (out, "\n".join(p.read_bytes().decode("utf-8", "replace") for p in files))
    return _RUNS[kind]


def _shown(text: str, secret: str) -> list[str]:
    """The forms of `secret` (as it is, escaped in JSON or HTML, percent-encoded, hex, base32/64/85 ...)
    that `text` holds."""
    return [form for form in secret_forms(secret) if form in text]


def _lines(out: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / name).read_text().splitlines()]


def _verdict(out: Path, criterion: str) -> dict[str, Any]:
    (verdict,) = [v for v in _lines(out, "verdicts.jsonl") if v["criterion_id"] == criterion]
    return verdict


@pytest.mark.parametrize("case", sorted(FORMATS))
def test_a_python_bot_that_says_a_credential_leaves_it_in_no_file(
    case: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, written = _run("python", tmp_path_factory, monkeypatch)
    _, secret, left = FORMATS[case]
    assert not _shown(written, secret)
    (record,) = _lines(out, "conversations.jsonl")
    assert record["stop_reason"] == "bot_closed", record.get("error")
    assert json.dumps(left)[1:-1] in json.dumps(record)  # the placeholder, the name before it kept


@pytest.mark.parametrize("case", sorted(FORMATS))
def test_a_started_http_bot_that_says_and_logs_a_credential_leaves_it_in_no_file(
    case: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, written = _run("http", tmp_path_factory, monkeypatch)
    _, secret, left = FORMATS[case]
    assert not _shown(written, secret)
    (record,) = _lines(out, "conversations.jsonl")
    assert record["stop_reason"] == "bot_closed", record.get("error")
    assert record["final_state"] == {"triage_level": "emergency", "key": "key: [API_KEY]", "turn": 0}
    assert json.dumps(left)[1:-1] in json.dumps(record["turns"][1]["parts"])  # what the bot said
    assert json.dumps(left)[1:-1] in json.dumps(record["turns"][1]["raw"])  # and its raw answer
    log = (out / "bot.log").read_text()
    assert f"bot log: {left.splitlines()[0]}\n" in log
    assert _verdict(out, "outcome.triage_level")["result"] == "pass"


def test_a_private_key_printed_over_several_lines_is_replaced_line_by_line_in_bot_log(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, _ = _run("http", tmp_path_factory, monkeypatch)
    log = (out / "bot.log").read_text()
    assert (
        "bot log: [PRIVATE_KEY]\n[PRIVATE_KEY]\n[PRIVATE_KEY]\nbot log: Authorization: Bearer [TOKEN]\n"
        in log
    )
    redactor = LogRedactor()
    lines = ["boot", "key -----BEGIN RSA PRIVATE KEY-----", "MIIEow", "", "-----END RSA PRIVATE KEY----- ok"]
    assert [redactor.line(line) for line in [*lines, "ready"]] == [
        "boot",
        "key [PRIVATE_KEY]",
        "[PRIVATE_KEY]",
        "[PRIVATE_KEY]",
        "[PRIVATE_KEY] ok",
        "ready",
    ]
    stray = LogRedactor()  # a BEGIN line with no key after it blanks MAX_KEY_LINES lines, not the whole log
    shown = [stray.line(line) for line in ["-----BEGIN PRIVATE KEY----- is what we look for", *["x"] * 300]]
    assert shown.count("[PRIVATE_KEY]") == MAX_KEY_LINES and shown[-1] == "x"


def test_near_misses_and_a_phone_number_stay_and_the_session_counts_the_credentials(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for kind in ("python", "http"):
        out, _ = _run(kind, tmp_path_factory, monkeypatch)
        (session,) = json.loads((out / "manifest.json").read_text())["sessions"]
        assert session["redacted"] == DIFFERENT, kind  # each run counts its own, the same key once
    out, _ = _run("python", tmp_path_factory, monkeypatch)
    lines = (out / "conversations.jsonl").read_text()
    for text in KEPT:
        assert json.dumps(text)[1:-1] in lines, text  # the phone number too: personal data is test data here


def test_a_check_in_code_for_a_leaked_key_still_fails_and_its_verdict_quotes_the_placeholder(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for kind in ("python", "http"):
        out, _ = _run(kind, tmp_path_factory, monkeypatch)
        verdict = _verdict(out, "assertions")
        assert verdict["result"] == "fail", (kind, verdict["reasoning"])
        assert "[API_KEY]" in verdict["reasoning"], kind


class _SeeingJudge:
    """A judge model that records what it was shown and passes."""

    def __init__(self) -> None:
        self.shown: list[tuple[ConversationRecord, str]] = []

    async def judge(self, record: ConversationRecord, criterion: Criterion, block: str) -> Verdict:
        self.shown.append((record, block))
        return Verdict(
            conversation_id=record.id,
            scenario_id=record.scenario_id,
            repeat=record.repeat,
            criterion_id=criterion.id,
            kind="llm",
            result="pass",
            judge_set_hash="h",
            reasoning="ok",
        )


async def test_a_judge_model_is_shown_the_record_as_written_and_the_checks_in_code_what_was_said() -> None:
    said, secret, _ = FORMATS["openai"]
    record = bot_said([said, FORMATS["password_is"][0], FORMATS["pem"][0]])
    criterion = Criterion.model_validate(
        {"id": "kind", "criterion": "The bot is kind.", "pass": "kind", "fail": "unkind", "severity": "minor"}
    )
    scenario = Scenario(id="s", persona="p", goal="g", assertions=AssertionSpec(must_not_match=LEAK_CHECK))
    judge = _SeeingJudge()
    stage = JudgeStage([criterion], judge, "h", [scenario], {}, [], jury=[judge])
    verdicts = {v.criterion_id: v for v in await stage.judge(record, scenario, set())}
    assert verdicts["assertions"].result == "fail" and verdicts["kind"].result == "pass"
    ((shown, block),) = judge.shown
    for text in (block, shown.model_dump_json()):
        assert secret not in text and "hunter2" not in text and "b3BlbnNzaC1" not in text
        assert "key: [API_KEY]" in text and "my password is [PASSWORD] thanks" in text
    assert dump_line(shown) == dump_line(record)  # what the judge saw is what is written


class _SeeingClient:
    """A model client that records each request and fails it (the caller records the failure)."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        raise ProviderError("permanent", "no model here")


async def test_the_outcome_judge_and_the_fidelity_audit_are_shown_the_record_as_written() -> None:
    said, secret, _ = FORMATS["github"]
    record = bot_said([f"Call 999 now. {said}"], {"triage_level": "emergency"})
    record.turns.insert(0, Turn(index=0, role="user", messages=[FORMATS["password_is"][0]], started_at=NOW))
    client = _SeeingClient()
    reading = await OutcomeJudge(client, "m", "m", ["gp", "emergency"]).read(record)
    assert reading.value == "error"
    audit = await FidelityAuditor(client, "m", "m").audit(
        record, Scenario(id="s", persona="p", goal="g"), None
    )
    assert audit.verdicts
    assert len(client.requests) == 2  # one each
    for request in client.requests:
        shown = request.model_dump_json()
        assert secret not in shown and "hunter2" not in shown, shown
        assert "token [API_KEY]" in shown and "my password is [PASSWORD] thanks" in shown


def test_redacting_twice_changes_nothing_and_a_clean_record_is_the_same_object() -> None:
    forget_secrets()
    for said, _, left in FORMATS.values():
        assert redact(said) == left  # as import and collect replace it
    register_secrets(["hunter2-Secret"])  # a configured secret keeps `[redacted]`, not a format's label
    try:
        assert redact("my password is hunter2-Secret! thanks") == "my password is [redacted]! thanks"
        for said, _, _ in FORMATS.values():
            for text in (said, f"{said}.", f"{said}!", f"({said}), ok"):
                once = redact(text)
                assert redact(once) == once, text
                json_text = json.dumps({"said": text, "again": once})
                assert redact_text(redact_text(json_text)) == redact_text(json_text)
    finally:
        forget_secrets()
    clean = bot_said([*KEPT, "password is [PASSWORD]. Bearer [TOKEN], [API_KEY]"], {"triage_level": "gp"})
    assert redacted_record(clean) is clean
    assert dump_line(clean) == clean.model_dump_json(exclude_none=True) + "\n"


@pytest.mark.parametrize("end", ['"', "\\", '\\"x', "\\\\", "\\n next"])
def test_a_credential_replaced_inside_json_text_leaves_it_json(end: str) -> None:
    """The response cache redacts the JSON text it stores: a password or a cut private key that ends at an
    escape must not take half of it (a string left open, a quote unescaped)."""
    for text in (f"password: abcdef{end}", f"-----BEGIN RSA PRIVATE KEY-----MIIEow{end}"):
        json_text = json.dumps({"text": text, "at": datetime(2026, 1, 1, tzinfo=UTC).isoformat()})
        redacted = json.loads(redact_text(json_text))
        assert "abcdef" not in redacted["text"] and "MIIEow" not in redacted["text"], redacted
        assert redacted["at"] == "2026-01-01T00:00:00+00:00"


def test_credentials_are_replaced_as_one_search_for_every_format_would_replace_them() -> None:
    """`redact` tries the patterns only where a credential may start: the same result as one search."""
    every = re.compile("|".join(f"(?P<{label}>{regex})" for label, regex in CREDENTIALS.items()))
    said = [said for said, _, _ in FORMATS.values()]
    texts = [
        *said,
        *NEAR_MISSES,
        " ".join(said),
        "\n".join(reversed(said)),
        "sk------BEGIN RSA PRIVATE KEY-----MIIEow-----END RSA PRIVATE KEY-----",  # a key inside a start
        "xoxsk-proj-abcDEF123ghiJKL456mnoPQR789 and (sk-proj-abcDEF123ghiJKL456mnoPQR789)",
        "PAſSWORD is hunter22, BEARER eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln, AWS secret key: " + "A" * 40,
        "the high-risk-06 task-list: ask-a-nurse, paws and laws, a bearer of news",
        "PASSWORD: Xy12345678; pAsSwOrD is hunter2x, Passphrase = correct-horse; PWD=abcd1234",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3x7Lm9Pq, bearer abcdefghijklmnop1234",
        "gho_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8N rk_test_51HxQrStUvWxYz012345 xoxp-1-2-3-abcdefghij",
    ]
    forget_secrets()
    for text in texts:
        expected = every.sub(lambda m: credential_placeholder(str(m.lastgroup), m.group(0)), text)
        assert redact(text) == expected, text
