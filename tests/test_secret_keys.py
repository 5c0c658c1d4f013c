"""A credential held under a key that names it (record/secret_keys.py) is never written: `{"password":
"hunter2"}`, `"apiKey": "..."`, `client_secret=...&`, a PIN as a number, in data and in text (JSON, JSON
inside a JSON string two levels deep, a Python dict's repr, YAML, a form, a header line), by a run (records,
raw exchanges, state, tool calls, bot.log, the manifest, the reports), by the response cache's JSON text and
by import and collect. The value becomes its label's placeholder (`"password": "[PASSWORD]"`), counted by
label; the JSON stays JSON. Usage counts and other look-alikes (`max_tokens`, `token_count`, `tokens`,
`prompt_tokens`, `key`, the manifest's own `redacted: {"password": 1}`) stay as they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.config.assertions import AssertionSpec
from simulator.config.scenario import Scenario
from simulator.judging.criteria import Criterion
from simulator.judging.stage import JudgeStage
from simulator.record.folder import dump_line
from simulator.record.redact import (
    CredentialTally,
    LogRedactor,
    contains_secret,
    forget_secrets,
    redact,
    redact_text,
    redacted_record,
)
from simulator.record.secret_keys import secret_name
from simulator.traces.redact import load_redactor
from tests.support.records import bot_said
from tests.test_run_credentials import _SeeingJudge

# (key, value, placeholder): every spelling of a credential's name, made-up values.
NAMED: list[tuple[str, Any, str]] = [
    ("password", "hunter2", "[PASSWORD]"),
    ("Password", "Tr0ub4dor&3", "[PASSWORD]"),
    ("PASSWORD", "correct horse battery", "[PASSWORD]"),
    ("passwd", "s3cr3t!x", "[PASSWORD]"),
    ("pwd", "abcd1234", "[PASSWORD]"),
    ("db_password", "pg-Secret-77", "[PASSWORD]"),
    ("dbPassword", "pg-Secret-78", "[PASSWORD]"),
    ("new-password", "N3w!pass", "[PASSWORD]"),
    ("passphrase", "mellon friend", "[PASSWORD]"),
    ("pin", 4921, "[PASSWORD]"),
    ("PIN", "0042", "[PASSWORD]"),
    ("passcode", 918273, "[PASSWORD]"),
    ("otp", 552901, "[PASSWORD]"),
    ("card_cvv", 7391, "[PASSWORD]"),
    ("secret", "s3kr1t-value", "[SECRET]"),
    ("client_secret", "cs-9f8e7d6c5b4a", "[SECRET]"),
    ("clientSecret", "cs-1a2b3c4d5e6f", "[SECRET]"),
    ("CLIENT_SECRET", "cs-0a9b8c7d6e5f", "[SECRET]"),
    ("credentials", "user:pa55word", "[SECRET]"),
    ("api_key", "abc123def456", "[API_KEY]"),
    ("apiKey", "abc123def457", "[API_KEY]"),
    ("api-key", "abc123def458", "[API_KEY]"),
    ("X-Api-Key", "abc123def459", "[API_KEY]"),
    ("APIKEY", "abc123def450", "[API_KEY]"),
    ("openai_api_key", "abc123def451", "[API_KEY]"),
    ("access_key", "ak-2b3c4d5e6f7a", "[API_KEY]"),
    ("private_key", "MIIEvQIBADANBgkq", "[PRIVATE_KEY]"),
    ("privateKey", "MIIEvQIBADANBgkr", "[PRIVATE_KEY]"),
    ("token", "tok-7a6b5c4d3e2f", "[TOKEN]"),
    ("access_token", "at-1q2w3e4r5t6y", "[TOKEN]"),
    ("accessToken", "at-7u8i9o0p1q2w", "[TOKEN]"),
    ("refresh_token", "rt-3e4r5t6y7u8i", "[TOKEN]"),
    ("id_token", "it-9o0p1a2s3d4f", "[TOKEN]"),
    ("auth", "user:p4ss", "[TOKEN]"),
    ("authorization", "Basic dXNlcjpwYXNzd29yZA==", "Basic [TOKEN]"),
    ("Authorization", "Token 5g6h7j8k9l0z", "Token [TOKEN]"),
    ("cookie", "session=9x8c7v6b5n4m", "[TOKEN]"),
]
# Keys and values that are not credentials, as a run's records and traces hold them.
NOT_SECRET: dict[str, Any] = {
    "max_tokens": 100,
    "token_count": 12,
    "tokens": 512,
    "prompt_tokens": 241,
    "completion_tokens": 11,
    "input_tokens": 1096,
    "output_tokens": 44,
    "cached_input_tokens": 789,
    "total_tokens": 252,
    "reasoning_tokens": 0,
    "tokens_per_minute": 30000,
    "token_type": "Bearer",
    "key": "triage_level",
    "outcome_key": "triage_level",
    "author": "offline-template",
    "keyboard": "qwerty-layout",
    "pass": "The bot is kind.",
    "result": "pass",
    "spin": 3,
    "password_hint": "your first pet",
    "api_key_env": "OPENAI_API_KEY",
    "is_secret": True,
    "password_set": False,
    "secret": None,
    "token": "",
    "password": 123456,  # a number under a name other than a PIN's is a count (see "redacted" below)
    "redacted": {"password": 2, "token": 1, "api_key": 3},  # the manifest's own counts
    "headers": {"Authorization": "Bearer ${BOT_TOKEN}", "X-Api-Key": "[redacted]"},  # the suite as kept
    "note": "Password reset done; your token expires in 3 days; the key: triage",
}


def _data(key: str, value: Any) -> dict[str, Any]:
    """The credential nested as a bot may send it: in a tool call's arguments, in a list, in its state."""
    return {"parts": [{"type": "tool_call", "name": "login", "arguments": {"user": "ann", key: value}}]}


