"""`unseal`: reveal a run's held-out transcripts to its readers, recording who did it, when and why."""

from __future__ import annotations

__all__ = ["register"]

import argparse
from pathlib import Path

from simulator.errors import UserError
from simulator.visible import echo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    unseal = subparsers.add_parser(
        "unseal",
        help="reveal a run's held-out transcripts and evidence (recorded in its manifest: who, when, why)",
    )
    unseal.add_argument("run", type=Path, help="runs/<run-id>")
    unseal.add_argument("--by", required=True, help="who unseals it (a name or an id): recorded")
    unseal.add_argument("--reason", default="", help="why (recorded beside the name)")
    unseal.set_defaults(handler=cmd_unseal)


def cmd_unseal(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from simulator.names import person_name
    from simulator.record.folder import RunFolder
    from simulator.record.manifest import Unseal
    from simulator.record.seal import HELD_OUT

    who = person_name(args.by, "--by")
    folder = RunFolder.resume(args.run)  # a writer: it takes the folder's lock to change the manifest
    try:
        manifest = folder.read_manifest()
        held = [entry.id for entry in manifest.scenarios if HELD_OUT in entry.tags]
        if not held:
            raise UserError(f"{args.run} has no held-out scenarios: nothing is sealed")
        manifest.unsealed.append(Unseal(by=who, at=datetime.now(UTC), reason=args.reason.strip()))
        folder.write_manifest(manifest)
    finally:
        folder.release()
    echo(f"unsealed {len(held)} held-out scenarios of {args.run} (by {who}); every reader now shows them")
    return 0
