"""A worker's share of a run's limits: N workers together keep to what one process would.

A run split over workers (`--workers N` forked shards, Ray actors) must not multiply what the suite allows:
its concurrency, each provider's connections and its requests- and tokens-per-minute budgets are the run's,
so each of N workers gets 1/N of them (rounded up for counts, at least 1). Measured before this existed
(bench/README.md, `--workers`): two forked workers sent up to twice the suite's concurrency and budget, and
part of the apparent gain at 500 conversations was that doubling, not the second core.
"""

from __future__ import annotations

__all__ = ["LIMITS", "worker_share"]

from simulator.config.suite import Suite

# A provider's settings that are divided among workers (and restored in the merged record).
LIMITS = ("max_connections", "min_connections", "rpm", "tpm")


def _part(count: int, workers: int) -> int:
    return max(1, -(-count // workers))


def worker_share(suite: Suite, workers: int) -> Suite:
    """The suite one of `workers` workers runs: concurrency, connections and rate budgets divided among them."""
    if workers <= 1:
        return suite
    shared = suite.model_copy(deep=True)
    shared.concurrency = _part(suite.concurrency, workers)
    for name, settings in shared.providers.items():
        update: dict[str, float | int | None] = {"max_connections": _part(settings.max_connections, workers)}
        for key in ("rpm", "tpm"):
            if getattr(settings, key):
                update[key] = getattr(settings, key) / workers
        if settings.min_connections is not None:
            update["min_connections"] = min(settings.min_connections, int(update["max_connections"] or 1))
        shared.providers[name] = settings.model_copy(update=update)
    shared._base_dir, shared._file = suite.base_dir, suite.file
    return shared
