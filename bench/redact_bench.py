"""Time the redaction every written line passes: `dump_line` on each record of one or more run folders
(conversations, verdicts, the manifest), `contains_secret` on each line, and the import/collect
redactor (traces/redact.py) on each line. Prints microseconds a line and nanoseconds a byte, best of
`--repeat` passes. Nothing is asserted. Run from the repository root:
`python bench/redact_bench.py RUN_FOLDER...` (`PYTHONPATH=/other/checkout python bench/redact_bench.py ...`
times another checkout, for a before/after on the same records). On a shared machine, count instructions
instead of time: `--only NAME` runs one of them (`--repeat 1`) under `valgrind --tool=callgrind`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from simulator.record.folder import dump_line
from simulator.record.manifest import Manifest
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.redact import contains_secret, forget_secrets
from simulator.traces.redact import load_redactor


def _records(folders: list[Path]) -> list[BaseModel]:
    records: list[BaseModel] = []
    for folder in folders:
        for name, model in (("conversations.jsonl", ConversationRecord), ("verdicts.jsonl", Verdict)):
            path = folder / name
            if path.exists():
                records += [model.model_validate_json(line) for line in path.read_text().splitlines() if line]
        manifest = folder / "manifest.json"
        if manifest.exists():
            records.append(Manifest.model_validate_json(manifest.read_text()))
    return records


def _best(repeat: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        forget_secrets()  # and what each text held: every pass searches anew, as a line is when written
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", help="run this one alone (dump_line, contains_secret, redactor text, ...)")
    args = parser.parse_args()
    forget_secrets()  # no configured secret: the credential search alone, as for a run without one
    records = _records(args.folders)
    lines = [dump_line(r) for r in records]
    size = sum(len(line) for line in lines)
    redactor = load_redactor(None)
    found = sum(contains_secret(line) for line in lines)
    print(f"{len(lines)} lines, {size / 1e6:.2f} MB; {found} hold a secret or credential")
    values = [json.loads(line) for line in lines]
    for name, work in (
        ("dump_line", lambda: [dump_line(r) for r in records]),
        ("contains_secret", lambda: [contains_secret(line) for line in lines]),
        ("redactor text", lambda: [redactor.text(line) for line in lines]),
        ("redactor each string", lambda: [redactor.value(value) for value in values]),
    ):
        if args.only is not None and name != args.only:
            continue
        seconds = _best(args.repeat, work)
        print(
            f"{name:24} {seconds * 1e3:8.1f} ms   {seconds / len(lines) * 1e6:7.1f} µs a line   "
            f"{seconds / size * 1e9:6.1f} ns a byte"
        )


if __name__ == "__main__":
    main()
