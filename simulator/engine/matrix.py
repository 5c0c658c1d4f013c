"""Matrix runs: every cell of a suite's `matrix:` on the same scenarios, repeats and seed, in one session.

The cells share one model hub (provider limits, retries and the response cache) and one worker pool
(`engine.session`); each writes an ordinary run folder `runs/<matrix-id>/<cell>/`, listed by
`runs/<matrix-id>/index.json`, so every command that reads a run works on a cell unchanged.
"""

from __future__ import annotations

__all__ = ["resume_matrix", "run_matrix"]

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.bots import BotFactory
from simulator.config.matrix import expand_matrix
from simulator.config.scenario import Scenario
from simulator.config.suite import Suite
from simulator.engine.roles import run_user_model
from simulator.engine.runner import CellSpec, RunOptions, run_cells
from simulator.engine.session import RunResult
from simulator.errors import FolderTaken
from simulator.record.folder import RunFolder, new_run_id
from simulator.record.index import IndexCell, MatrixIndex, read_index, write_index
from simulator.record.manifest import Manifest
from simulator.record.recorded import resumed_scenarios


@dataclass
class MatrixResult:
    """Where the matrix is, its index, and each cell's result for this session (by cell id)."""

    path: Path
    index: MatrixIndex
    results: dict[str, RunResult]

    @property
    def aborted(self) -> dict[str, str]:
        """Cells whose error budget stopped them, with the reason."""
        return {cell: r.abort_reason for cell, r in self.results.items() if r.abort_reason}


def _new_index(
    suite: Suite, path: Path, bots: Mapping[str, BotFactory]
) -> tuple[MatrixIndex, list[CellSpec]]:
    cells = expand_matrix(suite)
    assert suite.matrix is not None
    index = MatrixIndex(
        matrix_id=path.name,
        created_at=datetime.now(UTC),
        suite_file=str(suite.file.resolve()) if suite.file else None,
        baseline=suite.matrix.baseline or cells[0].id,
        cells=[
            IndexCell(
                id=cell.id,
                bot_variant=cell.bot_variant,
                user_variant=cell.user_variant,
                folder=cell.id,
                bot=cell.suite.bot.describe(),
                user_model=run_user_model(cell.suite),
            )
            for cell in cells
        ],
    )
    specs = [
        CellSpec(
            cell.suite,
            path / cell.id,
            source={"matrix": {"id": index.matrix_id, "cell": cell.id}},
            bots=bots.get(cell.bot_variant),
        )
        for cell in cells
    ]
    return index, specs


async def _run(
    path: Path, index: MatrixIndex, specs: list[CellSpec], scenarios: list[Scenario], options: RunOptions
) -> MatrixResult:
    command = "resume" if specs[0].resume else "run"
    results = await run_cells(specs, scenarios, options)
    calls: dict[str, Any] = results[0].calls if results else {}
    index.calls.append({"command": command, "ended_at": datetime.now(UTC).isoformat(), "calls": calls})
    write_index(path, index)
    return MatrixResult(path, index, {cell.id: r for cell, r in zip(index.cells, results, strict=True)})


async def run_matrix(
    suite: Suite,
    scenarios: list[Scenario],
    options: RunOptions,
    bots: Mapping[str, BotFactory] | None = None,
) -> MatrixResult:
    """Run every cell of `suite.matrix` into `options.out` (default runs/<matrix-id>); `bots`: bots given
    in code, by bot variant id (their cells' suites name them `type: callable`)."""
    path = options.out or Path("runs") / new_run_id(suite.name)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise FolderTaken(path, "files")
    index, specs = _new_index(suite, path, bots or {})
    write_index(path, index)  # first: a matrix killed at any point after this can be resumed
    return await _run(path, index, specs, scenarios, options)


# What a resume changes in a cell's rebuilt suite (operational settings only: engine/operational.py), given
# the cell's manifest; {path: [old, new]} of what it changed.
Changes = Callable[[Suite, Manifest], dict[str, list[Any]]]


async def resume_matrix(
    path: Path,
    options: RunOptions,
    bots: Mapping[str, BotFactory] | None = None,
    in_code: Sequence[Scenario] | None = None,
    changes: Changes | None = None,
) -> MatrixResult:
    """Finish every cell of a matrix run: what each cell's folder lacks, in one session; `bots`: the bots
    given in code when it started, by bot variant id; `in_code`: its scenarios given in code (checked against
    what each cell recorded: record/recorded.py); `changes`: what the resume changes in each cell's suite."""
    index = read_index(path)
    specs: list[CellSpec] = []
    scenarios: dict[str, Scenario] = {}
    for cell in index.cells:
        folder = path / cell.folder
        manifest = RunFolder.open(folder).read_manifest()
        suite = manifest.rebuild_suite(folder)
        given = (bots or {}).get(cell.bot_variant)
        changed = {**options.settings_changed, **changes(suite, manifest)} if changes is not None else None
        specs.append(CellSpec(suite, folder, resume=True, bots=given, settings_changed=changed))
        # The run's own scenarios (persona-factor variants included), from the files each cell recorded or
        # given in code again (checked by hash), whatever --tags chose when it started.
        for scenario in resumed_scenarios(manifest, suite, folder, in_code):
            scenarios.setdefault(scenario.id, scenario)
    return await _run(path, index, specs, list(scenarios.values()), options)
