"""Numbered migrations: read a run folder written by an older schema version with today's types.

One small function per version step and per file (manifest, conversation line, verdict line), applied in
memory when a reader opens the folder; readers never rewrite the files. A folder newer than this code is one
clear error. Each step is tested on a stored folder of that version (tests/data/runs/).
"""

from __future__ import annotations

__all__ = ["LATEST", "migrate_conversation", "migrate_manifest", "migrate_verdict", "too_new"]

import ast
import contextlib
import re
from collections.abc import Callable
from typing import Any

from simulator.errors import UserError
from simulator.record.models import SCHEMA_VERSION

LATEST = SCHEMA_VERSION

Raw = dict[str, Any]


def too_new(version: int, where: str) -> UserError:
    return UserError(
        f"{where}: written by a newer simulator (schema version {version}; this one reads up to {LATEST}); "
        "update simulator (in its checkout: git pull && pip install -e .), or read it with the version that "
        "wrote it"
    )


# ---- version 1 -> 2 -------------------------------------------------------------------------------------


def _bot_name(bot: Raw) -> str:
    kind = bot.get("type", "python")
    value = {"python": bot.get("factory"), "http": bot.get("url"), "chat": bot.get("model")}.get(kind)
    return f"{kind}:{value}"


def _judge_set_1_to_2(old: Raw) -> Raw:
    """A v1 `judges` section (or `judge_sets` entry) as a v2 JudgeSet."""
    return {
        "hash": old.get("judge_set_hash", ""),
        "model": old.get("model"),
        "temperature": old.get("temperature"),
        "max_tokens": old.get("max_tokens"),
        "paths": old.get("paths", []),
        "prompt_hash": old.get("prompt_hash"),
        "code_checks": old.get("code_checks"),
        "criteria": old.get("criteria", []),
        "warnings": old.get("warnings", []),
        "not_judged_reason": old.get("not_judged_reason"),
        "judged_at": old.get("judged_at"),
    }


def _manifest_1_to_2(old: Raw) -> Raw:
    if old.get("kind") == "golden":
        raise UserError(
            "this is a golden run folder from simulator 0.1 (results.jsonl); golden sets now run through "
            "the main engine: run them again with `simulator golden run ITEMS --bot module:factory`"
        )
    config = dict(old.get("config") or {})
    user = dict(config.get("user") or {})
    resolved = user.pop("resolved_model", None)
    config["user"] = user
    config.setdefault("high_stakes_tag", "high-stakes")  # version 1 reports used this tag by default
    history = list(old.get("judge_sets") or [])
    if not history and old.get("judges"):
        history = [old["judges"]]
    counts = old.get("counts") or {}
    session: Raw = {
        "command": "run",
        "started_at": old["created_at"],
        "ended_at": old.get("ended_at"),
        "calls": counts.get("calls", {}),
        "limits": counts.get("limits", {}),
    }
    prompts = {
        role: {"template": entry.get("template", ""), "hash": entry.get("hash", "")}
        for role, entry in (old.get("prompts") or {}).items()
    }
    return {
        "schema_version": 2,
        "kind": old.get("kind", "simulation"),
        "run_id": old["run_id"],
        "status": old.get("status", "running"),
        "created_at": old["created_at"],
        "ended_at": old.get("ended_at"),
        "package_version": old.get("package_version", "0.1.0"),
        "git_commit": old.get("git_commit"),
        "suite_file": old.get("suite_file"),
        "suite_hash": old.get("suite_hash"),
        "suite": config or None,
        "models": {
            "user": resolved or user.get("model", "offline"),
            "bot": _bot_name(config.get("bot") or {}),
            "judge": (config.get("judges") or {}).get("model"),
        },
        "prompts": prompts,
        "scenarios": [
            {k: v for k, v in entry.items() if k in ("id", "file", "line", "sha256", "expected", "tags")}
            for entry in old.get("scenarios", [])
        ],
        "planned": old.get("planned", 0),
        "judge_sets": [_judge_set_1_to_2(s) for s in history],
        "counts": {
            "conversations": counts.get("conversations", 0),
            "stop_reasons": counts.get("stop_reasons", {}),
            "errors": counts.get("errors", 0),
        },
        "sessions": [session] + [{"command": "resume", "started_at": t} for t in old.get("resumed_at", [])],
    }


def _conversation_1_to_2(old: Raw) -> Raw:
    return {**old, "schema_version": 2}


_EXPECTED = re.compile(r"expected (?P<key>[\w.-]+)=")


def _leading_literal(text: str) -> Any:
    """The Python literal at the start of `text`, ended by `,` or `;` or the end (a repr may hold commas)."""
    for end in [i for i, c in enumerate(text) if c in ",;"] + [len(text)]:
        try:
            return ast.literal_eval(text[:end].strip())
        except (ValueError, SyntaxError):
            continue
    raise ValueError("no literal")


def _verdict_1_to_2(old: Raw) -> Raw:
    """Version 1 outcome checks wrote what they compared only into their reasoning
    (`expected k='v', the bot recorded 'w'`); version 2 stores `expected` and `actual` as fields."""
    new = {**old, "schema_version": 2}
    reasoning = old.get("reasoning", "")
    match = _EXPECTED.search(reasoning) if old.get("criterion_id", "").startswith("outcome.") else None
    if match is None:
        return new
    rest = reasoning[match.end() :]
    try:
        new["expected"] = _leading_literal(rest)
    except ValueError:
        return new
    recorded = re.search(r"the bot recorded (?!no )(?P<value>.+)$", rest)
    stopped = re.search(r"the conversation stopped with (?P<value>.+)$", rest)
    for found in (recorded, stopped):
        if found is not None:
            with contextlib.suppress(ValueError):
                new["actual"] = _leading_literal(found["value"])
            break
    return new


# ---- the chain ------------------------------------------------------------------------------------------

# STEPS[v] takes a record of version v to version v + 1.
MANIFEST_STEPS: dict[int, Callable[[Raw], Raw]] = {1: _manifest_1_to_2}
CONVERSATION_STEPS: dict[int, Callable[[Raw], Raw]] = {1: _conversation_1_to_2}
VERDICT_STEPS: dict[int, Callable[[Raw], Raw]] = {1: _verdict_1_to_2}


def _chain(raw: Raw, steps: dict[int, Callable[[Raw], Raw]], where: str) -> Raw:
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise UserError(f"{where}: schema_version {version!r} is not a version number")
    if version > LATEST:
        raise too_new(version, where)
    while version < LATEST:
        raw = steps[version](raw)
        version += 1
    return raw


def migrate_manifest(raw: Raw, where: str) -> Raw:
    return _chain(raw, MANIFEST_STEPS, where)


def migrate_conversation(raw: Raw, where: str) -> Raw:
    return _chain(raw, CONVERSATION_STEPS, where)


def migrate_verdict(raw: Raw, where: str) -> Raw:
    return _chain(raw, VERDICT_STEPS, where)
