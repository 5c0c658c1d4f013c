"""`simulator drift OUT`: the collected conversations' rates by period, each tested against the first
period, population drift of each live folder against a simulated run, and alert rules checked now."""

from __future__ import annotations

__all__ = ["drift_report"]

import argparse
from pathlib import Path

from simulator.collect.folders import collected_folders
from simulator.collect.trends import (
    Observation,
    left_out,
    load_observations,
    metric_names,
    rate_of,
    trend_rows,
    unit_of,
)
from simulator.errors import UserError
from simulator.plural import plural
from simulator.stats.basic import pct
from simulator.visible import echo


def _folders(out: Path) -> list[Path]:
    if not out.is_dir():
        raise UserError(f"{out}: no such folder; pass the folder `simulator collect --out` writes")
    folders = collected_folders(out)
    if not folders:
        raise UserError(f"{out}: no collected run folders (live-*) in it yet")
    return folders


def drift_report(args: argparse.Namespace) -> int:
    """Print the trend table, the population drift and the alerts; 1 when an alert fires, else 0."""
    folders = _folders(args.out)
    observations = load_observations(folders)
    known = metric_names(observations)
    metrics = args.metric or known
    bad = [m for m in metrics if m not in known]
    if bad:
        raise UserError(f"--metric {bad[0]}: unknown; metrics: {', '.join(known)}")
    try:
        rows = trend_rows(observations, metrics, args.period)
    except ValueError as exc:
        raise UserError(f"--period: {exc}") from None
    echo(
        f"{plural(len(observations), 'conversation')} in {len(folders)} folders; unit: conversations "
        "(a criterion counts pass and fail verdicts; n/a, errors and not judged are left out)"
    )
    echo(
        f"{'metric':38} {'period':22} {'rate':>8} {'95% CI (clustered)':>20} {'k/n':>11} {'vs first: p':>12}"
    )
    for row in rows:
        r = row.rate
        interval = f"{pct(r.low)}-{pct(r.high)}" if r.n else "-"
        p = f"{row.p_value:.3g}" if row.p_value is not None else "-"
        echo(f"{r.metric:38} {row.period:22} {pct(r.rate):>8} {interval:>20} {f'{r.k}/{r.n}':>11} {p:>12}")
    for metric in metrics:
        if ":" not in metric or metric.startswith("outcome:"):  # the live triage rates and the outcome mix
            counted = rate_of(observations, metric)
            echo(f"{metric}: unit {unit_of(metric)}; left out {counted.left_out} ({left_out(metric)})")
    if args.simulated is not None:
        _populations(args.simulated, folders)
    if args.alert:
        return _alerts(args, observations, known)
    return 0


def _populations(simulated: Path, folders: list[Path]) -> None:
    from simulator.analysis.populations import compare_populations

    for folder in folders:
        comparison = compare_populations(simulated, folder)
        echo(f"\npopulation drift: {folder.name} vs simulated {simulated} (alpha {comparison.alpha})")
        for row in comparison.rows:
            flag = "DIFFERENT" if row.p < comparison.alpha else ""
            echo(f"  {row.measure:45} simulated {row.simulated:28} real {row.real:28} p={row.p:.3g} {flag}")
        for note in comparison.left_out:
            echo(f"  left out: {note}")


def _alerts(args: argparse.Namespace, observations: list[Observation], known: list[str]) -> int:
    import tempfile

    from simulator.collect.alerts import Alerts, parse_rules

    rules = parse_rules(args.alert, known)
    with tempfile.TemporaryDirectory() as scratch:  # `drift` reads: firing state is not kept
        alerts = Alerts(
            rules,
            Path(scratch) / "state.json",
            window=args.alert_window,
            webhook=args.webhook,
            file=args.alert_file,
        )
        fired = alerts.evaluate(observations)
    for alert in fired:
        low, high = alert["interval_95"]
        echo(
            f"ALERT {alert['alert']}: {pct(alert['rate'])} ({pct(low)}-{pct(high)}) of {alert['n']} conversations; "
            f"{len(alert['conversations'])} conversations behind it"
        )
    if not fired:
        echo(f"no alert fired ({len(rules)} rules, window {plural(args.alert_window, 'conversation')})")
    return 1 if fired else 0
