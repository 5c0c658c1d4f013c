"""One tau2-bench task as this engine's scenario: the user's instructions as persona, goal and facts (or
a scripted user's lines), the database as the environment's state, and the gold checks as final-state
checks (the database after replaying the gold actions), assertions on the bot's messages
(`communicate_info`) and criteria (`nl_assertions`).

What has no counterpart here is either refused with the reason (`Unsupported`) or listed as a note; the
converter never leaves a gold check out without saying so.
"""

from __future__ import annotations

__all__ = ["Converted", "Unsupported", "convert_task", "scenario_id"]

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from simulator.config.environment import load_function, merge_state
from simulator.config.scenario import as_scenario_id
from simulator.tau2.domain import DomainTool
from simulator.tau2.tasks import Action, EnvCall, Instructions, Task

# tau2's reward components this converter maps (the others are refused by name).
MAPPED_BASIS = {"DB", "COMMUNICATE", "NL_ASSERTION", "ACTION"}


class Unsupported(Exception):
    """A task uses something this engine cannot run faithfully; the message says what and why."""


@dataclass
class Converted:
    """A converted task: the scenario (as YAML data), its criteria, and what was not mapped."""

    scenario: dict[str, Any]
    criteria: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def scenario_id(domain: str, task_id: str) -> str:
    """A scenario id (`config.scenario.as_scenario_id`) that names the tau2 domain and task."""
    return as_scenario_id(f"tau2-{domain}-{task_id}", "_")


def replay(
    state: dict[str, Any], calls: list[tuple[str, dict[str, Any]]], tools: dict[str, DomainTool], what: str
) -> dict[str, Any]:
    """The state after running each (tool, arguments) on a copy of it, as the environment would."""
    state = copy.deepcopy(state)
    for name, arguments in calls:
        tool = tools.get(name)
        if tool is None:
            raise Unsupported(
                f"{what} {name} has no implementation in this domain (implemented: {', '.join(sorted(tools))})"
            )
        try:
            load_function(tool.function)(state, **arguments)
        except Exception as exc:  # a gold action that fails cannot define the gold state
            raise Unsupported(f"{what} {name}({arguments}) failed: {type(exc).__name__}: {exc}") from None
    return state


# "you" is the object ("tells you", "for you") when what follows is one of these or punctuation.
_OBJECT_NEXT = (
    "that|to|a|an|the|about|for|with|if|and|or|but|any|some|this|it|what|how|when|in|on|at|back|up|again|"
    "directly|first|later|now|more"
)
_SWAPS = [
    (re.compile(r"\byou are\b", re.I), "I am"),
    (re.compile(r"\byou're\b", re.I), "I'm"),
    (re.compile(r"\byou were\b", re.I), "I was"),
    (re.compile(r"\byou've\b", re.I), "I've"),
    (re.compile(r"\byourself\b", re.I), "myself"),
    (re.compile(r"\byours\b", re.I), "mine"),
    (re.compile(r"\byour\b", re.I), "my"),
    (re.compile(rf"\byou(?=\s*(?:[.,;:!?)]|$)|\s+(?:{_OBJECT_NEXT})\b)", re.I), "me"),
    (re.compile(r"\byou\b", re.I), "I"),
]


def _person(text: str) -> str:
    """tau2 writes instructions to the user ("You are Emma Kim. Your user id is ..."); the person says them
    in the first person ("I am Emma Kim. My user id is ..."). A mechanical rewrite of the common forms."""

    def swap(replacement: str) -> Any:
        def apply(match: re.Match[str]) -> str:
            if match.group(0)[0].isupper() and replacement != "me":
                return replacement[0].upper() + replacement[1:]
            return replacement

        return apply

    for pattern, replacement in _SWAPS:
        text = pattern.sub(swap(replacement), text)
    return " ".join(text.split())


def _paragraphs(text: str | None) -> list[str]:
    """Blank-line paragraphs, and lines that end a sentence; a line broken mid-sentence stays whole."""
    parts = re.split(r"\n\s*\n|(?<=[.!?:])[ \t]*\n", text or "")
    return [" ".join(part.split()) for part in parts if part.strip()]


def _user_side(
    task: Task, domain: str, instructions: Instructions | str, scripted: bool
) -> tuple[dict[str, Any], list[str]]:
    """Persona, goal and facts (or the scripted user's lines) from the user scenario."""
    notes: list[str] = []
    if isinstance(instructions, str):
        reason, known, unknown, steps = instructions, None, None, ""
    else:
        reason, known, unknown = (
            instructions.reason_for_call,
            instructions.known_info,
            instructions.unknown_info,
        )
        steps = instructions.task_instructions
    persona = task.user_scenario.persona or f"A customer of the {domain} service."
    if unknown:
        # What the user does not know, as they would say it ("I do not know the cabin").
        persona += " In their words: " + _person(unknown)
    data: dict[str, Any] = {
        "persona": " ".join(persona.split()),
        "goal": _person(reason),
        # Known information, then the task's instructions, conditional ones included ("if the agent asks
        # X, say Y"): a simulated user reveals each when it is asked for, or when a person would.
        "facts": [_person(line) for line in _paragraphs(known) + _paragraphs(steps)],
    }
    if scripted:
        lines = [
            _person(line) for line in [" ".join(_paragraphs(reason)), " ".join(_paragraphs(known))] if line
        ]
        data["script"] = {
            "intent": f"tau2-{domain}",
            "kind": "assert",
            "user_message": lines[-1],
            "context": [{"role": "user", "text": line} for line in lines[:-1]],
        }
        if steps.strip():
            notes.append(
                "the scripted user sends the reason for the call and the known information only; the task "
                "instructions (conditional ones included) are played by a simulated user, not by a script"
            )
    return data, notes


