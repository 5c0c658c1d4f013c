"""`merge`: join the shard run folders of one plan into one ordinary run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.plural import plural
from simulator.visible import echo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    merge = subparsers.add_parser(
        "merge", help="join shard run folders (simulator run --shard i/K) into one run folder"
    )
    merge.add_argument("shards", type=Path, nargs="+", help="the shard run folders")
    merge.add_argument("--out", type=Path, required=True, help="the merged run folder to write")
    merge.add_argument(
        "--allow-missing", action="store_true", help="merge even when some items of the plan are in no shard"
    )
    merge.set_defaults(handler=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    from simulator.api.folders import merge_shards
    from simulator.record.counting import fidelity_text

    result = merge_shards(args.shards, args.out, allow_missing=args.allow_missing)
    echo(
        f"merged {result.shards} shards: {plural(result.conversations, 'conversation')}, {plural(result.verdicts, 'verdict')}"
        f"{fidelity_text(result.fidelity_checks)}"
    )
    echo(f"run folder: {result.folder}")
    echo(f"next: simulator report {result.folder}")
    return 0
