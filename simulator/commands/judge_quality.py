"""`meta-eval` (the judge against several labellers, and the labellers against each other) and
`labels import` (a labelling sheet, CSV, into the run folder's labels.jsonl)."""

from __future__ import annotations

__all__ = ["register"]

import argparse
from pathlib import Path

from simulator.commands.outputs import check_output, write_output
from simulator.errors import UserError
from simulator.visible import echo


def _labels_actions(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse._SubParsersAction[argparse.ArgumentParser]:  # fmt: skip
    """The `labels` command's actions; created here when no other module has made `labels` yet."""
    labels = subparsers.choices.get("labels")
    if labels is None:
        labels = subparsers.add_parser("labels", help="label transcripts for judge calibration")
        return labels.add_subparsers(dest="labels_command", metavar="ACTION", required=True)
    for action in labels._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return labels.add_subparsers(dest="labels_command", metavar="ACTION", required=True)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    meta = subparsers.add_parser(
        "meta-eval",
        help="the judge against several labellers (macro-F1, kappa, false passes) and the human baseline",
    )
    meta.add_argument("run", type=Path, help="runs/<run-id> (labels from its labels.jsonl)")
    meta.add_argument("--judge-set", help="judge set to evaluate (default: the latest)")
    meta.add_argument("--replicates", type=int, default=2000, help="bootstrap replicates (default 2000)")
    meta.add_argument("--json", type=Path, help="write the meta-evaluation as JSON here")
    meta.set_defaults(handler=cmd_meta_eval)

    imported = _labels_actions(subparsers).add_parser(
        "import", help="add a filled-in labels CSV to the run folder's labels.jsonl, under a labeller's name"
    )
    imported.add_argument("run", type=Path, help="runs/<run-id>")
    imported.add_argument(
        "file", type=Path, help="CSV with conversation_id, criterion_id, label (notes optional)"
    )
    imported.add_argument("--labeller", required=True, help="who labelled these (a name or an id)")
    imported.set_defaults(handler=cmd_labels_import)


def cmd_meta_eval(args: argparse.Namespace) -> int:
    check_output("--json", args.json)
    from simulator.analysis.meta_eval import meta_evaluate
    from simulator.analysis.rundata import load_run
    from simulator.report.meta_view import render_meta_evaluation

    if args.replicates < 100:
        raise UserError("--replicates must be at least 100")
    result = meta_evaluate(load_run(args.run, args.judge_set), replicates=args.replicates)
    render_meta_evaluation(result)
    if args.json:
        write_output(args.json, result.model_dump_json(indent=2) + "\n")
    return 0


def cmd_labels_import(args: argparse.Namespace) -> int:
    from simulator.record.label_sheet import import_labels

    added, path = import_labels(args.run, args.file, args.labeller)
    echo(f"added {added} labels by {' '.join(args.labeller.split())} to {path}")
    echo(f"compare the judge with every labeller: simulator meta-eval {args.run}")
    return 0
