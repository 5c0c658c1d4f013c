"""The verdict words' false-alarm rates and power, on planted truth (issue 44).

Part 1 (fast, `--seeds N`, default 2000): the engine's decision functions fed planted counts, beside the
rule each replaced (the old `try` rule: fewer failures = IMPROVED, any metric whose only moves were down =
BROKE; the old simulator rule: failed under one simulator only = likely simulator-induced).

Part 2 (`--engine N`, through the engine): a change that does nothing on the triage demo: the suite run
twice with different seeds of the offline user (same bot, fresh randomness), `compare` and the verdict on
the cardiac proposal, N times; prints how often it read FIXED / IMPROVED / BROKE SOMETHING.

    python bench/verdict_words.py --seeds 2000 --engine 50
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.loop.change_verdict import verdict_word  # noqa: E402
from tests.support.planted_verdicts import flaky, induced_labels, planted_try, simulated  # noqa: E402


def _old_try(fixed: int, broken: int, before: int, after: int, moves: list[tuple[int, int]]) -> str:
    if any(r > 0 and i == 0 for r, i in moves):
        return "broke something"
    if before and not after:
        return "fixed"
    return "improved" if after < before else "no evidence"


def _planted_try(
    rng: random.Random, before: list[float], after: list[float], repeats: int
) -> tuple[str, str]:
    """One planted `try`'s verdict, new rule and old."""
    t = planted_try(rng, before, after, repeats)
    return (
        verdict_word(t.fixed, t.broken, t.failures_after, t.moves),
        _old_try(t.fixed, t.broken, t.failures_before, t.failures_after, t.moves),
    )


def _share(words: list[str], hit: set[str]) -> str:
    return f"{100 * sum(w in hit for w in words) / len(words):.1f}%"


def planted(seeds: int) -> None:
    rng = random.Random(0)
    alarms = {"fixed", "improved", "broke something"}
    for label, before, after, repeats, hit in (
        ("no-op change (target fails 50%/30%, 3 repeats)", [0.5, 0.3], [0.5, 0.3], 3, alarms),
        (
            "real fix (90% -> 0-5%, 2 vignettes x 5 repeats)",
            [0.9, 0.9],
            [0.0, 0.05],
            5,
            {"fixed", "improved"},
        ),
        (
            "real fix, demo size (100% -> 0%, 3 failing conversations)",
            [1.0, 1.0, 1.0],
            [0, 0, 0],
            1,
            {"fixed", "improved"},
        ),
    ):
        pairs = [_planted_try(rng, before, after, repeats) for _ in range(seeds)]
        print(
            f"try, {label}: new {_share([p[0] for p in pairs], hit)}, old rule {_share([p[1] for p in pairs], hit)}"
        )
    levels = ["offline", "denier"]
    for label, fail, repeats in (
        ("intermittent bot flaw, p=0.3 under both (22 vignettes)", {"offline": 0.3, "denier": 0.3}, 1),
        ("same, 3 repeats", {"offline": 0.3, "denier": 0.3}, 3),
        ("denier-induced, 0% vs 50%", {"offline": 0.0, "denier": 0.5}, 1),
    ):
        new = old = one_total = 0
        for _ in range(seeds):
            labelled, one = induced_labels(simulated(rng, fail, 22, repeats), levels)
            new += labelled
            one_total += one
            old += one  # the old rule labelled every one-simulator failure
        scenario_seeds = 22 * seeds
        print(
            f"likely simulator-induced, {label}: new {100 * new / scenario_seeds:.1f}% of scenario-seeds "
            f"({100 * new / max(1, one_total):.1f}% of one-simulator failures), old rule {100 * old / scenario_seeds:.1f}%"
        )
    for label, args in (
        ("bot fails 50% whatever the user says, user tells the fact 50%, 6 repeats", (0.5, 0.5, 0.5, 6)),
        ("bot fails iff the fact is missed (95%/0%), 12 repeats", (0.5, 0.95, 0.0, 12)),
    ):
        ps = [flaky(rng, *args) for _ in range(seeds)]
        called = sum(p is not None and p < 0.05 for p in ps)
        print(f"flaky simulation (provenance), {label}: {100 * called / seeds:.1f}%")


