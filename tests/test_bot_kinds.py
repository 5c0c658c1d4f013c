"""Bot kinds are registered, not switched on: the registry's lookups and messages, a suite's `bot:` validated
by the kind its `type` names, the editor schema built from the registry, and two guard rails: no switch on a
bot's type outside bots/ and the registry, and no secret-looking config field without a declaration."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel, Field

from simulator.config.bot_kinds import (
    BOT_KINDS,
    EDITABLE_PROMPT,
    ENVIRONMENT,
    LIMIT_FIELDS,
    MODEL,
    BotConfig,
    BotKind,
    bot_kind,
    bot_kinds,
    engine_model,
    kinds_with,
    prompted,
    register_bot_kind,
    validate_bot,
)
from simulator.config.providers import ProviderSettings
from simulator.config.schemas import json_schema
from simulator.config.secrets import REDACTED, SecretEnv, SecretURL, secret_of
from simulator.config.suite import Suite, load_suite
from simulator.errors import UserError
from simulator.record.redact import redacted_suite, suite_secrets
from simulator.registry import Registry
from tests.support.source import modules, source_text, walked

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "simulator"


# --- the registry -------------------------------------------------------------------------------------


def test_an_unknown_name_is_a_user_error_with_a_did_you_mean_and_every_name() -> None:
    registry: Registry[str] = Registry("widget")
    registry.register("gauge", "a", source="here")
    registry.register("dial", "b", source="here")
    for name, hint in (("gauje", "did you mean 'gauge'? "), ("dail", "did you mean 'dial'? "), ("zzz", "")):
        with pytest.raises(UserError) as caught:
            registry.get(name)
        assert str(caught.value) == f"unknown widget '{name}'; {hint}widgets: gauge, dial"
    assert registry.get("dial") == "b" and "gauge" in registry and "nope" not in registry


def test_a_name_taken_by_another_module_is_refused_and_the_same_module_replaces_its_own() -> None:
    registry: Registry[str] = Registry("widget")
    registry.register("gauge", "a", source="one")
    registry.register("gauge", "a2", source="one")  # the module imported anew
    assert registry.get("gauge") == "a2"
    with pytest.raises(ValueError, match="registered already by one"):
        registry.register("gauge", "b", source="two")
    registry.unregister("gauge")
    assert registry.names() == []


def test_a_kind_whose_config_type_is_another_name_is_refused() -> None:
    class Mismatched(BotConfig):
        type: Literal["other"] = "other"

    with pytest.raises(ValueError, match="must default to 'mismatched'"):
        register_bot_kind(BotKind("mismatched", Mismatched, "x:y"))
    assert "mismatched" not in BOT_KINDS


def test_the_built_in_kinds_load_on_the_first_lookup_not_on_import_or_help() -> None:
    """A lookup imports the built-in modules up to the one that registers the name (a run looks up one
    type); listing the kinds, or a name that is not built in, imports them all."""
    probe = (
        "import sys\n"
        "import simulator.config.suite\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.startswith(('simulator.config.bots', 'simulator.voice')))\n"
        "print(loaded())\n"
        "from simulator.config.bot_kinds import bot_kind, bot_kinds, validate_bot\n"
        "bot_kind('http')\n"
        "print(loaded())\n"
        "validate_bot({'type': 'http', 'url': 'http://127.0.0.1:1/chat'})\n"
        "print(loaded())\n"
        "print(bot_kind('whatsapp').name, loaded())\n"
        "print(len(bot_kinds()), loaded())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    before, looked_up, validated, whatsapp, listed = done.stdout.splitlines()
    assert before == "[]"  # nothing before the lookup
    assert looked_up == validated == "['simulator.config.bots']"
    assert whatsapp.startswith("whatsapp [") and "'simulator.config.bots.whatsapp'" in whatsapp
    assert "'simulator.voice.config'" not in whatsapp
    assert "'simulator.voice.config'" in listed and "'simulator.config.bots.in_code'" in listed
    helped = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "simulator", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert helped.returncode == 0 and "simulator.config.bot" not in helped.stderr


# --- a suite's bot ------------------------------------------------------------------------------------


def _problems(tmp_path: Path, text: str) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_suite(path)
    return caught.value.render()


@pytest.mark.parametrize(
    ("bot", "expected"),
    [
        (
            "  type: htp\n  url: http://x\n",
            "suite.yaml:2 [bot.type]: unknown bot type 'htp'; did you mean 'http'?",
        ),
        (
            "  type: chatt\n  model: a:b\n",
            "suite.yaml:2 [bot.type]: unknown bot type 'chatt'; did you mean 'chat'?",
        ),
        (
            "  url: http://x\n",
            "suite.yaml:1 [bot.type]: missing `type`; add one of the bot types: python, http",
        ),
        ("  type: http\n  ur: http://x\n", "suite.yaml:3 [bot.ur]: unknown key 'ur'; did you mean 'url'?"),
        (
            "  type: http\n  url: http://x\n  timeout: 3\n",
            "suite.yaml:4 [bot.timeout]: unknown key 'timeout'; did",
        ),
        ("  type: http\n", "suite.yaml:1 [bot.url]: missing required field 'url'; add it"),
        ("  type: chat\n  model: a:b\n", "[bot]: a chat bot needs system_prompt or system_prompt_file"),
        (
            "  type: python\n  factory: nope\n",
            "suite.yaml:3 [bot.factory]: should be a module and a name in it",
        ),
    ],
)
def test_a_bots_mistakes_name_the_line_the_field_and_the_fix(tmp_path: Path, bot: str, expected: str) -> None:
    assert expected in _problems(tmp_path, "bot:\n" + bot)


def test_an_unknown_bot_type_lists_every_registered_type(tmp_path: Path) -> None:
    rendered = _problems(tmp_path, "bot: {type: ftp}\n")
    assert f"bot types: {', '.join(BOT_KINDS.names())}" in rendered
    assert "bot a mapping" not in _problems(tmp_path, "bot: http\n")
    assert "a bot is a mapping with a `type`" in _problems(tmp_path, "bot: http\n")


def test_a_matrix_variant_of_an_unknown_type_gets_the_same_message(tmp_path: Path) -> None:
    rendered = _problems(
        tmp_path,
        "bot: {type: python, factory: 'm:f'}\nmatrix:\n  bots:\n    - id: a\n      bot: {type: pyton}\n",
    )
    assert "[matrix.bots[1].bot]: unknown bot type 'pyton'; did you mean 'python'?" in rendered


def test_a_bot_without_the_environment_capability_is_refused_beside_an_environment(tmp_path: Path) -> None:
    suite = (
        "bot: {type: whatsapp, webhook_url: 'http://localhost:1/hook'}\n"
        "environment:\n  tools:\n    look: {description: Look., function: 'examples.clinic_env.tools:lookup_patient'}\n"
    )
    rendered = _problems(tmp_path, suite)
    able = kinds_with(ENVIRONMENT)
    assert able[:3] == ["python", "http", "chat"] and "callable" not in able
    assert (
        "a whatsapp bot cannot call the environment's tools: use a python, http, chat or openai_endpoint bot"
        in rendered
    )


def test_a_suite_validates_dumps_and_reads_back_each_kind() -> None:
    configs: list[dict[str, Any]] = [
        {"type": "python", "factory": "m:f"},
        {"type": "http", "url": "http://x/", "headers": {"A": "${V}"}, "timeout_s": 5},
        {"type": "chat", "model": "openai:m", "system_prompt": "hi", "decision_tool": {"values": ["a"]}},
        {"type": "whatsapp", "webhook_url": "http://x/hook"},
        {"type": "openai_endpoint", "base_url": "http://x/v1", "model": "m"},
        {"type": "callable", "name": "f"},
    ]
    for config in configs:
        suite = Suite.model_validate({"bot": config})
        assert type(suite.bot) is bot_kind(config["type"]).config
        assert suite.model_dump(exclude_unset=True)["bot"] == config  # dumped as its own kind's fields
        again = Suite.model_validate_json(suite.model_dump_json())
        assert again.bot == suite.bot
    assert validate_bot(suite.bot) is suite.bot  # a config is taken as it is


def test_the_editor_schema_lists_every_registered_kind_with_its_fields() -> None:
    class Probe(BotConfig):
        type: Literal["probe"] = "probe"
        dial: int = 0

    register_bot_kind(BotKind("probe", Probe, "x:y"))
    try:
        schema = json_schema("suite")
        bot = schema["properties"]["bot"]
        assert set(bot["discriminator"]["mapping"]) == set(BOT_KINDS.names())
        assert len(bot["oneOf"]) == len(bot_kinds())
        assert schema["$defs"]["Probe"]["properties"]["dial"] == {
            "default": 0,
            "title": "Dial",
            "type": "integer",
        }
        assert "webhook_url" in schema["$defs"]["WhatsAppBotConfig"]["properties"]
    finally:
        BOT_KINDS.unregister("probe")
    assert "probe" not in json_schema("suite")["properties"]["bot"]["discriminator"]["mapping"]


def test_capabilities_answer_what_the_core_asks() -> None:
    chat = validate_bot({"type": "chat", "model": "openai:m", "system_prompt_file": "p.txt"})
    http = validate_bot({"type": "http", "url": "http://x/"})
    endpoint = validate_bot({"type": "openai_endpoint", "base_url": "http://x/v1", "model": "m"})
    assert engine_model(chat) == "openai:m" and engine_model(http) is None and engine_model(endpoint) is None
    assert prompted(chat) is chat and prompted(http) is None
    assert chat.has(EDITABLE_PROMPT) and chat.has(MODEL) and not endpoint.has(MODEL)
    assert chat.declared_state_keys() == set() and http.declared_state_keys() is None
    assert type(http).operational == LIMIT_FIELDS | {"timeout_s"} and type(chat).operational == LIMIT_FIELDS


# --- guard: no switch on a bot's type outside bots/ and the registry ---------------------------------

# Where a kind may be named: the adapters, the registry and the kinds' own config modules.
_KIND_HOMES = ("bots/", "config/bot_kinds.py", "config/bots/")


def _botish(node: ast.AST) -> bool:
    """An expression naming a bot: `bot`, `suite.bot`, `copy.bot`, `chat_bot`..."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "bot" in name.lower()


