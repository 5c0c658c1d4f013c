"""`collect` and `drift`: receive the live service's traces over OTLP/HTTP, judge a sample, watch for drift."""

from __future__ import annotations

__all__ = ["register"]

import argparse
import os
from pathlib import Path
from typing import Any

from simulator.collect.limits import MAX_CONNECTIONS, READ_TIMEOUT_S
from simulator.commands.outputs import at_least_one
from simulator.errors import UserError
from simulator.listening import address_of, listening_sockets
from simulator.visible import echo, terminal_log_handler

TOKEN_ENV = "SIMULATOR_COLLECT_TOKEN"


# The folder being written keeps its record ids and manifest entries in memory, and its manifest is rewritten
# each second it grows: a day's folder at a busy service grew both without bound (issue 47).
ROLL_EVERY = 10_000


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"'{value}' is not a number") from exc
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {value}")
    return number


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _collect_parser(subparsers)
    _drift_parser(subparsers)


def _collect_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    col = subparsers.add_parser(
        "collect", help="an OTLP/HTTP endpoint for the live service: conversations into rolling run folders"
    )
    col.add_argument("--out", type=Path, required=True, help="folder of the rolling run folders (live-*)")
    col.add_argument("--port", type=int, default=4318, help="port (default 4318, the OTLP/HTTP port)")
    col.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"address to bind (default 127.0.0.1); any other needs the token ({TOKEN_ENV} or printed)",
    )
    col.add_argument(
        "--idle-s",
        type=_positive,
        default=300.0,
        help="close a conversation after this many idle seconds (300)",
    )
    col.add_argument(
        "--conversation-key",
        metavar="ATTR",
        help="span attribute grouping spans (default gen_ai.conversation.id, session.id)",
    )
    col.add_argument(
        "--redact", type=Path, metavar="FILE", help="redaction file (default: built-in patterns)"
    )
    col.add_argument("--exclude-system", action="store_true", help="do not keep system prompts")
    col.add_argument(
        "--expected-attribute",
        metavar="ATTR",
        help="span attribute holding the conversation's expected outcome level, where the service has one "
        "(a nurse's later disposition): live under- and over-triage against it (docs/collect.md)",
    )
    col.add_argument(
        "--roll-every",
        type=at_least_one,
        metavar="N",
        default=ROLL_EVERY,
        help=f"start a new run folder every N conversations (and each day; default {ROLL_EVERY:,}: the folder "
        "being written is held in memory and its manifest rewritten as it grows)",
    )
    col.add_argument(
        "--max-body", type=at_least_one, default=4 * 1024 * 1024, help="largest request body in bytes (4 MiB)"
    )
    col.add_argument(
        "--max-open-spans",
        type=at_least_one,
        default=200_000,
        help="spans held before answering 503 (200000)",
    )
    col.add_argument(
        "--rate", type=_positive, default=100.0, help="requests a second per client before 429 (100)"
    )
    col.add_argument(
        "--read-timeout",
        type=_positive,
        default=READ_TIMEOUT_S,
        metavar="S",
        help=f"seconds a client has to send a request's headers and body before its connection is closed "
        f"({READ_TIMEOUT_S:g}; idle connections cannot hold the {MAX_CONNECTIONS} allowed)",
    )
    _judging_options(col)
    col.set_defaults(handler=cmd_collect, on_interrupt=_restart_hint)


def _judging_options(col: argparse.ArgumentParser) -> None:
    col.add_argument("--suite", type=Path, help="judge a sample with this suite's criteria and judge model")
    col.add_argument(
        "--sample", type=Path, metavar="POLICY", help="sampling policy YAML (rate, always-rules, budget)"
    )
    col.add_argument(
        "--prices", type=Path, help="price file for a dollar budget (default simulator/data/prices.yaml)"
    )
    col.add_argument(
        "--judge-concurrency", type=at_least_one, default=4, help="conversations judged at once (4)"
    )
    col.add_argument(
        "--alert",
        action="append",
        default=[],
        metavar="RULE",
        help='e.g. "fail_rate(no-diagnosis-no-prescribing) > 1%%" (repeatable)',
    )
    col.add_argument(
        "--alert-window",
        type=at_least_one,
        default=500,
        help="conversations an alert looks at (the newest 500)",
    )
    col.add_argument("--alert-every", type=_positive, default=30.0, help="seconds between alert checks (30)")
    col.add_argument(
        "--simulated",
        type=Path,
        metavar="RUN",
        help="a simulated run: each completed folder's population is compared with it (populations.json)",
    )
    col.add_argument("--webhook", help="URL an alert is POSTed to (JSON)")
    col.add_argument("--alert-file", type=Path, help="file an alert is appended to (JSON lines)")


