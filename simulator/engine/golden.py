"""`simulator golden run`: a golden set as a suite built in memory (python bot, scripted user, runs = k),
run by `run_suite` into an ordinary run folder that `simulator run --resume`, `report` and `compare` read.
"""

from __future__ import annotations

__all__ = ["GoldenOptions", "golden_suite", "run_golden"]

from dataclasses import dataclass
from pathlib import Path

from simulator.config.bots import PythonBotConfig, load_factory
from simulator.config.golden import golden_scenario, load_golden
from simulator.config.suite import ScenarioSelection, Suite, UserConfig
from simulator.engine.runner import RunOptions, RunResult, run_suite
from simulator.errors import UserError
from simulator.users.scripted import SCRIPTED


@dataclass
class GoldenOptions:
    """How to run a golden set: samples per item (an item passes only if all pass), items in flight."""

    samples: int = 1
    concurrency: int = 8
    out: Path | None = None  # the run folder; default runs/<run-id>
    progress: bool = True


def golden_suite(items: Path, bot: str, options: GoldenOptions) -> Suite:
    """The suite a golden run records in its manifest, so `run --resume` rebuilds it like any other."""
    if options.samples < 1:
        raise UserError(f"--samples must be at least 1, got {options.samples}")
    if options.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {options.concurrency}")
    load_factory(bot)  # a bad `module:factory` is one clear error before anything runs
    suite = Suite(
        name=items.stem,
        scenarios=ScenarioSelection(paths=[str(items.resolve())]),
        bot=PythonBotConfig(factory=bot),
        user=UserConfig(model=SCRIPTED),
        runs=options.samples,
        concurrency=options.concurrency,
    )
    suite._base_dir = Path.cwd()
    return suite


async def run_golden(items: Path, bot: str, options: GoldenOptions | None = None) -> RunResult:
    """Run `bot` over every golden item `samples` times through the main engine; return what happened."""
    options = options or GoldenOptions()
    scenarios = [golden_scenario(item) for item in load_golden(items)]
    suite = golden_suite(items, bot, options)
    run_options = RunOptions(out=options.out, progress=options.progress)
    return await run_suite(suite, scenarios, run_options)
