"""Numbered migrations: read a run folder written by an older schema version with today's types.

One small function per version step and per file (manifest, conversation line, verdict line), applied in
memory when a reader opens the folder; readers never rewrite the files. A folder newer than this code is one
clear error. Each step is tested on a stored folder of that version (tests/data/runs/).

A step reads keys of a record edited by hand or damaged, too: so what each step reads is declared as a shape
(`SHAPES`, typed dicts) and checked before the step runs. A key missing or of another type is one line
naming the file, the field and the fix (`refused`), never a KeyError or a TypeError from the step.
"""

from __future__ import annotations

__all__ = [
    "DAMAGED",
    "LATEST",
    "SHAPES",
    "golden_manifest_1_to_2",
    "golden_result_1_to_2",
    "golden_v1_checked",
    "migrate_conversation",
    "migrate_manifest",
    "migrate_verdict",
    "refused",
]

import ast
import contextlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Required

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config

# pydantic reads a TypedDict from typing_extensions only, before Python 3.12 (pydantic itself requires it).
from typing_extensions import TypedDict

from simulator.errors import Problem, UserError, field_path, pattern_or_message
from simulator.record.models import SCHEMA_VERSION

LATEST = SCHEMA_VERSION

Raw = dict[str, Any]

# The fix for a run-folder file simulator would not have written: every reader's refusal ends with it.
DAMAGED = "the file was edited or damaged; correct it, or restore it from a copy"


def refused(where: str, exc: ValidationError, what: str) -> UserError:
    """The one line for a record (or a part of one) pydantic refuses: `where`, the first field refused,
    pydantic's reason and the fix."""
    first = exc.errors()[0]
    field = field_path(first["loc"]) or None
    # In words, never pydantic's (which names the model's class for an object of another type).
    reason = pattern_or_message(first)
    return UserError(str(Problem(where, f"{what} ({reason}); {DAMAGED}", field=field)))


def _checked(raw: Any, shape: TypeAdapter[Any], where: str, what: str) -> Raw:
    """`raw` when it has `shape` (what a step reads, typed), else the one line naming the field."""
    try:
        shape.validate_python(raw)
    except ValidationError as exc:
        raise refused(where, exc, what) from None
    return raw


def too_new(version: int, where: str) -> UserError:
    return UserError(
        f"{where}: written by a newer simulator (schema version {version}; this one reads up to {LATEST}); "
        "update simulator (in its checkout: git pull && pip install -e .), or read it with the version that "
        "wrote it"
    )


# ---- what each step reads --------------------------------------------------------------------------------
# Only the keys a step reads, with the types it needs (`None` where it takes a null as absent); any other
# key passes to the step as it is, and today's models check the result.


class _BotV1(TypedDict, total=False):
    type: str  # a key of `_bot_name`'s table


class _ConfigV1(TypedDict, total=False):
    user: dict[str, Any] | None
    bot: _BotV1 | None
    judges: dict[str, Any] | None


# Each shape's validator is built on first use: building the five at import cost a fiftieth of a run's
# start-up, and a run of the current version reads none of them (issue 47).
_DEFERRED = ConfigDict(defer_build=True)


@with_config(_DEFERRED)
class _ManifestV1(TypedDict, total=False):
    run_id: Required[Any]
    created_at: Required[Any]
    config: _ConfigV1 | None
    judges: dict[str, Any] | None
    judge_sets: list[dict[str, Any]] | None
    counts: dict[str, Any] | None
    prompts: dict[str, dict[str, Any]] | None
    scenarios: list[dict[str, Any]]
    resumed_at: list[Any]


class _TurnV2(TypedDict, total=False):
    messages: list[Any] | None


@with_config(_DEFERRED)
class _ConversationV2(TypedDict, total=False):
    turns: list[_TurnV2] | None


@with_config(_DEFERRED)
class _VerdictV1(TypedDict, total=False):
    criterion_id: str
    reasoning: str


@with_config(_DEFERRED)
class _GoldenManifestV1(TypedDict, total=False):
    run_id: Required[Any]
    started_at: Required[Any]
    items_file: str
    samples: int
    n_items: int


class _GoldenSampleV1(TypedDict, total=False):
    sample: int
    passed: bool | None
    failures: list[str]
    evidence: list[Any]
    assertions_passed: float | None
    exact_match: float | None
    token_f1: float | None
    rouge_l: float | None
    difflib_ratio: float | None
    context_replies: list[Any]
    messages: list[Any]


@with_config(_DEFERRED)
class _GoldenResultV1(TypedDict, total=False):
    item_id: Required[Any]
    index: int
    samples: list[_GoldenSampleV1]


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


# ---- version 1 golden folders (manifest kind golden + results.jsonl) -> 2 ------------------------------
# Simulator 0.1 ran golden sets in a second engine. Its folder is read as the conversations and verdicts
# today's engine would have written (in memory; the folder is never rewritten). The item's own messages
# were not recorded then, so a migrated transcript holds the bot's turns only.

GOLDEN_V1_JUDGE_SET = "golden-v1"


