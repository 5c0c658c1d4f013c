"""Time and peak memory of validating hostile or large scenario files (issue 11, item 6); prints figures.

Each case runs `load_scenarios` in a child process (so peak RSS is its own) with a 2 GB address-space cap:
- an alias bomb: `levels` levels of 9 aliases each, a few hundred bytes;
- large files: one YAML list of many scenarios, 0.5 to 8 MB (files over the limit are refused, and the
  refusal time is what is measured).

Run by hand: `python bench/yaml_validate.py`. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    from pathlib import Path
    from simulator.errors import UserError
    from simulator.config.loading import load_scenarios
    start = time.perf_counter()
    try:
        outcome = f"{len(load_scenarios([Path(sys.argv[1])]))} scenarios"
    except UserError as exc:
        outcome = "refused: " + exc.render().splitlines()[-1].strip()[:110]
    except MemoryError:
        outcome = "MemoryError"
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{elapsed:.3f}\\t{rss:.0f}\\t{outcome}")
    """
)


def alias_bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "id: bomb\npersona: p\ngoal: g\nexpected:\n" + "\n".join("  " + line for line in lines) + "\n"


def large_file(megabytes: float) -> str:
    one = (
        "- id: s{n}\n  persona: A 52-year-old man who writes short messages with typos.\n"
        "  goal: Find out whether he should go to the clinic tomorrow about chest pain.\n"
        "  facts: [Pressure in the chest for two hours., The pain goes to the left arm.]\n"
        "  expected: {{triage_level: emergency}}\n  tags: [cardiac, high-stakes]\n"
    )
    size = len(one.format(n=0))
    return "".join(one.format(n=n) for n in range(int(megabytes * 1e6 / size)))


def measure(text: str, folder: Path, name: str) -> tuple[str, ...]:
    path = folder / f"{name}.yaml"
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=600
    )
    if out.returncode != 0:
        return ("-", "-", f"crashed (exit {out.returncode}): {out.stderr.strip().splitlines()[-1:]}")
    seconds, rss, outcome = out.stdout.strip().split("\t", 2)
    return (seconds, rss, outcome)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.5,1,2,4,8", help="large-file sizes in MB")
    parser.add_argument("--levels", default="4,6,8,9", help="alias-bomb depths")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for levels in map(int, args.levels.split(",")):
            text = alias_bomb(levels)
            rows.append(
                (f"alias bomb, {levels} levels ({len(text)} B)", *measure(text, folder, f"bomb{levels}"))
            )
        for megabytes in map(float, args.sizes.split(",")):
            text = large_file(megabytes)
            rows.append(
                (f"list of scenarios, {len(text) / 1e6:.1f} MB", *measure(text, folder, f"big{megabytes}"))
            )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'case':<36} {'seconds':>8} {'peak MB':>8}  outcome")
    for case, seconds, rss, outcome in rows:
        print(f"{case:<36} {seconds:>8} {rss:>8}  {outcome}")


if __name__ == "__main__":
    main()
