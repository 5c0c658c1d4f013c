"""The commands the documentation shows, read out of README.md and docs/*.md, so one test runs them all.

A page shows a command in a fenced block tagged `bash`, `sh`, `shell` or `console` (an untagged block counts too
when a line of it starts with `simulator` or `$ `). In a `console` block a command starts with `$ ` and the lines
under it, up to the next `$ `, are its output as the page shows it; in the other blocks every line is a command
(a trailing `\\` continues it, `# ...` is a comment). Only `simulator ...` commands (and `python -m simulator ...`)
are run; setup lines a page needs (`sed`, `cp`, `mkdir`) are run by the shell in the page's folder; anything else
(`pip`, `python -m pytest`, a bot started by hand) is the reader's own business and not run.

The output a page shows is compared leniently but not loosely: after normalising what may differ between runs
(run ids, times, judge-set hashes, the temporary folder, box drawing and spacing), each shown line must appear in
the real output, in order; a line `...` skips, a trailing `...` or `…` matches any rest of the line.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND_LANGS = {"bash", "sh", "shell", "console", ""}
SETUP_TOOLS = {"sed", "cp", "mkdir"}

# Commands a page shows that the test cannot run offline, by page: each with its reason. Keep this list short.
NOT_RUNNABLE: dict[tuple[str, str], str] = {
    ("README.md", "simulator validate my-suite.yaml"): "the reader's own suite",
    ("README.md", "simulator run my-suite.yaml"): "the reader's own suite: a real LLM with an API key",
    (
        "collect.md",
        "simulator collect --out runs/live --port 4318 --idle-s 300",
    ): "a live OTLP receiver waiting for a real service's traces (tests/test_collect_receiver.py)",
    (
        "collect.md",
        "simulator collect --out runs/live --suite scenarios/triage/suite.yaml --sample policy.yaml "
        '--alert "fail_rate(no-diagnosis-no-prescribing) > 1%" --alert "signal(handover) > 20%" --alert-window 500 '
        "--webhook http://127.0.0.1:9000/hook --alert-file alerts.jsonl",
    ): "a live receiver posting alerts to a webhook server (tests/test_collect_drift.py)",
    (
        "collect.md",
        "simulator collect --out runs/live --suite live-suite.yaml --expected-attribute app.nurse_disposition "
        '--alert "under_triage > 2%" --alert "over_triage > 30%" --alert-file alerts.jsonl',
    ): "a live receiver waiting for a real service's traces (tests/test_live_triage.py runs one)",
    (
        "held-out.md",
        'simulator unseal runs/<run-id> --by "Dr Lee" --reason "release review"',
    ): "needs a run of a suite with `held_out:`; the page ships none (tests/test_held_out.py unseals one)",
    (
        "desk.md",
        "simulator serve",
    ): "the review desk: a server that runs until stopped (tests/test_serve*.py)",
    ("safety-case.md", "simulator serve --hazards examples/triage_hazards.yaml"): "the review desk server "
    "(tests/test_serve_safety.py)",
    (
        "loop.md",
        "simulator serve",
    ): "the review desk: a server that runs until stopped (tests/test_serve*.py)",
    (
        "localmodel.md",
        "simulator run scenarios/smoke/suite.yaml",
    ): "SmolLM2 through llama.cpp: the `local` extra "
    "and minutes of CPU (tests/test_local_provider.py, marked real_llm)",
    (
        "scale.md",
        "simulator run scenarios/triage/suite.yaml --backend ray --address auto",
    ): "joins a running Ray cluster (tests/test_ray_connect.py)",
    (
        "scale.md",
        "simulator run scenarios/triage/suite.yaml --backend ray",
    ): "starts a local Ray cluster, slow to start (tests/test_ray.py runs the same path)",
    (
        "scale.md",
        "simulator run scenarios/triage/suite.yaml --backend ray --address ray://head:10001 --workers 8",
    ): ("joins a remote Ray cluster"),
    # A sample of an error message needs the broken file it names, which the repo does not ship.
    ("judges.md", "simulator validate judges"): "the error for a broken criterion file "
    "(tests/test_judge_points_applies.py)",
    (
        "languages.md",
        "simulator validate scenarios/mine/suite.yaml",
    ): "the error for a scenario in a language without phrases (tests/test_languages.py)",
    ("scenarios.md", "simulator validate scenarios/"): "the errors for two broken scenario files "
    "(tests/test_scenarios.py)",
    ("judges.md", "simulator judge runs/demo --suite suite-judged.yaml"): "a suite with an LLM judge "
    "(tests/test_judges_cli.py judges with the fake server)",
    (
        "judges.md",
        "simulator labels import runs/demo ana.csv --labeller ana",
    ): "a sheet filled in by a person (tests/test_agreement.py)",
    ("reports.md", "simulator compare runs/baseline runs/candidate --fail-on-regression"): "two runs of the "
    "reader's own bot with two prompts (tests/test_compare.py)",
    # Calibration reads labels a person wrote in the exported sheet.
    (
        "fidelity.md",
        "simulator calibrate runs/<id> labels-simulator/labels.csv",
    ): "the sheet once a person has labelled it (tests/test_fidelity.py)",
    ("fidelity.md", "simulator calibrate runs/<id> --labeller ana"): "labels a person made in the desk "
    "(tests/test_agreement.py)",
    ("reports.md", "simulator calibrate runs/<id> labels.csv"): "the sheet once a person has labelled it "
    "(tests/test_calibrate.py)",
    ("voice.md", "simulator run examples/voice/suite.yaml"): "the `voice` extra and the example pipecat bot "
    "(tests/test_voice_example.py, marked pipecat)",
}


@dataclass
class Step:
    """One command a page shows, where, and the output shown under it (console blocks)."""

    page: Path
    line: int
    command: str
    shown: list[str] = field(default_factory=list)
    comment: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def exit_code(self) -> int | None:
        """The exit code its comment states (`# exit 1: a control not met`), or None."""
        stated = re.search(r"\bexit (\d+)\b", self.comment)
        return int(stated.group(1)) if stated else None

    @property
    def is_simulator(self) -> bool:
        return self.command.startswith("simulator ")

    @property
    def is_setup(self) -> bool:
        words = self.command.split()
        return bool(words) and words[0] in SETUP_TOOLS


def pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def steps(page: Path) -> list[Step]:
    """Every command of a page, in order, `python -m simulator` spelled `simulator`."""
    text = page.read_text(encoding="utf-8")
    found: list[Step] = []
    for match in _FENCE.finditer(text):
        lang, body = match.group(1), match.group(2)
        lines = body.splitlines()
        if lang not in COMMAND_LANGS:
            continue
        if lang == "" and not any(_is_command_start(line.lstrip("$ ")) for line in lines):
            continue
        first = text[: match.start(2)].count("\n") + 1
        if lang == "console" or (lang == "" and any(line.startswith("$ ") for line in lines)):
            found += _console_steps(page, first, lines)
        else:
            found += _script_steps(page, first, lines)
    return found


def _is_command_start(line: str) -> bool:
    return line.startswith(("simulator ", "python -m simulator "))


def _spelled(command: str) -> str:
    command = " ".join(command.split())
    if command.startswith("python -m simulator "):
        command = "simulator " + command[len("python -m simulator ") :]
    return command


def _uncomment(line: str) -> str:
    """The line without a trailing `# comment` (a # inside quotes stays)."""
    return _split_comment(line)[0]


def _split_comment(line: str) -> tuple[str, str]:
    """The line and its trailing `# comment` apart (a # inside quotes stays)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def _script_steps(page: Path, first: int, lines: list[str]) -> list[Step]:
    found: list[Step] = []
    pending = ""
    comments = ""
    start = 0
    for offset, raw in enumerate(lines):
        line, comment = _split_comment(raw)
        if not pending:
            start = first + offset
        comments += " " + comment
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined = pending + line
        pending = ""
        for part in joined.split(" && "):
            if command := _spelled(part):
                found.append(Step(page, start, command, comment=comments.strip()))
        comments = ""
    return found


def _console_steps(page: Path, first: int, lines: list[str]) -> list[Step]:
    found: list[Step] = []
    continuing = False
    for offset, raw in enumerate(lines):
        line, comment = _split_comment(raw[2:] if raw.startswith("$ ") else raw)
        if continuing and found:
            found[-1].command = _spelled(found[-1].command + " " + line.rstrip("\\"))
            found[-1].comment = (found[-1].comment + " " + comment).strip()
            continuing = line.endswith("\\")
        elif raw.startswith("$ "):
            continuing = line.endswith("\\")
            found.append(Step(page, first + offset, _spelled(line.rstrip("\\")), comment=comment))
        elif found:
            found[-1].shown.append(raw)
    return found


_OPTIONAL = re.compile(r"\s*\[[^\[\]]*\]")


def without_optional(command: str) -> str:
    """The command without its optional `[...]` parts."""
    return _OPTIONAL.sub("", command)


def why_not_run(step: Step) -> str | None:
    """The reason a shown command is not run (NOT_RUNNABLE, as shown or without its optional parts), or None."""
    page = step.page.name
    return NOT_RUNNABLE.get((page, step.command)) or NOT_RUNNABLE.get((page, _OPTIONAL.sub("", step.command)))


def runnable_args(command: str, last_run: str | None, runs: list[str]) -> list[str]:
    """The argv for `simulator.cli.main`: optional `[...]` parts dropped, placeholders filled with the page's runs.

    `runs/<run-id>` and `runs/<id>` are the page's latest run folder; `runs/<A>` and `runs/<B>` its two latest.
    """
    text = _OPTIONAL.sub("", command)
    if last_run is not None:
        text = text.replace("runs/<run-id>", last_run).replace("runs/<id>", last_run)
        text = text.replace("runs/<B>", last_run)
        text = text.replace("runs/<A>", runs[-2] if len(runs) > 1 else last_run)
    return shlex.split(text)[1:]


_BOX = re.compile(r"[\u2500-\u257f]")
_VARYING = [
    (re.compile(r"sha256:[0-9a-f]{6,64}"), "sha256:HASH"),
    (re.compile(r"\b\d{8}-\d{6}-[\w-]+"), "RUNID"),
    (re.compile(r"\b\d+:\d\d:\d\d\b"), "TIME"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s)\b"), "TIME"),
]


def normalise(text: str, folder: Path) -> str:
    """Text with what differs between two honest runs replaced, boxes removed and spacing collapsed."""
    text = text.replace(str(folder) + "/", "").replace(str(folder), ".")
    text = _BOX.sub(" ", text)
    for pattern, token in _VARYING:
        text = pattern.sub(token, text)
    return " ".join(text.split())


def missing_lines(shown: list[str], output: str, folder: Path) -> list[str]:
    """The shown lines not found, in order, in the output (empty when the page matches). A line's ` · `-separated
    pieces are found one by one, so a page may show a line with some of its pieces left out."""
    actual = normalise(output, folder)
    at = 0
    missing = []
    for line in shown:
        for piece in normalise(line, folder).split(" · "):
            want = piece.strip().removesuffix("...").removesuffix("…").rstrip()
            if not want or want in ("...", "…"):
                continue
            found = actual.find(want, at)
            if found < 0:
                missing.append(line)
                break
            at = found + len(want)
    return missing
