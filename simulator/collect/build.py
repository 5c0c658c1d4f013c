"""The collector as the command line configures it: suite, judge stage, budget, alerts, wired together."""

from __future__ import annotations

__all__ = ["build_collector", "state_problems"]

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simulator.collect.service import STATE, CollectOptions, Collector
from simulator.diskerrors import os_error_line
from simulator.errors import UserError

# A path under --out of the wrong shape: the collector owns that layout, so it is the user's folder, not a bug.
_SHAPE_FIXES = {
    errno.ENOTDIR: "a part of that path is a file, not a folder; move the file away or name another --out",
    errno.EEXIST: "a file stands where the collector keeps a folder; move it away or name another --out",
    errno.EISDIR: "a folder stands where the collector keeps a file; move it away or name another --out",
    errno.ELOOP: "a symbolic link there leads back to itself; remove it or name another --out",
    errno.ENAMETOOLONG: "the path is too long; name a shorter --out",
}


@contextmanager
def state_problems(out: Path) -> Iterator[None]:
    """An OSError on --out or a path under it (the run folders, the state folder `.collect`) as one
    UserError naming the path and the fix: a read-only, full or wrongly shaped output folder is the user's
    environment, found at start-up (building the collector, recovering its journal) before anything is
    served. An OSError on another path passes unchanged (the command line's rule: a disk error is one line,
    anything else a bug)."""
    try:
        yield
    except OSError as exc:
        where = exc.filename
        if where is None:  # a failed write names no file: only a disk error is known to be --out's
            said = os_error_line(OSError(exc.errno, exc.strerror, str(out)))
        elif isinstance(where, str | bytes) and _under(Path(os.fsdecode(where)), out):
            fix = _SHAPE_FIXES.get(exc.errno or 0, "check that path, or name another --out")
            said = os_error_line(exc) or f"cannot use {os.fsdecode(where)}: {exc.strerror or exc}; {fix}"
        else:
            said = None
        if said is None:
            raise
        raise UserError(f"--out {out}: {said}") from None


def _under(path: Path, folder: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(folder))  # no symlink resolved


def _judge(
    options: CollectOptions, suite_path: Path, prices_path: Path | None, concurrency: int
) -> tuple[Any, Any]:
    """The live judge for the suite's criteria, and a manifest decorator recording suite and judge set."""
    from simulator.api.judging import make_judge_stage
    from simulator.collect.judging import LiveJudge
    from simulator.collect.sampling import Budget, load_policy
    from simulator.config.suite import check_environment, load_suite
    from simulator.providers.hub import ModelHub
    from simulator.record.hashing import sha256_file
    from simulator.record.redact import redacted_suite

    suite = load_suite(suite_path)
    check_environment(suite)
    policy = load_policy(options.policy)
    hub = ModelHub.create(suite)
    stage = make_judge_stage(suite, [], hub.for_role("judge"))
    prices = None
    if policy.budget.dollars is not None:
        from simulator.analysis.cost import load_prices

        prices = load_prices(prices_path)
        unpriced = [j.model_spec for j in stage.jury if prices.lookup(j.model_spec) is None]
        if unpriced:
            raise UserError(
                f"{options.policy} [budget.dollars]: the judge model {unpriced[0]} has no price; add it to "
                "a price file (--prices FILE) or budget in calls only"
            )
    (options.out / STATE).mkdir(parents=True, exist_ok=True)
    budget = Budget(policy.budget, options.out / STATE / "budget.jsonl")
    judge = LiveJudge(stage, policy, budget, prices, concurrency=concurrency, hub=hub)
    recorded = redacted_suite(suite)
    recorded.runs = 1

    def decorate(manifest: Any) -> None:
        manifest.suite = recorded
        manifest.suite_file = str(suite_path)
        manifest.suite_hash = sha256_file(suite_path)
        manifest.add_judge_set(stage.describe())
        manifest.prompts["judge"] = stage.prompt()

    return judge, decorate


def build_collector(
    options: CollectOptions,
    *,
    suite: Path | None = None,
    prices: Path | None = None,
    judge_concurrency: int = 4,
    alerts: list[str] | None = None,
    alert_window: int = 500,
    webhook: str | None = None,
    alert_file: Path | None = None,
    simulated: Path | None = None,
) -> Collector:
    """A collector; with `suite`, its sampled conversations are judged with the suite's criteria."""
    judge, decorate = _judge(options, suite, prices, judge_concurrency) if suite is not None else (None, None)
    watcher = None
    if alerts:
        from simulator.collect.alerts import Alerts, parse_rules
        from simulator.collect.signals import BOOLEAN_SIGNALS

        criteria = [c.id for c in judge.stage.criteria] if judge is not None else []
        known = [f"fail_rate:{c}" for c in criteria] + [f"signal:{s}" for s in BOOLEAN_SIGNALS]
        outcome = (
            judge.stage.outcome.config if judge is not None and judge.stage.outcome is not None else None
        )
        if outcome is not None and not outcome.default_source:  # the outcome mix, read by the suite's sources
            known += [f"outcome:{level}" for level in [*outcome.levels, "no decision"]]
        known += _triage_metrics(judge, options, alerts)
        rules = parse_rules(alerts, known)
        (options.out / STATE).mkdir(parents=True, exist_ok=True)
        watcher = Alerts(
            rules,
            options.out / STATE / "alerts-firing.json",
            window=alert_window,
            webhook=webhook,
            file=alert_file,
            log=options.out / STATE / "alerts.jsonl",
        )
    return Collector(
        options,
        judge=judge,
        alerts=watcher,
        decorate=decorate,
        on_finish=population_drift(simulated) if simulated is not None else None,
    )


def _triage_metrics(judge: Any, options: CollectOptions, alerts: list[str]) -> list[str]:
    """The live triage rates this collector can measure: under-triage where conversations get an expected
    level (the trace's, `--expected-attribute`) or a floor (the suite's red flags), over-triage only with an
    expected level. An alert naming one it cannot measure is one clear error saying what it needs."""
    reader = judge.stage.outcome if judge is not None else None
    config = reader.config if reader is not None else None
    recorded = config is not None and not config.default_source
    floor = recorded and reader is not None and reader.red_flags is not None
    exact = recorded and options.expected_attribute is not None
    known = (["under_triage", "under_triage_decided"] if floor or exact else []) + (
        ["over_triage"] if exact else []
    )
    for rule in alerts:
        named = next((m for m in ("under_triage_decided", "under_triage", "over_triage") if m in rule), None)
        if named is None or named in known:
            continue
        if not recorded:
            need = "a suite (--suite) whose outcome is read from more than the bot's state (outcome.source: messages)"
        elif named == "over_triage":
            need = (
                "an expected level per conversation (--expected-attribute ATTR): a red-flag floor shows "
                "under-triage only"
            )
        else:
            need = "red flags (outcome.red_flags in the suite, or red_flags in its vocabulary) or --expected-attribute"
        raise UserError(f'--alert "{rule}": {named} needs {need} (docs/collect.md, live triage)')
    return known


POPULATIONS = "populations.json"


def population_drift(simulated: Path) -> Any:
    """`compare-populations` of each completed live folder against the simulated run, written into the
    folder as `populations.json` (the collector is that folder's writer)."""
    from simulator.record.folder import RunFolder

    RunFolder.open(simulated)  # a clear error now, not at the first roll

    def compare(folder: Path) -> None:
        from simulator.analysis.populations import compare_populations

        comparison = compare_populations(simulated, folder)
        (folder / POPULATIONS).write_text(comparison.model_dump_json(indent=2), encoding="utf-8")

    return compare