@pytest.fixture(autouse=True)
def _no_configured_secret() -> None:
    forget_secrets()  # found by its name alone


@pytest.mark.parametrize(("key", "value", "placeholder"), NAMED, ids=[k for k, _, _ in NAMED])
def test_a_value_under_a_credentials_name_is_replaced_in_data(key: str, value: Any, placeholder: str) -> None:
    data = _data(key, value)
    assert contains_secret(json.dumps(data))  # so `dump_line` redacts the record
    redacted = redact(data)
    assert redacted["parts"][0]["arguments"] == {"user": "ann", key: placeholder}
    # As import and collect write it (their own walk, the same rule).
    assert load_redactor(None).value(data)["parts"][0]["arguments"][key] == placeholder
    assert load_redactor(None, enabled=False).value(data)["parts"][0]["arguments"][key] == placeholder


def _forms(key: str, value: Any) -> list[tuple[str, str]]:
    """The credential written in each text form a bot, a tool or a log writes, and what is left of it
    (PLACEHOLDER where the placeholder goes)."""
    plain = {"user": "ann", key: value}
    left = {"user": "ann", key: "PLACEHOLDER"}  # a number becomes text in the same quotes: JSON stays JSON
    forms = [
        (json.dumps(plain), json.dumps(left)),
        # JSON inside a JSON string (a tool call's arguments in a raw exchange), and one level deeper.
        (json.dumps({"arguments": json.dumps(plain)}), json.dumps({"arguments": json.dumps(left)})),
        (
            json.dumps({"body": json.dumps({"arguments": json.dumps(plain)})}),
            json.dumps({"body": json.dumps({"arguments": json.dumps(left)})}),
        ),
        (repr(plain), repr(left)),  # a Python dict printed
        (f"user: ann\n{key}: {value}\nrole: admin", f"user: ann\n{key}: PLACEHOLDER\nrole: admin"),  # YAML
        (f"user=ann&{key}={value}&role=admin", f"user=ann&{key}=PLACEHOLDER&role=admin"),  # a form
    ]
    if isinstance(value, str):
        forms.append((f"{key}: {json.dumps(value)}", f'{key}: "PLACEHOLDER"'))
    return forms


# The text forms where the value is a single word (a YAML, form or quoted value of several words is cut at
# its first space).
ONE_WORD = [(k, v, p) for k, v, p in NAMED if " " not in str(v) and not str(v).startswith(("Basic", "Token"))]


@pytest.mark.parametrize(("key", "value", "placeholder"), ONE_WORD, ids=[k for k, _, _ in ONE_WORD])
def test_a_value_under_a_credentials_name_is_replaced_in_every_text_form(
    key: str, value: Any, placeholder: str
) -> None:
    for number, (text, left) in enumerate(_forms(key, value)):
        expected = left.replace("PLACEHOLDER", placeholder)
        assert redact(text) == expected, text
        assert redact_text(text) == expected, text
        assert load_redactor(None, enabled=False).text(text) == expected, text  # import, collect
        assert str(value) not in load_redactor(None).text(text)  # a PIN may be a [PHONE] there first
        if number < 3:
            json.loads(redact_text(text))  # JSON stays JSON