def make_intermittent_bot() -> object:
    """The demo bot with its chest-pain flaw fixed and an intermittent one planted instead: each emergency
    it recognises is downgraded to urgent with probability 0.3, from fresh (unseeded) randomness."""
    from examples.triage_bot import TriageBot, load_fixed_rules

    class Intermittent(TriageBot):
        def final_state(self):  # type: ignore[no-untyped-def]
            state = super().final_state()
            if state and state.get("triage_level") == "emergency" and random.random() < 0.3:
                state = {**state, "triage_level": "urgent"}
            return state

    return Intermittent(load_fixed_rules())


def _suite(folder: Path, factory: str) -> Path:
    """The triage demo suite with another bot factory, paths made absolute."""
    text = (ROOT / "scenarios/triage/suite.yaml").read_text()
    text = text.replace('paths: ["."]', f'paths: ["{ROOT / "scenarios/triage"}"]')
    text = text.replace("../../", f"{ROOT}/")
    text = text.replace("examples.triage_bot:make_bot", factory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "suite.yaml"
    path.write_text(text)
    return path


EMERGENCIES = [
    "anaphylaxis-peanut-04", "asthma-inhaler-08", "chest-pain-jaw-elderly-02", "chest-pain-vague-01",
    "child-fever-rash-05", "ectopic-risk-06", "stroke-face-droop-03", "suicidal-ideation-07",
]  # fmt: skip


def _pairs(times: int, fixed_b: bool, runs: int) -> tuple[Counter[str], Counter[str]]:
    """`times` (A, B) pairs: A the intermittent bot, B the same bot (a no-op) or the fixed one (a real fix)."""
    from simulator.analysis.compare import compare_loaded
    from simulator.analysis.rundata import load_run
    from simulator.loop.change_verdict import change_verdict

    folder = Path(tempfile.mkdtemp())
    suite_a = _suite(folder / "a", "bench.verdict_words:make_intermittent_bot")
    suite_b = _suite(
        folder / "b",
        "examples.triage_bot:make_fixed_bot" if fixed_b else "bench.verdict_words:make_intermittent_bot",
    )
    words: Counter[str] = Counter()
    old_words: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(times):
            folders = []
            for side, suite, seed in (("a", suite_a, 2 * i), ("b", suite_b, 2 * i + 1)):
                out = Path(tmp) / f"{side}{i}"
                subprocess.run(
                    [sys.executable, "-m", "simulator", "run", str(suite), "--out", str(out), "--seed", str(seed),
                     "--runs", str(runs), "--no-progress"], cwd=ROOT, capture_output=True, check=False,
                )  # fmt: skip
                folders.append(load_run(out))
            a, b = folders
            comparison = compare_loaded(a, b)
            verdict = change_verdict(comparison, a, b, "outcome.triage_level", EMERGENCIES)
            words[verdict.verdict] += 1
            moves = [(m.only_a, m.only_b) for m in comparison.metrics]
            old_words[_old_try(0, 0, verdict.failures_before, verdict.failures_after, moves)] += 1
    return words, old_words


def engine(times: int) -> None:
    """Through the engine, on the triage demo's scenarios with a bot that downgrades each emergency with
    probability 0.3 (fresh randomness): a no-op change (the same bot again, 3 repeats) and a real fix (the
    fixed bot, 5 repeats); the verdict on the emergency scenarios, new rule and old."""
    new, old = _pairs(times, fixed_b=False, runs=3)
    print(
        f"no-op change through the engine, {times} pairs (same intermittent bot, fresh randomness, 3 repeats): new {dict(new)}, old rule {dict(old)}"
    )
    new, old = _pairs(times, fixed_b=True, runs=5)
    print(
        f"real fix through the engine, {times} pairs (intermittent bot -> fixed bot, 5 repeats): new {dict(new)}, old rule {dict(old)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--engine", type=int, default=0, help="no-op `try`s through the engine (0: skip)")
    args = parser.parse_args()
    planted(args.seeds)
    if args.engine:
        engine(args.engine)


if __name__ == "__main__":
    main()