def _is_bot_type(node: ast.AST) -> bool:
    """`<bot>.type`, `<x>.bot_type`, `bot_type`, or `getattr(<bot>, "type")`."""
    if isinstance(node, ast.Attribute):
        return (node.attr == "type" and _botish(node.value)) or node.attr == "bot_type"
    if isinstance(node, ast.Name):
        return node.id == "bot_type"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
        args = node.args
        return (
            len(args) >= 2
            and _botish(args[0])
            and isinstance(args[1], ast.Constant)
            and args[1].value == "type"
        )
    return False


def switches_on_bot_type(source: str) -> list[int]:
    """Lines that branch on a bot's type: compare it, match on it, index by it, or test a kind's class."""
    lines = []
    for node in walked(source):
        if (
            (isinstance(node, ast.Compare) and any(_is_bot_type(n) for n in (node.left, *node.comparators)))
            or (isinstance(node, ast.Match) and _is_bot_type(node.subject))
            or (isinstance(node, ast.Subscript) and _is_bot_type(node.slice))
            or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
                and _is_bot_type(node.args[0])
            )
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            kinds = node.args[1] if len(node.args) == 2 else None
            names = [kinds] if not isinstance(kinds, ast.Tuple) else list(kinds.elts)
            if any(isinstance(n, ast.Name) and re.fullmatch(r"\w+BotConfig", n.id) for n in names):
                lines.append(node.lineno)
    return sorted(lines)


