"""Run a bot over a golden set: a fresh bot per item sample, items concurrently, results appended as they end.

The run folder `runs/<run-id>/` holds `manifest.json` (written first, status `running`, then `complete`
or `interrupted`) and `results.jsonl` (one `ItemResult` per line, in completion order).
"""

from __future__ import annotations

__all__ = ["GoldenManifest", "GoldenRun", "RunOptions", "load_run", "run_golden"]

import asyncio
import importlib
import inspect
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from simulator import __version__
from simulator.errors import UserError
from simulator.golden.items import GoldenItem, GoldenSet
from simulator.golden.scoring import (
    GOLDEN_SCHEMA_VERSION,
    Gate,
    ItemResult,
    SampleResult,
    aggregate_samples,
    error_sample,
    score_reply,
)

RunStatus = Literal["running", "complete", "interrupted"]


class GoldenManifest(BaseModel):
    """`manifest.json` of a golden run: what ran, against which file (with its hash), and how it ended."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = GOLDEN_SCHEMA_VERSION
    kind: Literal["golden"] = "golden"
    run_id: str
    status: RunStatus
    items_file: str
    items_sha256: str
    n_items: int
    bot: str
    samples: int
    concurrency: int
    # The similarity gate `golden report` uses unless told otherwise (`metric:threshold`).
    gate: str
    package_version: str = __version__
    started_at: datetime
    ended_at: datetime | None = None


class RunOptions(BaseModel):
    """How to run a golden set: samples per item, items in flight, where the run folder goes."""

    model_config = ConfigDict(extra="forbid")

    samples: int = Field(default=1, ge=1)
    concurrency: int = Field(default=8, ge=1)
    out_dir: Path = Path("runs")
    run_id: str | None = None
    gate: Gate = Field(default_factory=Gate)


@dataclass
class GoldenRun:
    """A golden run folder read back: its manifest and its item results in item order."""

    path: Path
    manifest: GoldenManifest
    results: list[ItemResult]


def _load_factory(spec: str) -> Callable[[], Any]:
    """Resolve `module:attr` to the bot factory; a bad spec is a UserError, raised before anything runs."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(
            f"--bot {spec!r} must look like module:factory (for example examples.parcel_bot:bot_a)"
        )
    if (
        os.getcwd() not in sys.path
    ):  # `--bot examples.parcel_bot:bot_a` names a module under the current folder
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"--bot {spec!r}: cannot import module {module_name!r}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UserError(f"--bot {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UserError(f"--bot {spec!r}: {attr!r} is not callable (it should return a fresh bot)")
    return obj


async def _open_bot(spec: str) -> Any:
    """A fresh bot from its factory (sync or async); the engine's python adapter will replace this."""
    bot = _load_factory(spec)()
    if inspect.isawaitable(bot):
        bot = await bot
    if not callable(getattr(bot, "send", None)):
        raise TypeError(f"the object returned by {spec} has no send(text) method")
    return bot


def _as_messages(result: object) -> list[str]:
    if isinstance(result, str):
        return [result]
    if isinstance(result, list | tuple) and all(isinstance(m, str) for m in result):
        return list(result)
    messages = getattr(result, "messages", None)
    if isinstance(messages, list | tuple) and all(isinstance(m, str) for m in messages):
        return list(messages)
    raise TypeError(
        f"send() returned {type(result).__name__}; expected str, list[str] or an object with .messages"
    )


async def _send(bot: Any, text: str) -> list[str]:
    """Send one message; a sync `send` runs in a thread so other items keep going."""
    if inspect.iscoroutinefunction(bot.send):
        result = await bot.send(text)
    else:
        result = await asyncio.to_thread(bot.send, text)
        if inspect.isawaitable(result):
            result = await result
    return _as_messages(result)


async def _close(bot: Any) -> None:
    close = getattr(bot, "aclose", None) or getattr(bot, "close", None)
    if callable(close):
        outcome = close()
        if inspect.isawaitable(outcome):
            await outcome


async def _run_sample(item: GoldenItem, bot_spec: str, sample: int) -> SampleResult:
    """One sample: a fresh bot, the context's user turns, then the item's message, scored."""
    context_replies: list[str] = []
    try:
        bot = await _open_bot(bot_spec)
        try:
            for turn in item.context:
                if turn.role == "user":
                    context_replies.append("\n".join(await _send(bot, turn.text)))
            started = time.perf_counter()
            messages = await _send(bot, item.user_message)
            latency = time.perf_counter() - started
        finally:
            await _close(bot)
    except Exception as exc:  # a bot that raises is an error record, never a pass or a fail
        return error_sample(sample, exc, context_replies)
    return score_reply(item, messages, sample=sample, context_replies=context_replies, latency_s=latency)


def _now() -> datetime:
    return datetime.now(UTC)


def _new_run_id() -> str:
    return f"golden-{_now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def _write_manifest(run_dir: Path, manifest: GoldenManifest) -> None:
    tmp = run_dir / "manifest.json.tmp"
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(run_dir / "manifest.json")


async def run_golden(golden: GoldenSet, bot: str, options: RunOptions | None = None) -> GoldenRun:
    """Run `bot` (`module:factory`) over every item `options.samples` times and write the run folder."""
    options = options or RunOptions()
    _load_factory(bot)
    run_id = options.run_id or _new_run_id()
    run_dir = options.out_dir / run_id
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise UserError(f"run folder {run_dir} already exists; choose another --out or run id") from None
    manifest = GoldenManifest(
        run_id=run_id,
        status="running",
        items_file=golden.path,
        items_sha256=golden.sha256,
        n_items=len(golden.items),
        bot=bot,
        samples=options.samples,
        concurrency=options.concurrency,
        gate=str(options.gate),
        started_at=_now(),
    )
    _write_manifest(run_dir, manifest)
    limit = asyncio.Semaphore(options.concurrency)

    with (run_dir / "results.jsonl").open("a", encoding="utf-8") as out:

        async def run_sample(item: GoldenItem, sample: int) -> SampleResult:
            async with limit:
                return await _run_sample(item, bot, sample)

        async def run_item(index: int, item: GoldenItem) -> ItemResult:
            samples = await asyncio.gather(*(run_sample(item, s) for s in range(options.samples)))
            result = aggregate_samples(item, index, list(samples))
            out.write(result.model_dump_json() + "\n")
            out.flush()
            return result

        try:
            results = await asyncio.gather(*(run_item(i, item) for i, item in enumerate(golden.items)))
        except (asyncio.CancelledError, KeyboardInterrupt):
            _write_manifest(
                run_dir, manifest.model_copy(update={"status": "interrupted", "ended_at": _now()})
            )
            raise
    manifest = manifest.model_copy(update={"status": "complete", "ended_at": _now()})
    _write_manifest(run_dir, manifest)
    return GoldenRun(path=run_dir, manifest=manifest, results=list(results))


def load_run(path: str | Path) -> GoldenRun:
    """Read a golden run folder back; a folder that is not one is a UserError."""
    run_dir = Path(path)
    manifest_file = run_dir / "manifest.json"
    if not manifest_file.is_file():
        raise UserError(f"{run_dir} is not a run folder (no manifest.json)")
    try:
        manifest = GoldenManifest.model_validate_json(manifest_file.read_text(encoding="utf-8"))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{manifest_file}: not a golden run manifest ({field}: {first['msg']})") from None
    if manifest.schema_version > GOLDEN_SCHEMA_VERSION:
        raise UserError(f"{manifest_file}: written by a newer simulator (schema {manifest.schema_version})")
    results: list[ItemResult] = []
    results_file = run_dir / "results.jsonl"
    if results_file.is_file():
        for number, line in enumerate(results_file.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                results.append(ItemResult.model_validate_json(line))
            except ValidationError:
                if manifest.status == "complete":
                    raise UserError(f"{results_file}:{number}: not a golden item result") from None
                # an interrupted run may end in a half-written line
    results.sort(key=lambda r: r.index)
    return GoldenRun(path=run_dir, manifest=manifest, results=results)
