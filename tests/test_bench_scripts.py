"""The bench's scripts still run end to end at a tiny shape (their figures are for bench/, never asserted
here): a change to `run_bench`'s results once broke the side-by-side and matrix scripts unnoticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_side_by_side_measures_the_engine_and_says_what_it_skipped() -> None:
    out = _bench("side_by_side.py", "--conversations", "2", "--turns", "1", "--latency-ms", "1")
    line = next(x for x in out.splitlines() if x.startswith("simulator "))
    assert "wall" in line and "peak RSS" in line and "skipped" not in line
    assert all(name in out for name in ("langwatch-scenario", "deepeval"))


def test_the_matrix_bench_runs_a_small_matrix_against_its_cells() -> None:
    out = _bench(
        "matrix_bench.py",
        *("--cells", "2", "--scenarios", "2", "--repeats", "1", "--turns", "1", "--criteria", "1"),
        *("--latency-ms", "1", "--concurrency", "4", "--connections", "4"),
    )
    assert "4 conversations" in out and any(line.startswith("matrix ") for line in out.splitlines())


def test_the_close_bench_closes_every_conversation_it_made() -> None:
    import json

    out = _bench("collect_close_bench.py", "--conversations", "3", "--turns", "2", "--runs", "1")
    figures = json.loads(out.splitlines()[-1])
    assert (figures["conversations"], figures["spans"]) == (3, 6) and figures["close_ms_per_span"] > 0


def test_the_redaction_bench_times_each_step_on_a_run_folder(tmp_path: Path) -> None:
    """docs/records.md shows `python bench/redact_bench.py RUN_FOLDER`."""
    from simulator.record.folder import dump_line
    from tests.support.records import bot_said

    lines = [bot_said(["hello"]), bot_said(['logged in with {"password": "hunter2"}'])]
    (tmp_path / "conversations.jsonl").write_text("".join(dump_line(record) for record in lines))
    out = _bench("redact_bench.py", str(tmp_path), "--repeat", "1")
    assert out.startswith("2 lines,") and "0 hold a secret or credential" in out  # as written: redacted
    for step in ("dump_line", "contains_secret", "redactor text", "redactor each string"):
        assert any(line.startswith(step) and "a line" in line for line in out.splitlines()), step


def test_the_fake_server_bench_measures_each_format_streaming_and_not() -> None:
    """bench/README.md and docs/performance.md show `python bench/fake_server_bench.py`."""
    import json

    out = _bench(
        "fake_server_bench.py",
        *("--requests", "6", "--concurrency", "3", "--latency-ms", "1", "--runs", "1", "--json"),
    )
    figures = json.loads(out.splitlines()[-1])
    cases = {case["case"]: case for case in figures["cases"]}
    assert sorted(cases) == ["anthropic plain", "anthropic stream", "openai plain", "openai stream"]
    for case in cases.values():
        assert case["statuses"] == {"200": 6} and case["server_cpu_ms"][0] >= 0


def test_the_resample_bench_times_each_bootstrap_and_finds_the_same_interval() -> None:
    """docs/performance.md shows `python bench/resample_bench.py`."""
    out = _bench("resample_bench.py", "--sizes", "3,20", "--repeat", "1")
    rows = [line for line in out.splitlines() if line.endswith(("yes", "NO"))]
    assert len(rows) == 14 and all(line.endswith("yes") for line in rows)
    assert {line[:40].strip() for line in rows} == {
        "paired_bootstrap, 0/1 verdicts",
        "paired_bootstrap, float costs",
        "clustered_paired_bootstrap, 3 repeats",
        "pass^k interval over vignettes",
    }