def golden_manifest_1_to_2(old: Raw, results: list[Raw]) -> Raw:
    """A v1 golden manifest, with the item results it summarised, as a v2 manifest of kind golden."""
    items_file, bot = old.get("items_file", ""), old.get("bot", "")
    samples = old.get("samples", 1)
    sessions = [{"command": "run", "started_at": old["started_at"], "ended_at": old.get("ended_at")}]
    errors = sum(1 for r in results for s in r.get("samples", []) if s.get("error"))
    return {
        "schema_version": 2,
        "kind": "golden",
        "run_id": old["run_id"],
        "status": old.get("status", "complete"),
        "created_at": old["started_at"],
        "ended_at": old.get("ended_at"),
        "package_version": old.get("package_version", "0.1.0"),
        "suite": {
            "name": Path(items_file).stem or "golden",
            "scenarios": {"paths": [items_file]},
            "bot": {"type": "python", "factory": bot},
            "user": {"model": "scripted"},
            "runs": samples,
            "concurrency": old.get("concurrency", 8),
        },
        "models": {"user": "scripted", "bot": f"python:{bot}"},
        "scenarios": [
            {
                "id": r["item_id"],
                "file": items_file,
                "sha256": old.get("items_sha256"),
                "intent": r.get("intent"),
                "item_kind": r.get("kind"),
            }
            for r in sorted(results, key=lambda r: r.get("index", 0))
        ],
        "planned": old.get("n_items", len(results)) * samples,
        "judge_sets": [{"hash": GOLDEN_V1_JUDGE_SET, "code_checks": GOLDEN_V1_JUDGE_SET}],
        "counts": {"conversations": sum(len(r.get("samples", [])) for r in results), "errors": errors},
        "sessions": sessions,
        "source": {"migrated_from": "simulator 0.1 golden run (results.jsonl)", "gate": old.get("gate")},
    }


def _golden_sample_verdicts(result: Raw, sample: Raw, base: Raw) -> list[Raw]:
    """The verdicts of one scored v1 sample: the deciding check, then the metrics that gate nothing."""
    exact = result.get("kind") == "exact"
    passed = bool(sample.get("passed"))
    reasoning = "; ".join(sample.get("failures", [])) or (
        "an exact match for the reference" if exact else "every assertion holds on the bot's reply"
    )
    evidence = [{"quote": quote, "found": True} for quote in sample.get("evidence", [])]
    deciding = {
        **base,
        "criterion_id": "exact_match" if exact else "assertions",
        "kind": "code",
        "result": "pass" if passed else "fail",
        "severity": "major",
        "category": "exact" if exact else "assertion",
        "reasoning": reasoning,
        "evidence": evidence,
    }
    verdicts = [deciding]
    metric = {**base, "kind": "metric", "result": "not_applicable", "category": "metric"}
    if exact and sample.get("assertions_passed") is not None:
        verdicts.append(
            {**metric, "criterion_id": "metric.assertions", "score": float(sample["assertions_passed"])}
        )
    for name in ("exact_match", "token_f1", "rouge_l", "difflib_ratio"):
        if sample.get(name) is not None:
            verdicts.append({**metric, "criterion_id": f"metric.{name}", "score": float(sample[name])})
    return verdicts


def _golden_turns(sample: Raw, at: str) -> list[Raw]:
    replies = [[text] for text in sample.get("context_replies", [])]
    if sample.get("error") is None:
        replies.append(list(sample.get("messages", [])))
    return [{"index": i, "role": "bot", "messages": m, "started_at": at} for i, m in enumerate(replies)]


def golden_result_1_to_2(result: Raw, manifest: Raw) -> tuple[list[Raw], list[Raw]]:
    """One v1 `results.jsonl` line (an item and its samples) as v2 conversation records and verdicts."""
    conversations: list[Raw] = []
    verdicts: list[Raw] = []
    started, ended = manifest["started_at"], manifest.get("ended_at") or manifest["started_at"]
    for sample in result.get("samples", []):
        repeat = sample.get("sample", 0)
        key = {
            "conversation_id": f"{result['item_id']}#{repeat}",
            "scenario_id": result["item_id"],
            "repeat": repeat,
        }
        conversations.append(
            {
                "schema_version": 2,
                "id": key["conversation_id"],
                "scenario_id": key["scenario_id"],
                "repeat": repeat,
                "stop_reason": "error" if sample.get("error") else "user_done",
                "turns": _golden_turns(sample, started),
                "error": sample.get("error"),
                "started_at": started,
                "ended_at": ended,
                "user_model": "scripted",
                "bot": f"python:{manifest.get('bot', '')}",
            }
        )
        base = {"schema_version": 2, **key, "judge_set_hash": GOLDEN_V1_JUDGE_SET}
        if sample.get("error"):
            check = "exact_match" if result.get("kind") == "exact" else "assertions"
            verdicts.append(
                {
                    **base,
                    "criterion_id": check,
                    "kind": "code",
                    "result": "not_judged",
                    "reasoning": "the bot raised; nothing to check",
                }
            )
        else:
            verdicts += _golden_sample_verdicts(result, sample, base)
    return conversations, verdicts


