"""Deterministic shards, `simulator merge`, and resuming a shard."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _shards(tmp_path_factory.mktemp("halves"), 2)


def _edited(shard: Path, root: Path, edit: Any) -> Path:
    """A copy of `shard` whose manifest `edit` changed: a shard run elsewhere with another setting."""
    copy = root / f"{shard.name}-edited"
    shutil.copytree(shard, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    edit(manifest)
    (copy / MANIFEST).write_text(json.dumps(manifest))
    return copy


def _set(path: str | tuple[str, ...], value: Any) -> Any:
    def edit(manifest: dict[str, Any]) -> None:
        *parents, last = path.split(".") if isinstance(path, str) else path
        for key in parents:
            manifest = manifest[key]
        manifest[last] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "field", "shown"),
    [
        (_set("suite.bot.factory", "examples.triage_bot:make_fixed_bot"), "bot.factory", "make_fixed_bot"),
        (_set("suite.seed", 7), "seed", "7 here, 0 in"),
        (_set("models.user", "openai:gpt-4.1-mini"), "models.user", "'openai:gpt-4.1-mini' here"),
        (_set("suite.user.temperature", 0.2), "user.temperature", "0.2 here, 1.0 in"),
        (_set("suite.outcome.critical", "urgent"), "outcome.critical", "'urgent' here"),
        (_set("package_version", "9.9.9"), "simulator version", "'9.9.9' here"),
        (_set("git_commit", "0" * 40), "simulator commit", "'" + "0" * 40),
        (
            _set(("bot_identity", "parts", "source sha256 of examples.triage_bot"), "sha256:edited"),
            "bot identity (source sha256 of examples.triage_bot)",
            "'sha256:edited' here",
        ),
        (_set("prompts.user.hash", "sha256:other"), "user prompt", "'sha256:other' here"),
        (_set("kind", "golden"), "kind", "'golden' here"),
    ],
)
def test_merge_refuses_shards_of_different_experiments(
    halves: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, field: str, shown: str
) -> None:
    """Bot, seed, models, measured settings, simulator, prompts: one line per difference, both values, the fix."""
    one, two = halves
    odd = _edited(two, tmp_path, edit)
    capsys.readouterr()
    assert main(["merge", str(one), str(odd), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "not one experiment" in err and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("  ")]
    assert len(lines) == 1, err
    assert f"{odd} [{field}]: " in lines[0] and shown in lines[0] and str(one) in lines[0]
    assert "re-run this shard (--shard 2/2) with the suite, flags and simulator version" in lines[0]
    assert not (tmp_path / "m").exists()


def test_merge_names_every_difference_of_a_shard_run_with_another_bot_and_seed(
    halves: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, _ = halves
    # The other suite lives in a copy of the tree its relative paths reach, never beside SUITE: that folder is
    # read as scenarios by the other tests' runs (`paths: ["."]`), which would meet a file being deleted.
    tree = tmp_path / "tree"
    for part in ("scenarios/triage", "judges/triage"):
        shutil.copytree(ROOT / part, tree / part)
    (tree / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "triage_vocabulary.yaml", tree / "examples")
    suite = tree / "scenarios" / "triage" / "suite-other-bot.yaml"
    suite.write_text(SUITE.read_text().replace("make_bot\n", "make_fixed_bot\n"))
    args = ["run", str(suite), "--tags", TAGS, "--runs", "2", "--shard", "2/2", "--seed", "7"]
    assert main([*args, "--out", str(tmp_path / "odd"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["merge", str(one), str(tmp_path / "odd"), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "(2 problems)" in err and "[bot.factory]" in err and "[seed]: 7 here, 0 in" in err


def test_merge_takes_shards_that_differ_only_in_how_calls_were_made(
    halves: list[Path], tmp_path: Path
) -> None:
    """Budgets, connections and concurrency (what a resume may change) and where and when a shard ran."""
    one, two = halves

    def elsewhere(manifest: dict[str, Any]) -> None:
        manifest["suite"]["concurrency"] = 3
        manifest["suite"]["providers"] = {"openai": {"rpm": 100, "max_connections": 2}}
        manifest["suite_file"] = "/elsewhere/suite.yaml"
        manifest["suite_hash"] = "sha256:another-copy"
        manifest["created_at"] = "2020-01-01T00:00:00Z"
        manifest["git_commit"] = None  # an installed simulator knows no commit

    assert (
        main(["merge", str(one), str(_edited(two, tmp_path, elsewhere)), "--out", str(tmp_path / "m")]) == 0
    )
    assert RunFolder.open(tmp_path / "m").read_manifest().status == "complete"


def test_a_resumed_shard_merges_and_a_resume_cannot_make_it_another_experiment(
    halves: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = (tmp_path / "one", tmp_path / "two")
    shutil.copytree(halves[0], one)
    shutil.copytree(halves[1], two)
    lines = (two / CONVERSATIONS).read_text().splitlines(keepends=True)
    (two / CONVERSATIONS).write_text("".join(lines[:2]))
    _set("status", "interrupted")(manifest := json.loads((two / MANIFEST).read_text()))
    (two / MANIFEST).write_text(json.dumps(manifest))
    assert main(["run", "--resume", str(two), "--seed", "7", "--no-progress"]) == 2
    assert "--seed would change its results" in capsys.readouterr().err
    assert main(["run", "--resume", str(two), "--rpm", "100", "--no-progress"]) == 0
    assert main(["merge", str(one), str(two), "--out", str(tmp_path / "m")]) == 0
