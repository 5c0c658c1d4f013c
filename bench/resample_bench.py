"""The bootstraps' CPU before and after their draws went to numpy (issue 47, simulator/stats/resample.py).

Times each bootstrap as it was (tests/support/old_bootstraps.py: one `random.Random.choices` call a
resample) and as it is, on the same inputs, and checks that both give the same interval to the bit. Sizes
are resamples x items: the report's 2,000 resamples (pass^k) and the 10,000 of `compare`'s intervals, over
50 to 2,000 cases, scenarios or vignettes. CPU time of this process, best of `--repeat`; the load average
is printed before and after (the machine's two cores are shared).

    python bench/resample_bench.py [--repeat 3] [--sizes 50,500,2000]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.analysis.tables import _interval, _resampled_means  # noqa: E402
from simulator.stats.basic import paired_bootstrap  # noqa: E402
from simulator.stats.clustered import clustered_paired_bootstrap  # noqa: E402
from tests.support.old_bootstraps import (  # noqa: E402
    old_clustered_paired_bootstrap,
    old_paired_bootstrap,
    old_pass_hat_k_interval,
)


def _cpu(call: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = math.inf, None
    for _ in range(repeat):
        start = time.process_time()
        result = call()
        best = min(best, time.process_time() - start)
    return best, result


def _cases(items: int) -> list[tuple[str, int, Callable[[], Any], Callable[[], Any]]]:
    rng = random.Random(items)
    verdicts_a = [rng.randint(0, 1) for _ in range(items)]
    verdicts_b = [rng.randint(0, 1) for _ in range(items)]
    costs_a = [rng.lognormvariate(-6, 2) for _ in range(items)]
    costs_b = [rng.lognormvariate(-6, 2) for _ in range(items)]
    scenarios = [[rng.choice([-1, 0, 0, 1]) for _ in range(3)] for _ in range(items)]
    vignettes = [[math.comb(rng.randint(0, 10), 2) / math.comb(10, 2)] for _ in range(items)]
    cases: list[tuple[str, int, Callable[[], Any], Callable[[], Any]]] = []
    for iters in (2000, 10_000):
        cases += [
            (
                "paired_bootstrap, 0/1 verdicts",
                iters,
                partial(old_paired_bootstrap, verdicts_a, verdicts_b, iters, 0, 0.95),
                partial(paired_bootstrap, verdicts_a, verdicts_b, iters=iters),
            ),
            (
                "paired_bootstrap, float costs",
                iters,
                partial(old_paired_bootstrap, costs_a, costs_b, iters, 0, 0.95),
                partial(paired_bootstrap, costs_a, costs_b, iters=iters),
            ),
            (
                "clustered_paired_bootstrap, 3 repeats",
                iters,
                partial(old_clustered_paired_bootstrap, scenarios, iters, 0, 0.95),
                partial(clustered_paired_bootstrap, scenarios, iters=iters),
            ),
        ]
    cases.append(
        (
            "pass^k interval over vignettes",
            2000,
            lambda: old_pass_hat_k_interval(random.Random(0), vignettes, 2000),
            lambda: _interval(_resampled_means(random.Random(0), vignettes, 2000)),
        )
    )
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs (default 3)")
    parser.add_argument("--sizes", default="50,500,2000", help="items (cases, scenarios, vignettes)")
    args = parser.parse_args()
    print(f"cores {os.cpu_count()}, load average before {os.getloadavg()[0]:.2f}")
    print(f"{'bootstrap':40} {'resamples':>9} {'items':>6} {'before ms':>10} {'after ms':>9} {'x':>6}  same")
    for items in (int(size) for size in args.sizes.split(",")):
        for name, iters, old, new in _cases(items):
            before, expected = _cpu(old, args.repeat)
            after, got = _cpu(new, args.repeat)
            same = "yes" if repr(got) == repr(expected) else "NO"
            print(
                f"{name:40} {iters:>9,} {items:>6,} {before * 1e3:>10.1f} {after * 1e3:>9.1f} "
                f"{before / after:>6.1f}  {same}"
            )
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