def _drift_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    drift = subparsers.add_parser(
        "drift", help="rates over time of collected conversations, changes, population drift"
    )
    drift.add_argument("out", type=Path, help="the folder `simulator collect --out` writes")
    drift.add_argument(
        "--period", default="day", help="day, week, or a number of conversations per bin (day)"
    )
    drift.add_argument(
        "--metric",
        action="append",
        default=[],
        help="fail_rate:<criterion>, signal:<name>, outcome:<level>, under_triage, over_triage (default: all)",
    )
    drift.add_argument(
        "--simulated", type=Path, help="a simulated run to compare each live folder's population with"
    )
    drift.add_argument(
        "--alert",
        action="append",
        default=[],
        metavar="RULE",
        help="check these rules now (exit 1 when one fires)",
    )
    drift.add_argument(
        "--alert-window", type=at_least_one, default=500, help="conversations an alert looks at (500)"
    )
    drift.add_argument("--alert-file", type=Path, help="append fired alerts here")
    drift.add_argument("--webhook", help="POST fired alerts here")
    drift.set_defaults(handler=cmd_drift)


def _restart_hint(args: argparse.Namespace) -> str:
    """What goes on after a stopped collector: a start with the same folder (collect has no --resume)."""
    return f"go on by starting it again: simulator collect --out {args.out}"


def cmd_collect(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from simulator.collect.build import build_collector  # noqa: F401  (the extras, checked here)
        from simulator.collect.connections import server_config
        from simulator.collect.receiver import create_receiver
    except ImportError as exc:
        raise UserError(
            f"collect needs the serve and otel extras ({exc.name} is missing): pip install 'simulator[serve,otel]'"
        ) from None
    # Bound before the journal is recovered: a taken port or a foreign host is one line with the fix, and
    # `--port 0` prints the port the OS picked.
    sockets = listening_sockets(args.host, args.port)
    port = address_of(sockets)[1]
    collector = None
    try:
        collector = _started_collector(args)
        from simulator.serve.config import access_token

        token = access_token(args.host, TOKEN_ENV)
        app = create_receiver(
            collector,
            token=token,
            allowed_hosts=None if token is None else ["*"],
            background=_alert_loop(collector, args.alert_every) if args.alert else None,
        )
        shown = (
            ""
            if token is None
            else f"  (send Authorization: Bearer {'$' + TOKEN_ENV if os.environ.get(TOKEN_ENV) else token})"
        )
        echo(
            f"collecting OTLP/HTTP on http://{args.host}:{port}/v1/traces and /v1/logs into {args.out}{shown}",
            flush=True,
        )
        server = uvicorn.Server(server_config(app, args.host, port, read_timeout=args.read_timeout))
        server.run(sockets=sockets)
    finally:
        if collector is not None and collector.started:  # uvicorn stopped before its lifespan ran
            collector.stop()  # (the lifespan stops the collector)
        for sock in sockets:  # the server closes those it served on; after a failed start, closed here
            sock.close()
    return 0


def _started_collector(args: argparse.Namespace) -> Any:
    """The collector the command line asks for, its journal recovered (cmd_collect has checked the extras)."""
    from simulator.collect.build import build_collector, state_problems
    from simulator.collect.folders import Roll
    from simulator.collect.service import CollectOptions

    options = CollectOptions(
        out=args.out,
        idle_s=args.idle_s,
        conversation_key=args.conversation_key,
        redact=args.redact,
        roll=Roll(daily=True, every=args.roll_every),
        max_body=args.max_body,
        max_open_spans=args.max_open_spans,
        rate=args.rate,
        burst=args.rate * 2,
        exclude_system=args.exclude_system,
        policy=args.sample,
        expected_attribute=args.expected_attribute,
    )
    _say_notices()  # before the journal is recovered: what it skipped is said too
    with state_problems(args.out):
        collector = build_collector(
            options,
            suite=args.suite,
            prices=args.prices,
            judge_concurrency=args.judge_concurrency,
            alerts=args.alert,
            alert_window=args.alert_window,
            webhook=args.webhook,
            alert_file=args.alert_file,
            simulated=args.simulated,
        )
        # The journal recovered here, before uvicorn: inside the server's lifespan a failure would be
        # uvicorn's traceback and "Application startup failed"; here it is the command line's one line.
        collector.start()
    return collector


def _say_notices() -> None:
    """The collector's notices (what it rejected, skipped or quarantined, and why) on standard error."""
    import logging
    import sys

    from simulator.collect.supervise import LOGGER

    LOGGER.addHandler(terminal_log_handler(sys.stderr))
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False


def _alert_loop(collector: Any, every: float) -> Any:
    import asyncio
    import time

    last = [time.monotonic()]

    async def check() -> None:
        if time.monotonic() - last[0] < every:
            return
        last[0] = time.monotonic()
        for alert in await asyncio.to_thread(collector.check_alerts):
            echo(
                f"alert fired: {alert['alert']} (rate {alert['rate']:.1%} of {alert['n']} conversations)",
                flush=True,
            )

    return check


def cmd_drift(args: argparse.Namespace) -> int:
    from simulator.collect.drift_report import drift_report

    return drift_report(args)