# ---- the chain ------------------------------------------------------------------------------------------

# ---- version 2 -> 3: a turn is an ordered list of parts --------------------------------------------------


def _turn_2_to_3(turn: Raw) -> Raw:
    """A v2 turn's `messages` (a list of strings) as v3 `parts`: one text part per message."""
    new = {key: value for key, value in turn.items() if key != "messages"}
    new["parts"] = [{"type": "text", "text": message} for message in turn.get("messages") or []]
    return new


def _conversation_2_to_3(old: Raw) -> Raw:
    turns = old.get("turns")
    new = {**old, "schema_version": 3}
    if isinstance(turns, list):
        new["turns"] = [_turn_2_to_3(t) if isinstance(t, dict) and "messages" in t else t for t in turns]
    return new


def _version_3(old: Raw) -> Raw:
    """Manifests and verdicts did not change shape in version 3 (only turns did)."""
    return {**old, "schema_version": 3}


def _verdict_2_to_3(old: Raw) -> Raw:
    """Version 3 records how a verdict was decided (`decided_by`): read from the record's structure."""
    from simulator.record.decided import decided_by_of

    return {**old, "schema_version": 3, "decided_by": decided_by_of(old)}


def _version_4(old: Raw) -> Raw:
    """Version 4 adds optional fields only: a session's `most_open` (conversations open at most, places lent
    to those waiting out a 429), the suite's `user.models` and the scenarios' `writes_in` / `switches_to`.
    Older records hold none of them and read as they are."""
    return {**old, "schema_version": 4}


def _verdict_3_to_4(old: Raw) -> Raw:
    """Version 3 left `decided_by` unset on tool, environment and red-team checks (code decided them):
    filled in from the record's structure, as for version 2."""
    from simulator.record.decided import decided_by_of

    return {**old, "schema_version": 4, "decided_by": decided_by_of(old)}


# STEPS[v] takes a record of version v to version v + 1; SHAPES[v] is what that step reads.
MANIFEST_STEPS: dict[int, Callable[[Raw], Raw]] = {1: _manifest_1_to_2, 2: _version_3, 3: _version_4}
CONVERSATION_STEPS: dict[int, Callable[[Raw], Raw]] = {
    1: _conversation_1_to_2,
    2: _conversation_2_to_3,
    3: _version_4,
}
VERDICT_STEPS: dict[int, Callable[[Raw], Raw]] = {1: _verdict_1_to_2, 2: _verdict_2_to_3, 3: _verdict_3_to_4}
SHAPES: dict[tuple[str, int], TypeAdapter[Any]] = {
    ("manifest", 1): TypeAdapter(_ManifestV1),
    ("conversation", 2): TypeAdapter(_ConversationV2),
    ("verdict", 1): TypeAdapter(_VerdictV1),
}
_GOLDEN_MANIFEST = TypeAdapter(_GoldenManifestV1)
_GOLDEN_RESULT = TypeAdapter(_GoldenResultV1)


def _chain(raw: Raw, steps: dict[int, Callable[[Raw], Raw]], where: str, kind: str) -> Raw:
    named = "schema_version" in raw
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        said = f"{json.dumps(version)[:40]} is not a version number; {DAMAGED}"
        raise UserError(str(Problem(where, said, field="schema_version")))
    if version > LATEST:
        raise too_new(version, where)
    while version < LATEST:
        shape = SHAPES.get((kind, version))
        if shape is not None:
            unnamed = "" if named else ", as one naming no schema_version is read"
            _checked(raw, shape, where, f"not a version {version} {kind}{unnamed}")
        raw = steps[version](raw)
        version += 1
    return raw


def migrate_manifest(raw: Raw, where: str) -> Raw:
    if raw.get("kind") == "golden" and raw.get("schema_version", 1) == 1:
        # Reached only when the folder lacks the results.jsonl the golden step needs (RunFolder reads it).
        raise UserError(
            f"{where}: a golden run folder from simulator 0.1 without its results.jsonl; run the items again "
            "with `simulator golden run ITEMS --bot module:factory`"
        )
    return _chain(raw, MANIFEST_STEPS, where, "manifest")


def migrate_conversation(raw: Raw, where: str) -> Raw:
    return _chain(raw, CONVERSATION_STEPS, where, "conversation")


def migrate_verdict(raw: Raw, where: str) -> Raw:
    return _chain(raw, VERDICT_STEPS, where, "verdict")


def golden_v1_checked(manifest: Any, where: str, results: list[tuple[Any, str]]) -> tuple[Raw, list[Raw]]:
    """A simulator 0.1 golden manifest and its result lines (each with where it was read) when they hold
    what the golden steps read; else the one line naming the file and the field."""
    checked = [_checked(raw, _GOLDEN_RESULT, at, "not a simulator 0.1 golden result") for raw, at in results]
    return _checked(manifest, _GOLDEN_MANIFEST, where, "not a simulator 0.1 golden manifest"), checked
