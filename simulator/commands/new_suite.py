"""`simulator new suite`: a commented suite for an HTTP bot, with the judge model asked for.

A newcomer's first suite of their own is usually judge-less (the sample suite has `judges.model: null`) and
nothing says what to choose. This asks for the bot's URL and the judge model (or takes them as flags),
suggests a judge and a simulated-user model of different families (a judge favours text of its own family,
seed 001), writes the suite, loads it back, and never overwrites a file.
"""

from __future__ import annotations

__all__ = ["SUGGESTED_JUDGE", "SUGGESTED_USER", "register", "suggested_user"]

import argparse
import sys
from pathlib import Path
from typing import Any

from simulator.commands.outputs import not_empty
from simulator.errors import UserError
from simulator.visible import echo

SUGGESTED_JUDGE = "anthropic:claude-sonnet-4-5"
SUGGESTED_USER = "openai:gpt-4.1-mini"
# The simulated user suggested for a judge of each family: always another family.
_USER_FOR = {"claude": "openai:gpt-4.1-mini", "gpt": "anthropic:claude-haiku-4-5"}
_NO_JUDGE = ("none", "null", "-")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `suite` to the kinds of `simulator new` (commands/authoring.py registers `new`)."""
    new = subparsers.choices.get("new")
    kinds = (
        next((a for a in new._actions if isinstance(a, argparse._SubParsersAction)), None) if new else None
    )
    if kinds is None:
        raise RuntimeError("simulator.commands.new_suite must come after simulator.commands.authoring")
    suite = kinds.add_parser(
        "suite",
        help="a commented suite for an HTTP bot (asks for the URL and the judge model)",
        description=(
            "Write a commented suite for a bot behind HTTP, and the scenarios/ and judges/ folders beside it. "
            f"Suggests the judge {SUGGESTED_JUDGE} and a simulated user of another family ({SUGGESTED_USER}). "
            "Never overwrites a file. Exit 0 written, 2 on a user error (a file that exists, a bad URL)."
        ),
    )
    suite.add_argument("--url", type=not_empty, help="the bot's endpoint, e.g. http://127.0.0.1:8765/chat")
    suite.add_argument(
        "--judge-model",
        type=not_empty,
        help=f"the LLM judge (suggested: {SUGGESTED_JUDGE}); `none` for code checks only",
    )
    suite.add_argument(
        "--user-model",
        type=not_empty,
        help="the simulated user, of another family than the judge (default: suggested), or offline",
    )
    suite.add_argument("--name", type=not_empty, help="the suite's name (default: the folder's name)")
    suite.add_argument(
        "--out", type=Path, default=Path("suite.yaml"), help="file to write (default suite.yaml)"
    )
    suite.set_defaults(handler=cmd_new_suite)


def suggested_user(judge_model: str | None) -> str:
    """A simulated-user model of another family than the judge's."""
    from simulator.judging.hygiene import model_family

    return _USER_FOR.get(model_family(judge_model) or "", SUGGESTED_USER)


def _url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise UserError(f"--url {value!r}: the bot's URL starts with http:// or https://")
    return value


def _answers(args: argparse.Namespace) -> dict[str, str | None]:
    from simulator.commands.authoring import Asker

    ask = Asker()
    if not ask.interactive and not args.judge_model:
        raise UserError(
            f"missing --judge-model: stdin is not a terminal, so pass it as a flag; suggested: --judge-model "
            f"{SUGGESTED_JUDGE} --user-model {SUGGESTED_USER} (two families), or --judge-model none for code "
            "checks only"
        )
    url = _url(ask.one(args.url, "the bot's URL (it answers POST {conversation_id, turn, message})", "--url"))
    if ask.interactive and not args.judge_model:
        echo(f"The judge reads every conversation; suggested: {SUGGESTED_JUDGE} (`none`: code checks only).")
    judge = ask.one(
        args.judge_model, "judge model", "--judge-model", SUGGESTED_JUDGE if ask.interactive else None
    )
    judge_model = None if judge.lower() in _NO_JUDGE else judge
    user = ask.one(args.user_model, "simulated-user model (another family than the judge)", "--user-model",
                   suggested_user(judge_model))  # fmt: skip
    name = args.name or args.out.resolve().parent.name or "suite"
    return {"url": url, "judge_model": judge_model, "user_model": user, "name": name}


# The suite's fields `new suite` fills from a flag: a problem there is the flag's.
_FLAGS = {"bot.url": "--url", "judges.model": "--judge-model", "user.model": "--user-model", "name": "--name"}


def _check_before_writing(out: Path, text: str) -> None:
    """The suite as it would be written to `out`, loaded and checked as `validate` checks it (its URL, its
    models); a problem in a field a flag filled names the flag and the value given."""
    from simulator.api.checks import preflight_problems
    from simulator.config.suite import load_suite
    from simulator.errors import Problem

    try:
        problems = preflight_problems(load_suite(out, text=text))
    except UserError as exc:
        problems = exc.problems or [Problem(str(out), str(exc))]
    if problems:
        raise UserError(
            f"{out} was not written",
            [_flag_problem(p, text, out) for p in problems],
        )


def _flag_problem(problem: Any, text: str, out: Path) -> Any:
    """`problem` said of the flag that gave the field's value (`--url http://: ... names no host`)."""
    from simulator.config.yamlfile import parse_yaml
    from simulator.errors import Problem

    flag = _FLAGS.get(problem.field or "")
    if flag is None:
        return problem
    value: Any = parse_yaml(text, out).data
    for part in (problem.field or "").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    from simulator.config.secrets import redact_url

    return Problem(f"{flag} {redact_url(str(value))}", problem.message, field=None)


def cmd_new_suite(args: argparse.Namespace) -> int:
    from simulator.commands.outputs import make_folder_for
    from simulator.commands.templates import suite_yaml
    from simulator.judging.hygiene import same_family_warnings

    out: Path = args.out
    if out.exists():
        raise UserError(f"{out} already exists; new suite never overwrites a file: choose another --out")
    answers = _answers(args)
    for warning in same_family_warnings(answers["judge_model"], {"simulated user": answers["user_model"]}):
        echo(f"warning: {warning}", file=sys.stderr)
    text = suite_yaml({**answers, "scenarios": "scenarios", "judges": "judges"})
    make_folder_for("--out", out)  # a file above --out, or --out a folder: one line naming --out
    _check_before_writing(out, text)  # what `validate` would refuse is never written
    out.write_text(text, encoding="utf-8")
    for name in ("scenarios", "judges"):
        (out.parent / name).mkdir(exist_ok=True)
    echo(f"wrote {out}: bot {answers['url']}, judge {answers['judge_model'] or 'none (code checks only)'}, "
          f"simulated user {answers['user_model']}")  # fmt: skip
    if answers["judge_model"] is None:
        echo(
            f"no judge: LLM criteria will be recorded as not judged; set judges.model (e.g. {SUGGESTED_JUDGE})"
        )
    folder = out.parent
    echo(f"next: simulator new scenario --out {folder / 'scenarios' / 'ID.yaml'}")
    echo(f"      simulator new criterion --out {folder / 'judges' / 'ID.yaml'}")
    echo(f"      simulator validate {out}   ·   simulator run {out}")
    return 0
