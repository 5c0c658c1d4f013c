"""Run a bot over a golden set: a fresh bot per item sample, items concurrently, results appended as they end.

The run folder `runs/<run-id>/` holds `manifest.json` (written first, status `running`, then `complete`
or `interrupted`) and `results.jsonl` (one `ItemResult` per line, in completion order).
"""

from __future__ import annotations

__all__ = ["GoldenManifest", "GoldenRun", "RunOptions", "load_run", "run_golden"]

import asyncio
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from simulator import __version__
from simulator.bots.python_bot import PythonBotFactory
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


async def _run_sample(item: GoldenItem, bots: PythonBotFactory, sample: int) -> SampleResult:
    """One sample: a fresh bot, the context's user turns, then the item's message, scored."""
    context_replies: list[str] = []
    try:
        session = await bots.open(f"{item.item_id}#{sample}")
        try:
            user_turns = [turn for turn in item.context if turn.role == "user"]
            for index, turn in enumerate(user_turns):
                context_replies.append("\n".join((await session.send(turn.text, index)).messages))
            reply = await session.send(item.user_message, len(user_turns))
        finally:
            await session.aclose()
    except Exception as exc:  # a bot that raises is an error record, never a pass or a fail
        return error_sample(sample, exc, context_replies)
    return score_reply(
        item, reply.messages, sample=sample, context_replies=context_replies, latency_s=reply.latency_s
    )


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
    bots = PythonBotFactory(bot)  # a bad spec is a UserError before anything runs
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
                return await _run_sample(item, bots, sample)

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