@pytest.mark.parametrize(
    "code",
    [
        'if suite.bot.type == "chat":\n    pass\n',
        'x = bot.type in ("whatsapp", "openai_endpoint")\n',
        'if ctx.bot_type != "chat":\n    pass\n',
        'x = getattr(suite.bot, "type", None) == "chat"\n',
        "x = {'http': 1}[copy.bot.type]\n",
        "x = KINDS.get(suite.bot.type)\n",
        "match recorded.bot.type:\n    case 'http':\n        pass\n",
        "x = isinstance(suite.bot, ChatBotConfig)\n",
    ],
)
def test_the_switch_guard_catches_each_form_of_switch(code: str) -> None:
    assert switches_on_bot_type(code) == [1]


def test_the_switch_guard_lets_lookups_and_messages_pass() -> None:
    fine = 'kind = bot_kind(suite.bot.type)\nx = f"a {suite.bot.type} bot"\ny = {"type": suite.bot.type}\n'
    assert switches_on_bot_type(fine) == []


def test_nothing_switches_on_a_bots_type_outside_bots_and_the_registry() -> None:
    found = []
    for path in modules():
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(_KIND_HOMES):
            continue
        found += [f"simulator/{relative}:{line}" for line in switches_on_bot_type(source_text(path))]
    assert not found, f"ask the bot's kind (a capability or a method), do not switch on its type: {found}"


# --- guard: every secret-looking config field declares how it carries a secret ------------------------

_SECRET_NAME = re.compile(r"url|token|key|secret|passw|auth|header|cookie|credential", re.IGNORECASE)


def _holds_text(annotation: Any) -> bool:
    if annotation is str:
        return True
    if get_origin(annotation) is dict:
        return _holds_text(get_args(annotation)[1])  # the values; keys are names
    if get_origin(annotation) in (list, tuple, set, Union, types.UnionType, Annotated):
        return any(_holds_text(arg) for arg in get_args(annotation))
    return False


def _models_of(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_of(arg)]


