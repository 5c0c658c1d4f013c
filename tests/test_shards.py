"""Deterministic shards, `simulator merge`, and resuming a shard."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.engine.shards import in_shard, parse_shard
from simulator.errors import UserError
from simulator.record.folder import CONVERSATIONS, MANIFEST, RunFolder
from simulator.report.model import build_report

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "scenarios" / "triage" / "suite.yaml"
TAGS = "cardiac,skin,msk"  # 9 scenarios


def _records(run: Path) -> dict[str, tuple[str, str | None]]:
    return {
        r.id: (r.stop_reason, (r.final_state or {}).get("triage_level"))
        for r in RunFolder.open(run).conversations()
    }


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("whole") / "run"
    assert main(["run", str(SUITE), "--tags", TAGS, "--runs", "2", "--out", str(out), "--no-progress"]) == 0
    return out


def _shards(root: Path, count: int) -> list[Path]:
    paths = []
    for index in range(1, count + 1):
        out = root / f"shard{index}"
        args = ["run", str(SUITE), "--tags", TAGS, "--runs", "2", "--shard", f"{index}/{count}"]
        assert main([*args, "--out", str(out), "--no-progress"]) == 0
        paths.append(out)
    return paths


def test_shards_are_disjoint_stable_and_cover_the_plan() -> None:
    keys = [f"s{i}#{r}" for i in range(200) for r in range(5)]
    for count in (1, 2, 3, 7):
        owners = [[k for k in keys if in_shard(k, parse_shard(f"{i}/{count}"))] for i in range(1, count + 1)]
        assert sorted(k for part in owners for k in part) == sorted(keys)
        assert all(abs(len(part) - len(keys) / count) < len(keys) / count * 0.3 for part in owners)
    # Adding scenarios never moves an existing item to another shard.
    shard = parse_shard("2/3")
    assert [k for k in keys[:500] if in_shard(k, shard)] == [
        k for k in keys if in_shard(k, shard) and keys.index(k) < 500
    ]


@pytest.mark.parametrize("text", ["0/3", "4/3", "2", "a/b", "1/0", "-1/2"])
def test_a_bad_shard_says_how_to_write_one(text: str) -> None:
    with pytest.raises(UserError, match="write i/K"):
        parse_shard(text)


def test_merged_shards_report_as_the_whole_run(
    whole: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    shards = _shards(tmp_path, 3)
    # One rule for counting verdicts (record/counting.py): what the shards' `run` lines say, merge says.
    said = [
        tuple(int(n) for n in re.search(r"(\d+) verdicts; (\d+) fidelity checks", line).groups())  # type: ignore[union-attr]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("run complete")
    ]
    assert len(said) == 3
    manifests = [RunFolder.open(s).read_manifest() for s in shards]
    assert len({m.shard.plan_hash for m in manifests if m.shard}) == 1
    assert sum(m.planned for m in manifests) == 18
    merged = tmp_path / "merged"
    assert main(["merge", *map(str, shards), "--out", str(merged)]) == 0
    verdicts, fidelity = sum(v for v, _ in said), sum(f for _, f in said)
    assert fidelity > 0 and f"{verdicts} verdicts; {fidelity} fidelity checks of the simulated user" in (
        capsys.readouterr().out
    )
    stored = list(RunFolder.open(merged).verdicts())
    assert len(stored) == verdicts + fidelity  # the file holds both; the figure counts bot verdicts
    assert _records(merged) == _records(whole)
    manifest = RunFolder.open(merged).read_manifest()
    assert manifest.status == "complete" and manifest.shard is None and manifest.planned == 18
    a, b = build_report(load_run(merged)), build_report(load_run(whole))
    assert a.outcome == b.outcome and a.criteria == b.criteria and a.overall == b.overall


def test_merge_names_missing_and_duplicated_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = _shards(tmp_path, 2)
    assert main(["merge", str(one), "--out", str(tmp_path / "m1")]) == 2
    err = capsys.readouterr().err
    assert "items of the plan are in no shard" in err and "#" in err
    assert main(["merge", str(one), "--out", str(tmp_path / "m2"), "--allow-missing"]) == 0
    assert RunFolder.open(tmp_path / "m2").read_manifest().status == "interrupted"
    twin = tmp_path / "twin"
    shutil.copytree(two, twin)
    first = (one / CONVERSATIONS).read_text().splitlines(keepends=True)[0]
    with (twin / CONVERSATIONS).open("a") as handle:
        handle.write(first)
    assert main(["merge", str(one), str(twin), "--out", str(tmp_path / "m3")]) == 2
    assert "items in more than one shard" in capsys.readouterr().err
    assert main(["merge", str(one), str(one), "--out", str(tmp_path / "m4")]) == 2
    assert "given more than once" in capsys.readouterr().err


def test_merge_refuses_shards_of_different_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, _ = _shards(tmp_path, 2)
    other = tmp_path / "other"
    args = ["run", str(SUITE), "--tags", TAGS, "--runs", "3", "--shard", "2/2", "--out", str(other)]
    assert main([*args, "--no-progress"]) == 0
    assert main(["merge", str(one), str(other), "--out", str(tmp_path / "m")]) == 2
    assert "shards of different plans" in capsys.readouterr().err
    assert (
        main(["merge", str(ROOT / "tests" / "data" / "runs" / "v1-simulation"), "--out", str(tmp_path / "x")])
        == 2
    )
    assert "is not a shard" in capsys.readouterr().err


def test_a_shard_resumes_with_its_own_part_of_the_plan(tmp_path: Path) -> None:
    one, _ = _shards(tmp_path, 2)
    lines = (one / CONVERSATIONS).read_text().splitlines(keepends=True)
    expected = _records(one)
    (one / CONVERSATIONS).write_text("".join(lines[:3]))
    manifest = json.loads((one / MANIFEST).read_text())
    manifest["status"] = "interrupted"
    (one / MANIFEST).write_text(json.dumps(manifest))
    assert main(["run", "--resume", str(one), "--no-progress"]) == 0
    assert _records(one) == expected  # the same items, nothing of the other shard