def _refuse_unsupported(task: Task) -> None:
    criteria = task.evaluation_criteria
    actions = (criteria.actions if criteria else None) or []
    if task.user_tools or any(action.requestor != "assistant" for action in actions):
        raise Unsupported(
            "user-side tools (dual control): tau2's user acts on a simulated device through domain code; "
            "this engine's user tools read the state (docs/environment.md), so the task cannot run as written"
        )
    if criteria and criteria.env_assertions:
        raise Unsupported(
            "env_assertions call the tau2 domain's assertion functions on its environment; write them as "
            "expected.environment paths by hand"
        )
    state = task.initial_state
    if state and state.message_history:
        raise Unsupported("initial_state.message_history (a conversation already under way) is not mapped")
    if state and state.initialization_data and state.initialization_data.get("user_data"):
        raise Unsupported("initialization_data.user_data sets the user's device, which is not mapped")
    if criteria:
        other = sorted(set(criteria.reward_basis) - MAPPED_BASIS)
        if other:
            raise Unsupported(f"reward_basis {other} has no counterpart here")


def _initial_state(task: Task, db: dict[str, Any], tools: dict[str, DomainTool]) -> dict[str, Any]:
    state = db
    init = task.initial_state
    if init and init.initialization_data and init.initialization_data.get("agent_data"):
        state = merge_state(state, init.initialization_data["agent_data"])
    calls: list[EnvCall] = (init.initialization_actions or []) if init else []
    if any(call.env_type != "assistant" for call in calls):
        raise Unsupported("initialization_actions on the user's environment are not mapped")
    return replay(state, [(c.func_name, c.arguments) for c in calls], tools, "initialization action")


def _gold_checks(
    task: Task, sid: str, initial: dict[str, Any], tools: dict[str, DomainTool]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """Scenario fields and criteria for the task's evaluation criteria."""
    criteria = task.evaluation_criteria
    fields: dict[str, Any] = {}
    notes: list[str] = []
    if criteria is None:
        return fields, [], ["the task has no evaluation_criteria: nothing is checked"]
    basis = set(criteria.reward_basis)
    actions: list[Action] = criteria.actions or []
    gold = replay(initial, [(a.name, a.arguments) for a in actions], tools, "gold action")
    if "DB" in basis:
        # The whole database: one final-state check per table, the gold state after replaying the actions.
        fields["expected"] = {"environment": {table: gold[table] for table in sorted(gold)}}
    elif actions:
        notes.append("reward_basis has no DB: the gold actions were replayed but the database is not checked")
    if criteria.communicate_info:
        if any("|" in info for info in criteria.communicate_info):
            notes.append("a `|` in communicate_info is read as a space (here `|` separates alternatives)")
        if "COMMUNICATE" in basis:
            fields["assertions"] = {
                "must_contain": [info.replace("|", " ") for info in criteria.communicate_info]
            }
        else:
            notes.append("reward_basis has no COMMUNICATE: communicate_info is not checked")
    if "ACTION" in basis:
        fields["tool_checks"] = [
            {
                "tool_called": action.name,
                "id": f"tool_called.{action.action_id or action.name}-{n}",
                "arguments": {
                    k: {"equal": v}
                    for k, v in action.arguments.items()
                    if action.compare_args is None or k in action.compare_args
                },
            }
            for n, action in enumerate(actions, 1)
        ]
    judged = [
        {
            "id": re.sub(r"[^\w.-]+", "_", f"{sid}-nl-{n}"),
            "criterion": text,
            "pass": "the conversation shows the agent did this",
            "fail": "the conversation shows the agent did not do this",
            "applies_to": [sid],
            "severity": "critical" if "NL_ASSERTION" in basis else "major",
            "category": "tau2",
            "notes": f"tau2-bench nl_assertion {n} of task {task.id}",
        }
        for n, text in enumerate(criteria.nl_assertions or [], 1)
    ]
    return fields, judged, notes


def convert_task(
    task: Task, domain: str, db: dict[str, Any], tools: dict[str, DomainTool], scripted: bool
) -> Converted:
    """The scenario and criteria of one task; Unsupported when it cannot run here as written."""
    _refuse_unsupported(task)
    sid = scenario_id(domain, task.id)
    initial = _initial_state(task, db, tools)
    user, notes = _user_side(task, domain, task.user_scenario.instructions, scripted)
    fields, criteria, check_notes = _gold_checks(task, sid, initial, tools)
    changed = {table: value for table, value in initial.items() if db.get(table) != value}
    scenario: dict[str, Any] = {
        "id": sid,
        **user,
        "tags": [f"tau2-{domain}", sid],
        "max_turns": 30,
        **({"environment": changed} if changed else {}),
        **fields,
    }
    purpose = (task.description or {}).get("purpose")
    if purpose:
        scenario["notes"] = " ".join(str(purpose).split())
    extra = sorted(task.model_extra or {})
    notes += check_notes + [
        f"field {name} is not mapped" for name in extra if name not in ("ticket", "annotations")
    ]
    return Converted(scenario, criteria, notes)