def test_a_header_line_prose_and_an_escaped_newline_keep_the_name_and_the_scheme() -> None:
    for text, left in [
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [TOKEN]"),
        ("X-Api-Key: abc123def456\r\nAccept: */*", "X-Api-Key: [API_KEY]\r\nAccept: */*"),
        ("here is the API key: abc123def456 for you", "here is the API key: [API_KEY] for you"),
        ("export DB_PASSWORD=pg-Secret-77", "export DB_PASSWORD=[PASSWORD]"),
        ("{password: hunter2, user: ann}", "{password: [PASSWORD], user: ann}"),
        ("password=hunter2&user=ann", "password=[PASSWORD]&user=ann"),  # the next field of a form stays
        ("first line\\ntoken: tok-7a6b5c4d3e2f", "first line\\ntoken: [TOKEN]"),  # in JSON text
        ("curl -H 'x-api-key:abc123def456'", "curl -H 'x-api-key:[API_KEY]'"),
        ('password: "two words"', 'password: "[PASSWORD]"'),
    ]:
        assert redact(text) == left, text


def test_a_list_of_values_under_a_credentials_name_is_replaced_item_by_item() -> None:
    data = {"credentials": ["k1-abcdef", "k2-ghijkl"], "pins": [1, 2], "pin": [1234, 5678]}
    redacted = {"credentials": ["[SECRET]", "[SECRET]"], "pins": [1, 2], "pin": ["[PASSWORD]", "[PASSWORD]"]}
    assert redact(data) == redacted
    assert json.loads(redact_text(json.dumps(data))) == redacted


def test_look_alikes_that_are_no_credentials_stay_as_they_are() -> None:
    for key in NOT_SECRET:
        if key not in ("secret", "token", "password", "is_secret", "password_set", "redacted", "headers"):
            assert secret_name(key) is None, key
    text = json.dumps(NOT_SECRET)
    assert not contains_secret(text)
    assert redact(NOT_SECRET) == NOT_SECRET
    assert redact_text(text) == text
    assert load_redactor(None, enabled=False).value(NOT_SECRET) == NOT_SECRET
    for form in ("max_tokens=100&tokens=512", "tokens: 512\nmax_tokens: 100", "if token == expected: ok"):
        assert redact(form) == form


def test_redacting_twice_changes_nothing_and_the_json_stays_json() -> None:
    nasty = {"password": 'ab"cd\\', "api_key": "x\\u0041y", "token": "\\", "pin": -12.5e3, "user": "ann"}
    for data in (nasty, *(_data(k, v) for k, v, _ in NAMED)):
        once = redact(data)
        assert redact(once) == once
        for text in (json.dumps(data), json.dumps({"inner": json.dumps(data)})):
            replaced = redact_text(text)
            assert redact_text(replaced) == replaced
            json.loads(replaced)
            assert 'ab\\\\"cd' not in replaced and "hunter2" not in replaced
    assert json.loads(redact_text(json.dumps(nasty))) == {
        "password": "[PASSWORD]",
        "api_key": "[API_KEY]",
        "token": "[TOKEN]",
        "pin": "[PASSWORD]",
        "user": "ann",
    }
    clean = bot_said(["your token expires in 3 days"], {"max_tokens": 100, "password": "[PASSWORD]"})
    assert redacted_record(clean) is clean


def test_each_different_credential_is_counted_once_by_its_label() -> None:
    tally = CredentialTally()
    redact({"password": "hunter2", "login": {"pwd": "hunter2"}, "api_key": "abc123def456"})
    redact('{"password": "hunter2", "token": "tok-1"}')
    redact("client_secret=cs-9f8e7d6c5b4a&pin=4921")
    assert tally.counts() == {"api_key": 1, "password": 2, "secret": 1, "token": 1}


def test_a_started_bots_log_line_holding_one_is_written_without_it() -> None:
    log = LogRedactor()
    assert log.line('connecting {"user": "ann", "password": "pg-Secret-77"}') == (
        'connecting {"user": "ann", "password": "[PASSWORD]"}'
    )
    assert log.line("DB_PASSWORD=pg-Secret-77 API_TOKEN=tok-7a6b5c4d3e2f") == (
        "DB_PASSWORD=[PASSWORD] API_TOKEN=[TOKEN]"
    )


def test_import_and_collect_count_what_they_replaced_by_label() -> None:
    redactor = load_redactor(None)
    attributes = {
        "gen_ai.tool.call.arguments": json.dumps({"username": "ann", "password": "hunter2"}),
        "gen_ai.usage.input_tokens": 241,
        "args": {"api_key": "abc123def456"},
    }
    assert redactor.value(attributes) == {
        "gen_ai.tool.call.arguments": json.dumps({"username": "ann", "password": "[PASSWORD]"}),
        "gen_ai.usage.input_tokens": 241,
        "args": {"api_key": "[API_KEY]"},
    }
    assert redactor.counts == {"password": 1, "api_key": 1}


