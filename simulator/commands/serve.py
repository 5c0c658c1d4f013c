"""`serve`: the review desk, a local web app for reading, labelling, editing and talking to the bot."""

from __future__ import annotations

__all__ = ["register"]

import argparse
import contextlib
import os
from pathlib import Path

from simulator.commands.outputs import at_least_one
from simulator.errors import UserError
from simulator.listening import address_of, listening_sockets
from simulator.visible import echo, server_log_config, terminal_log_handler

TOKEN_ENV = "SIMULATOR_DESK_TOKEN"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser(
        "serve", help="the review desk: read transcripts, label them blind, edit scenarios, talk to the bot"
    )
    serve.add_argument(
        "runs", type=Path, nargs="?", default=Path("runs"), help="folder of run folders (runs/)"
    )
    serve.add_argument(
        "--scenarios", type=Path, help="scenarios folder to edit and talk from (default scenarios/)"
    )
    serve.add_argument("--judges", type=Path, help="criteria folder to edit (default judges/)")
    serve.add_argument(
        "--proposals", type=Path, default=Path("proposals"), help="proposals folder (default proposals/)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"address to bind (default 127.0.0.1); any other needs the access token ({TOKEN_ENV} or printed)",
    )
    serve.add_argument("--hazards", type=Path, help="hazard log for the safety-case pages (hazards.yaml)")
    serve.add_argument(
        "--data",
        "--desk-data",
        dest="data",
        type=Path,
        help="the desk's own records: sign-offs, proposal reviews, the clinician queue (default RUNS/.desk)",
    )
    serve.add_argument(
        "--drafts", type=Path, help="the review queue of drafted vignettes (simulator draft --queue)"
    )
    serve.add_argument("--suite", type=Path, help="the suite accepted drafts join (with --drafts)")
    serve.add_argument(
        "--max-body",
        type=at_least_one,
        metavar="BYTES",
        help="largest request body the desk reads, in bytes (default 2000000); a larger one is refused (413)",
    )
    serve.set_defaults(handler=cmd_serve)


def _folder(given: Path | None, default: str) -> Path | None:
    if given is not None:
        if not given.is_dir():
            raise UserError(f"{given}: no such folder")
        return given
    return Path(default) if Path(default).is_dir() else None


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    try:
        import uvicorn

        from simulator.serve import DeskConfig, create_app
        from simulator.serve.config import access_token
    except ImportError as exc:
        raise UserError(
            f"the review desk needs the serve extra ({exc.name} is missing): pip install 'simulator[serve]'"
        ) from None
    if args.runs.exists() and not args.runs.is_dir():
        raise UserError(f"{args.runs}: not a folder; pass the folder that holds your run folders")
    args.runs.mkdir(parents=True, exist_ok=True)
    config = DeskConfig(args.runs, _folder(args.scenarios, "scenarios"), _folder(args.judges, "judges"))
    if args.hazards is not None:
        from simulator.safety.hazards import load_hazard_log

        load_hazard_log(args.hazards)  # a broken hazard log is refused before the desk starts
        config.hazards = args.hazards
    config.data_dir = args.data
    if args.max_body is not None:  # else the desk's own default (serve/config.py)
        config.max_body = args.max_body
    if args.drafts is not None:
        if args.suite is None:
            raise UserError("--drafts needs --suite: the suite an accepted draft joins")
        from simulator.api import load_suite

        load_suite(args.suite)  # a broken suite is refused before the desk starts
        config.drafts_dir, config.drafts_suite = args.drafts, args.suite
    config.proposals_dir = args.proposals
    # Bound before anything starts: a taken port or a foreign host is one line with the fix, and `--port 0`
    # prints the port the OS picked.
    sockets = listening_sockets(args.host, args.port)
    address = f"http://{args.host}:{address_of(sockets)[1]}/"
    config.token = access_token(args.host, TOKEN_ENV)
    if config.token is not None:
        config.allowed_hosts = ["*"]
        # A token of the environment is named, never shown; a new one is printed once, to whoever started it.
        address += f"?token=<${TOKEN_ENV}>" if os.environ.get(TOKEN_ENV) else f"?token={config.token}"
    echo(f"review desk on {address}  (runs {config.runs_dir}, Ctrl-C to stop)", flush=True)
    # The desk's warnings (a talk that failed to end, with its exception) quote data: shown, never obeyed.
    logging.getLogger("simulator.serve").addHandler(terminal_log_handler())
    from simulator.record.redact import redact

    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            host=args.host,
            port=args.port,
            log_level="warning",
            log_config=server_log_config(clean=redact),  # its lines through visible.py, secrets redacted
        )
    )
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how the desk stops, as under uvicorn.run
        server.run(sockets=sockets)
    return 0
