"""`new scenario`, `new criterion` and `vary`: help domain experts write valid files and preview variants.

`new` asks for each field on a terminal; when stdin is not a terminal (a script, CI) it takes the fields
as flags and asks nothing. Either way it writes a commented YAML file and loads it back, so what it wrote
is known to be valid.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simulator.commands.asking import Asker, write_new
from simulator.errors import UserError
from simulator.plural import plural
from simulator.visible import echo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    new = subparsers.add_parser(
        "new", help="write a new scenario, criterion or hazard file (asks for the fields)"
    )
    kinds = new.add_subparsers(dest="new_kind", metavar="KIND", required=True)
    scenario = kinds.add_parser("scenario", help="a scenario: persona, goal, facts, expected outcome")
    scenario.add_argument("--id")
    scenario.add_argument("--persona")
    scenario.add_argument("--goal")
    scenario.add_argument("--fact", action="append", help="a fact the person knows (repeat the flag)")
    scenario.add_argument(
        "--expected",
        action="append",
        help="KEY=VALUE: your suite's outcome key and the right value, e.g. level=urgent",
    )
    scenario.add_argument("--tags", help="comma-separated tags")
    scenario.add_argument("--key-facts", help="comma-separated fact numbers (from 1) the outcome depends on")
    scenario.add_argument("--max-turns", type=int, default=12)
    scenario.add_argument("--out", type=Path, help="file to write (default <id>.yaml)")
    scenario.add_argument("--force", action="store_true", help="overwrite an existing file")
    scenario.set_defaults(handler=cmd_new_scenario)
    criterion = kinds.add_parser("criterion", help="a criterion: what a pass and a fail mean")
    criterion.add_argument("--id")
    criterion.add_argument("--criterion", dest="text")
    criterion.add_argument("--pass", dest="pass_")
    criterion.add_argument("--fail")
    criterion.add_argument("--not-applicable", dest="not_applicable")
    criterion.add_argument("--applies-to", help="comma-separated tags (default: every scenario)")
    criterion.add_argument("--severity", choices=["critical", "major", "minor"], default=None)
    criterion.add_argument("--category", default=None)
    criterion.add_argument("--out", type=Path, help="file to write (default <id>.yaml)")
    criterion.add_argument("--force", action="store_true", help="overwrite an existing file")
    criterion.set_defaults(handler=cmd_new_criterion)
    from simulator.commands.safety import add_new_hazard

    add_new_hazard(kinds)

    vary = subparsers.add_parser("vary", help="preview the factorial variants of a scenario file")
    vary.add_argument("scenario", type=Path, help="a scenario file (or folder)")
    vary.add_argument(
        "--factors", nargs="+", metavar="NAME=LEVEL,LEVEL", help="e.g. speaker=self,relative-speaks"
    )
    vary.add_argument("--suite", type=Path, help="take the factors and design from this suite file")
    vary.add_argument("--design", choices=["full", "fractional"], help="default: the suite's, else full")
    vary.add_argument(
        "--styles",
        type=Path,
        help="a style catalogue (YAML); default: the suite's user.styles, else built-in",
    )
    vary.set_defaults(handler=cmd_vary)


def _write_checked(out: Path, text: str, kind: Any, force: bool) -> None:
    """Write `text` to `out` once the loader would take it: checked before writing, so a refused answer
    never leaves a file (nor names one that was never kept)."""
    from simulator.config.documents import text_problems

    problems = text_problems(text, out, kind)
    if problems:
        raise UserError(f"{out} was not written: what it would say is invalid", problems)
    write_new(out, text, force)


def _expected(pairs: list[str]) -> dict[str, str]:
    """`--expected KEY=VALUE` (repeated): each key one word, as the suite's outcome key is written."""
    import re

    expected = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            why = "write KEY=VALUE (your suite's outcome key)"
        elif not key.strip():
            why = "the key before = is empty"
        elif not re.fullmatch(r"[\w.-]+", key.strip()):
            why = f"the key '{key}' should be one word (letters, digits, _ . -)"
        elif not value.strip():
            why = "the value after = is empty"
        else:
            expected[key.strip()] = value.strip()
            continue
        raise UserError(f"--expected {pair}: {why}; write --expected KEY=VALUE, one word before the =")
    return expected


