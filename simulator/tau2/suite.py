"""`simulator import-tau2`: a tau2-bench tasks file (and its database) written as a suite folder this
engine runs: suite.yaml with the domain's tools and the database as the environment, one scenario per
task, one criterion per natural-language assertion, and NOTES.md listing what was not mapped."""

from __future__ import annotations

__all__ = ["Tau2ImportOptions", "import_tau2"]

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simulator.errors import Problem, UserError
from simulator.readers import MAX_TAU2_BYTES, InputRefused, read_json_file
from simulator.tau2.convert import Converted, Unsupported, convert_task, scenario_id
from simulator.tau2.domain import DomainTool, domain_tools
from simulator.tau2.tasks import Task, read_tasks


@dataclass
class Tau2ImportOptions:
    """What to convert and how: the domain, its database, the tools module, the user, the bot."""

    tasks: Path
    domain: str
    out: Path
    db: Path | None = None
    tools: str | None = None
    scripted: bool = False
    bot: str | None = None
    task_ids: list[str] = field(default_factory=list)
    skip_unsupported: bool = False


@dataclass
class Tau2ImportSummary:
    """What was written and what was left out (and why)."""

    out: Path
    scenarios: list[str]
    criteria: int
    skipped: dict[str, str]
    notes: dict[str, list[str]]


def _read_db(path: Path | None) -> dict[str, Any]:
    if path is None:
        raise UserError("--db is required: the domain's database (tau2's db.json) is the environment's state")
    if path.suffix.lower() != ".json":
        raise UserError(
            f"--db {path}: only a JSON database is read (tau2's db.json); convert it to JSON first"
        )
    try:
        data = read_json_file(path, MAX_TAU2_BYTES, "UTF-8 JSON (tau2's db.json)")
    except InputRefused as exc:
        raise UserError(f"--db {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"--db {path}: a database is a JSON object of tables")
    return data


def _suite(options: Tau2ImportOptions, db: dict[str, Any], tools: dict[str, DomainTool]) -> dict[str, Any]:
    bot: dict[str, Any] = (
        {"type": "python", "factory": options.bot}
        if options.bot
        else {"type": "http", "url": "http://127.0.0.1:8000/chat"}
    )
    return {
        "name": f"tau2-{options.domain}",
        "description": f"tau2-bench {options.domain} tasks converted from {options.tasks.name} (see NOTES.md)",
        "scenarios": {"paths": ["scenarios"]},
        "bot": bot,
        "user": {"model": "scripted" if options.scripted else "auto"},
        "judges": {"paths": ["judges"], "model": None},
        "runs": 1,
        "environment": {
            "state": db,
            "max_tool_rounds": 20,
            "tools": {
                name: {"description": t.description, "parameters": t.parameters, "function": t.function}
                for name, t in tools.items()
            },
        },
        "tool_checks": {"claims": []},
    }


def _convert_all(
    options: Tau2ImportOptions, db: dict[str, Any], tools: dict[str, DomainTool]
) -> tuple[dict[str, Converted], dict[str, str]]:
    tasks = read_tasks(options.tasks)
    wanted = set(options.task_ids)
    unknown = wanted - {t.id for t in tasks}
    if unknown:
        raise UserError(f"--task {', '.join(sorted(unknown))}: no such task in {options.tasks}")
    chosen = [(index, task) for index, task in enumerate(tasks) if not wanted or task.id in wanted]
    _refuse_colliding_ids(options, chosen)
    converted, skipped = {}, {}
    for _, task in chosen:
        try:
            converted[task.id] = convert_task(task, options.domain, db, tools, options.scripted)
        except Unsupported as exc:
            skipped[task.id] = str(exc)
    if skipped and not options.skip_unsupported:
        problems = [
            Problem(str(options.tasks), reason, None, f"task {tid}") for tid, reason in skipped.items()
        ]
        raise UserError(
            f"{len(skipped)} tasks cannot run here as written; choose others with --task, or leave them out "
            "with --skip-unsupported (they are listed in NOTES.md)",
            problems,
        )
    if not converted:
        raise UserError(f"no task of {options.tasks} could be converted")
    return converted, skipped


def _refuse_colliding_ids(options: Tau2ImportOptions, chosen: list[tuple[int, Task]]) -> None:
    """Two tasks that would be written as one scenario (the same id, or ids that differ only in what a
    scenario id or a file name cannot hold, or in letter case) are refused: never one silently dropped."""
    by_file: dict[str, list[tuple[int, Task]]] = {}
    for index, task in chosen:
        name = _file_name(scenario_id(options.domain, task.id))
        by_file.setdefault(name.casefold(), []).append((index, task))
    problems = []
    for group in by_file.values():
        if len(group) < 2:
            continue
        where = " and ".join(f"the task at position {index + 1} (id {task.id!r})" for index, task in group)
        name = _file_name(scenario_id(options.domain, group[0][1].id))
        same = len({task.id for _, task in group}) == 1
        why = "share one id" if same else f"would both be written as scenarios/{name}.yaml"
        problems.append(Problem(str(options.tasks), f"{where} {why}", None, f"task {group[0][1].id}"))
    if problems:
        raise UserError(
            f"{len(problems)} task ids of {options.tasks} collide, so one task would replace another; give each "
            "task its own id (ids become scenario ids and file names: letters, digits, - and _, any case)",
            problems,
        )


def _notes_page(options: Tau2ImportOptions, converted: dict[str, Converted], skipped: dict[str, str]) -> str:
    lines = [
        f"# tau2-bench {options.domain}: what was not mapped",
        "",
        "Converted from tau2-bench (MIT licence, Copyright (c) 2025 Sierra Research); see docs/tau2.md.",
        "",
    ]
    if skipped:
        lines += ["## Tasks left out", ""] + [f"- {tid}: {reason}" for tid, reason in skipped.items()] + [""]
    noted = {tid: c.notes for tid, c in converted.items() if c.notes}
    if noted:
        lines += ["## Notes per task", ""]
        lines += [f"- {tid}: {note}" for tid, notes in noted.items() for note in notes]
    return "\n".join(lines) + "\n"


def _dump(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110), encoding="utf-8")


def import_tau2(options: Tau2ImportOptions) -> Tau2ImportSummary:
    """Convert the tasks and write the suite folder; a UserError (nothing written) when they cannot be."""
    if options.out.exists() and any(options.out.iterdir()):
        raise UserError(f"--out {options.out} exists and is not empty; give a new folder")
    tools = domain_tools(options.domain, options.tools)
    db = _read_db(options.db)
    converted, skipped = _convert_all(options, db, tools)
    (options.out / "scenarios").mkdir(parents=True, exist_ok=True)
    (options.out / "judges").mkdir(exist_ok=True)
    _dump(options.out / "suite.yaml", _suite(options, db, tools))
    criteria = 0
    for task_id, item in converted.items():
        sid = scenario_id(options.domain, task_id)
        _dump(options.out / "scenarios" / f"{_file_name(sid)}.yaml", item.scenario)
        for criterion in item.criteria:
            _dump(options.out / "judges" / f"{_file_name(criterion['id'])}.yaml", criterion)
            criteria += 1
    (options.out / "NOTES.md").write_text(_notes_page(options, converted, skipped), encoding="utf-8")
    return Tau2ImportSummary(
        options.out,
        [scenario_id(options.domain, t) for t in converted],
        criteria,
        skipped,
        {tid: c.notes for tid, c in converted.items() if c.notes},
    )


def _file_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)
