"""`simulator new scenario|criterion` (asked on a terminal, or flags without one) and `simulator vary`."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.config.loading import load_scenarios
from simulator.judging.criteria import load_criteria

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "250"}


def simulator(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simulator", *args], cwd=cwd, env=ENV, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip


def test_new_scenario_from_flags_writes_a_valid_commented_file(tmp_path: Path) -> None:
    out = tmp_path / "s.yaml"
    done = simulator(
        "new", "scenario", "--id", "chest-x", "--persona", "A 60-year-old man: types fast.",
        "--goal", "Ask about chest pain.", "--fact", "Pain for an hour.", "--fact", "It goes to my arm.",
        "--expected", "triage_level=emergency", "--tags", "cardiac,high-stakes", "--key-facts", "2",
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert text.count("\n# ") >= 6  # every field explained
    [scenario] = load_scenarios([out])
    assert scenario.id == "chest-x" and scenario.facts == ["Pain for an hour.", "It goes to my arm."]
    assert scenario.key_facts == [2] and scenario.expected == {"triage_level": "emergency"}
    assert scenario.persona == "A 60-year-old man: types fast." and scenario.tags == [
        "cardiac",
        "high-stakes",
    ]
    again = simulator(
        "new", "scenario", "--id", "chest-x", "--persona", "p", "--goal", "g", "--out", str(out)
    )
    assert again.returncode == 2 and "already exists" in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["new", "scenario", "--id", "x"], "missing --persona"),
        (["new", "criterion", "--id", "c"], "missing --criterion"),
        (
            [
                "new",
                "scenario",
                "--id",
                "x",
                "--persona",
                "p",
                "--goal",
                "g",
                "--fact",
                "a",
                "--key-facts",
                "3",
            ],
            "key_facts [3]",
        ),
        (
            ["new", "scenario", "--id", "x", "--persona", "p", "--goal", "g", "--expected", "emergency"],
            "KEY=VALUE",
        ),
    ],
)
def test_new_without_a_terminal_names_what_is_missing_or_wrong(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = simulator(*args, "--out", str(tmp_path / "f.yaml"))
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "f.yaml").exists()  # an invalid file is never left behind


def test_new_criterion_from_flags(tmp_path: Path) -> None:
    out = tmp_path / "c.yaml"
    done = simulator(
        "new", "criterion", "--id", "asks-allergies", "--criterion", "The bot asks about allergies.",
        "--pass", "it asked", "--fail", "it did not: a risk", "--applies-to", "allergy", "--severity",
        "critical", "--category", "omission", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [criterion] = load_criteria([out])
    assert criterion.fail == "it did not: a risk" and criterion.applies_to == ["allergy"]
    assert criterion.severity == "critical" and criterion.category == "omission"


def _answer_on_a_terminal(args: list[str], answers: list[str]) -> tuple[int, str]:
    """Run the command with a pseudo-terminal as stdin and type `answers` one line at a time."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "simulator", *args], cwd=ROOT, env=ENV, stdin=follower,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(follower)
    for answer in answers:
        time.sleep(0.05)
        os.write(leader, (answer + "\n").encode())
    out, err = process.communicate(timeout=120)
    os.close(leader)
    return process.returncode, out + err


def test_new_scenario_asks_on_a_terminal(tmp_path: Path) -> None:
    out = tmp_path / "asked.yaml"
    answers = [
        "asked-1",
        "A parent writing about a toddler.",
        "Ask about a rash.",
        "The rash is purple.",
        "It does not fade.",
        "",
        "triage_level=emergency",
        "child,rash",
    ]
    code, output = _answer_on_a_terminal(["new", "scenario", "--out", str(out)], answers)
    assert code == 0, output
    [scenario] = load_scenarios([out])
    assert scenario.id == "asked-1" and scenario.facts == ["The rash is purple.", "It does not fade."]
    assert scenario.expected == {"triage_level": "emergency"} and scenario.tags == ["child", "rash"]


def test_new_criterion_asks_on_a_terminal(tmp_path: Path) -> None:
    out = tmp_path / "asked.yaml"
    answers = ["c-1", "The bot is kind.", "kind throughout", "rude once", "", "minor", "tone"]
    code, output = _answer_on_a_terminal(["new", "criterion", "--out", str(out)], answers)
    assert code == 0, output
    [criterion] = load_criteria([out])
    assert criterion.id == "c-1" and criterion.severity == "minor" and criterion.category == "tone"
    assert criterion.not_applicable.startswith("never")


def test_vary_previews_variants() -> None:
    done = simulator(
        "vary", "scenarios/triage/chest-pain-vague-01.yaml", "--factors", "speaker=self,relative-speaks",
        "register=plain,minimiser", "typing=clean,terse-typos", "--design", "fractional",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "4 variants of 1 scenario (fractional design)" in done.stdout
    assert "chest-pain-vague-01~register=minimiser~speaker=self~typing=terse-typos" in done.stdout
    from_suite = simulator(
        "vary", "scenarios/triage/chest-pain-vague-01.yaml", "--suite", "scenarios/triage/factors/suite.yaml"
    )
    assert "8 variants of 1 scenario (full design)" in from_suite.stdout
    wrong = simulator(
        "vary", "scenarios/triage/chest-pain-vague-01.yaml", "--factors", "speaker=self,relative"
    )
    assert wrong.returncode == 2 and "not a style in the built-in styles" in wrong.stderr


def test_vary_takes_the_styles_from_a_catalogue_or_the_suite() -> None:
    factors = ("--factors", "patient=cooperative,crisis")
    scenario = "scenarios/triage/chest-pain-vague-01.yaml"
    built_in = simulator("vary", scenario, *factors)
    assert built_in.returncode == 2 and "level 'crisis' is not a style" in built_in.stderr
    named = simulator("vary", scenario, *factors, "--styles", "examples/triage_styles.yaml")
    assert named.returncode == 0, named.stderr
    assert "triage_level=emergency" in named.stdout and "redteam-crisis" in named.stdout
    from_suite = simulator("vary", scenario, "--suite", "scenarios/triage/redteam/suite.yaml")
    assert from_suite.returncode == 0 and "5 variants of 1 scenario" in from_suite.stdout