def undeclared_secret_fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Text fields (nested models included) named like a secret's carrier that declare nothing."""
    found = []
    for name, info in model.model_fields.items():
        if _SECRET_NAME.search(name) and _holds_text(info.annotation) and secret_of(info) is None:
            found.append(f"{prefix}{model.__name__}.{name}")
        for inner in _models_of(info.annotation):
            found += undeclared_secret_fields(inner, f"{prefix}{model.__name__}.{name}: ")
    return found


def test_the_secret_guard_catches_an_undeclared_field_and_passes_a_declared_one() -> None:
    class Nested(BaseModel):
        auth_header: str | None = None

    class Careless(BotConfig):
        type: Literal["careless"] = "careless"
        bot_token_url: str
        session_keys: list[str] = Field(default_factory=list)
        headers: dict[str, str] = Field(default_factory=dict)
        nested: Nested | None = None
        max_tokens: int = 400  # not text: nothing to declare

    assert undeclared_secret_fields(Careless) == [
        "Careless.bot_token_url",
        "Careless.session_keys",
        "Careless.headers",
        "Careless.nested: Nested.auth_header",
    ]

    class Careful(BotConfig):
        type: Literal["careful"] = "careful"
        bot_token_url: Annotated[str, SecretURL]
        api_key_env: Annotated[str | None, SecretEnv] = None

    assert undeclared_secret_fields(Careful) == []


@pytest.mark.parametrize("name", BOT_KINDS.names())
def test_every_kinds_secret_looking_fields_are_declared(name: str) -> None:
    assert undeclared_secret_fields(bot_kind(name).config) == []


def test_the_providers_secret_looking_fields_are_declared() -> None:
    assert undeclared_secret_fields(ProviderSettings) == []


# --- secrets by declaration ---------------------------------------------------------------------------


def test_a_new_declared_field_is_a_suite_secret_and_redacted_in_the_manifest() -> None:
    class Tokened(BotConfig):
        type: Literal["tokened"] = "tokened"
        bot_token_url: Annotated[str, SecretURL]
        signing_key_env: Annotated[str, SecretEnv] = "SIGNING_KEY"

    register_bot_kind(BotKind("tokened", Tokened, "x:y"))
    try:
        suite = Suite.model_validate(
            {"bot": {"type": "tokened", "bot_token_url": "https://h/x?token=tok-9c8b7a&v=1"}}
        )
        env = {"SIGNING_KEY": "sign-5e4d3c", "UNRELATED": "not-a-secret"}
        assert suite_secrets(suite, env) == {"tok-9c8b7a", "sign-5e4d3c"}
        kept = redacted_suite(suite).bot
        assert kept.bot_token_url == f"https://h/x?token={REDACTED}&v=1"  # type: ignore[attr-defined]
        assert kept.signing_key_env == "SIGNING_KEY"  # type: ignore[attr-defined]
        assert suite.bot.bot_token_url.endswith("tok-9c8b7a&v=1")  # type: ignore[attr-defined]  # a copy
    finally:
        BOT_KINDS.unregister("tokened")


def test_nested_declarations_are_walked_a_started_bots_env_and_a_providers_key() -> None:
    suite = Suite.model_validate(
        {
            "bot": {
                "type": "http",
                "url": "https://u:pass-7f6e@h/x",
                "headers": {"Authorization": "Bearer ${TOK}", "X-Literal": "lit-3b2a19"},
                "start": {"command": ["x"], "env": {"KEY": "${START_KEY}", "MODE": "demo-mode"}},
            },
            "providers": {"openai": {"api_key_env": "MY_OPENAI", "base_url": "https://p/v1?key=pk-1a2b3c"}},
        }
    )
    env = {"TOK": "tok-4d5e6f", "START_KEY": "start-8a9b", "MY_OPENAI": "sk-test-0a1b2c"}
    found = suite_secrets(suite, env)
    assert {
        "pass-7f6e",
        "tok-4d5e6f",
        "Bearer tok-4d5e6f",
        "lit-3b2a19",
        "start-8a9b",
        "sk-test-0a1b2c",
    } <= found
    assert {"pk-1a2b3c"} <= found and "demo-mode" not in found  # a started bot's literal env is not a secret
    kept = redacted_suite(suite)
    bot = kept.bot
    assert bot.headers == {"Authorization": "Bearer ${TOK}", "X-Literal": REDACTED}  # type: ignore[attr-defined]
    assert "pass-7f6e" not in bot.url  # type: ignore[attr-defined]
    assert bot.start.env == {"KEY": "${START_KEY}", "MODE": "demo-mode"}  # type: ignore[attr-defined]
    assert kept.providers["openai"].base_url == f"https://p/v1?key={REDACTED}"