async def test_a_judge_is_shown_the_placeholder_and_a_check_in_code_still_reads_the_value() -> None:
    record = bot_said(
        ['Logged in with {"username": "ann", "password": "hunter2"}'], {"api_key": "abc123def456"}
    )
    criterion = Criterion.model_validate(
        {"id": "kind", "criterion": "The bot is kind.", "pass": "kind", "fail": "unkind", "severity": "minor"}
    )
    scenario = Scenario(id="s", persona="p", goal="g", assertions=AssertionSpec(must_not_match="hunter2"))
    judge = _SeeingJudge()
    stage = JudgeStage([criterion], judge, "h", [scenario], {}, [], jury=[judge])
    verdicts = {v.criterion_id: v for v in await stage.judge(record, scenario, set())}
    assert verdicts["assertions"].result == "fail"  # what the bot said, read by the check
    ((shown, block),) = judge.shown
    for text in (block, shown.model_dump_json()):
        assert "hunter2" not in text and "abc123def456" not in text
    assert '\\"password\\": \\"[PASSWORD]\\"' in shown.model_dump_json()
    assert dump_line(shown) == dump_line(record)


# A python bot that says, passes to a tool and keeps in its state credentials under their names.
BOT = """
from simulator.bots import Reply

PASSWORD, KEY, PIN, TOKEN = SECRETS


class Bot:
    def send(self, text):
        return Reply(
            parts=[
                'Done: {"user": "ann", "password": "' + PASSWORD + '"}',
                "client_secret=" + KEY + "&scope=read",
                {"type": "tool_call", "name": "pay", "id": "c1", "arguments": {"card": "visa", "pin": PIN},
                 "result": {"ok": True, "receipt": '{"accessToken": "' + TOKEN + '"}'}},
            ],
            closed=True,
            state={"triage_level": "emergency", "login": {"user": "ann", "apiKey": KEY},
                   "usage": {"prompt_tokens": 12, "max_tokens": 100}},
        )


def make():
    return Bot()
"""


def test_a_run_writes_no_value_under_a_credentials_name_in_any_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = ("Hunter-2-pw", "cs-9f8e7d6c5b4a", 4921, "at-1q2w3e4r5t6y")
    (tmp_path / "keyvalue_bot.py").write_text(BOT.replace("SECRETS", repr(secrets)))
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = tmp_path / "suite"
    suite.mkdir()
    # The check in code reads what the bot said (the password's end), not the placeholder.
    (suite / "chest.yaml").write_text(
        "id: chest-1\npersona: a man of 52.\ngoal: Ask about chest pain.\nmax_turns: 1\n"
        "expected: {triage_level: emergency}\nassertions: {must_not_match: 'pw\"'}\n"
    )
    (suite / "suite.yaml").write_text(
        "name: keyvalue\nscenarios: {paths: ['.']}\nbot: {type: python, factory: 'keyvalue_bot:make'}\n"
        "user: {model: offline}\nruns: 1\n"
        "outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}\n"
    )
    out, reports = tmp_path / "run", tmp_path / "reports"
    reports.mkdir()
    main(["run", str(suite / "suite.yaml"), "--out", str(out), "--no-progress"])
    main(["report", str(out), "--html", str(reports / "r.html"), "--json", str(reports / "r.json")])
    written = "\n".join(
        p.read_text(errors="replace") for d in (out, reports) for p in d.rglob("*") if p.is_file()
    )
    for secret in map(str, secrets):
        assert secret not in written, secret
    (record,) = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert record["stop_reason"] == "bot_closed", record.get("error")
    parts = record["turns"][1]["parts"]
    assert parts[0]["text"] == 'Done: {"user": "ann", "password": "[PASSWORD]"}'
    assert parts[1]["text"] == "client_secret=[SECRET]&scope=read"
    assert parts[2]["arguments"] == {"card": "visa", "pin": "[PASSWORD]"}
    assert parts[2]["result"]["receipt"] == '{"accessToken": "[TOKEN]"}'
    assert record["final_state"] == {
        "triage_level": "emergency",
        "login": {"user": "ann", "apiKey": "[API_KEY]"},
        "usage": {"prompt_tokens": 12, "max_tokens": 100},
    }
    (session,) = json.loads((out / "manifest.json").read_text())["sessions"]
    # The client secret, said again as `apiKey`, counts under each label it was found under.
    assert session["redacted"] == {"api_key": 1, "password": 2, "secret": 1, "token": 1}
    verdicts = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    (check,) = [v for v in verdicts if v["criterion_id"] == "assertions"]
    assert check["result"] == "fail"  # the check in code read what the bot said