def cmd_new_scenario(args: argparse.Namespace) -> int:
    from simulator.commands.templates import scenario_yaml
    from simulator.config.scenario import SCENARIO_DOCUMENTS

    ask = Asker()
    fields: dict[str, Any] = {
        "id": ask.one(args.id, "id (letters, digits, dashes)", "--id"),
        "persona": ask.one(args.persona, "persona (who is writing, how they write)", "--persona"),
        "goal": ask.one(args.goal, "goal (what they want from the bot)", "--goal"),
        "facts": ask.many(args.fact, "facts the person knows, revealed when asked"),
        "expected": _expected(args.expected or []),
        "tags": [t for t in (args.tags or "").split(",") if t.strip()],
        "max_turns": args.max_turns,
    }
    if not fields["expected"] and ask.interactive:
        answer = ask.one(None, "expected outcome as KEY=VALUE (empty for none)", "--expected", default="")
        fields["expected"] = _expected([answer]) if answer else {}
    if args.tags is None and ask.interactive:
        fields["tags"] = [
            t for t in ask.one(None, "tags, comma-separated", "--tags", "").split(",") if t.strip()
        ]
    try:
        fields["key_facts"] = [int(n) for n in (args.key_facts or "").split(",") if n.strip()]
    except ValueError as exc:
        raise UserError("--key-facts takes fact numbers from 1, e.g. --key-facts 1,3") from exc
    out = args.out or Path(f"{fields['id']}.yaml")
    _write_checked(out, scenario_yaml(fields), SCENARIO_DOCUMENTS, args.force)
    echo(f"wrote {out}; check it with: simulator validate {out}")
    return 0


def cmd_new_criterion(args: argparse.Namespace) -> int:
    from simulator.commands.templates import criterion_yaml
    from simulator.judging.criteria import CRITERION_DOCUMENTS

    ask = Asker()
    fields = {
        "id": ask.one(args.id, "id (letters, digits, dashes)", "--id"),
        "criterion": ask.one(args.text, "criterion (what the bot must do, in plain words)", "--criterion"),
        "pass": ask.one(args.pass_, "pass means", "--pass"),
        "fail": ask.one(args.fail, "fail means", "--fail"),
        "not_applicable": ask.one(
            args.not_applicable,
            "not applicable when",
            "--not-applicable",
            "never; every conversation can be judged on this.",
        ),
        "applies_to": [t for t in (args.applies_to or "").split(",") if t.strip()],
        "severity": ask.one(args.severity, "severity (critical, major, minor)", "--severity", "major"),
        "category": ask.one(
            args.category, "category (safety, omission, scope, ...)", "--category", "general"
        ),
    }
    out = args.out or Path(f"{fields['id']}.yaml")
    _write_checked(out, criterion_yaml(fields), CRITERION_DOCUMENTS, args.force)
    echo(f"wrote {out}; add its folder to judges.paths in your suite")
    return 0


def _factor_flags(values: list[str]) -> dict[str, list[Any]]:
    factors: dict[str, list[Any]] = {}
    for value in values:
        name, _, levels = value.partition("=")
        if not name or not levels:
            raise UserError(f"--factors {value}: write NAME=LEVEL,LEVEL, e.g. register=plain,minimiser")
        factors[name] = [level for level in levels.split(",") if level]
    return factors


def cmd_vary(args: argparse.Namespace) -> int:
    from rich.table import Table

    from simulator.config.factors import check_scenario_styles, expand_factors, levels_of
    from simulator.config.loading import load_scenarios
    from simulator.config.styles import DEFAULT_STYLES, load_styles, suite_styles
    from simulator.visible import terminal_console

    factors: dict[str, list[Any]] = {}
    design = args.design
    styles = DEFAULT_STYLES
    if args.suite is not None:
        from simulator.config.suite import load_suite

        suite = load_suite(args.suite)
        factors, design, styles = suite.factors, design or suite.factor_design, suite_styles(suite)
    if args.styles is not None:
        styles = load_styles(args.styles)
    if args.factors:
        factors = _factor_flags(args.factors)
    if not factors:
        raise UserError("name the factors: --factors speaker=self,relative-speaks ... or --suite SUITE")
    for name, entries in factors.items():
        try:
            levels_of(entries, styles)
        except ValueError as exc:
            raise UserError(f"factor '{name}': {exc}") from exc
    bases = load_scenarios([args.scenario])
    check_scenario_styles(bases, styles)
    variants = expand_factors(bases, factors, design or "full", styles)
    table = Table("variant id", "facts", "volunteers", "tags added", "expected")
    table.columns[0].overflow = "fold"
    personas: dict[str, str] = {}
    for base in bases:
        for v in (x for x in variants if x.base == base.id):
            levels = ", ".join(f"{k}={lv}" for k, lv in v.factors.items())
            personas.setdefault(levels, v.persona[len(base.persona) :].strip() or "(the persona as written)")
            added = [t for t in v.tags if t not in base.tags]
            table.add_row(
                v.id, str(len(v.facts)), str(v.volunteers), ", ".join(added) or "–",
                ", ".join(f"{k}={x}" for k, x in v.expected.items()),
            )  # fmt: skip
    console = terminal_console()
    console.print(table)
    for levels, text in personas.items():
        console.print(f"[bold]{levels}[/]: {text}")
    console.print(
        f"{plural(len(variants), 'variant')} of {plural(len(bases), 'scenario')} ({design or 'full'} design)"
    )
    return 0
