"""`run --resume` and `judge` read the very files a run was made from (issue 30, item 1): the manifest keeps
absolute paths and content hashes, so the working directory never matters, another tree is never loaded, and
a file that moved or changed is refused by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import CONVERSATIONS

OTHER = """
id: other-{n}
persona: someone else entirely
goal: a scenario of a different suite
expected:
  triage_level: gp
"""


def _run_then_cut(suite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run made with a relative suite path from the suite's parent, then cut to one conversation."""
    monkeypatch.chdir(suite_dir.parent)
    out = suite_dir.parent / "runs" / "r1"
    assert main(["run", "suite/suite.yaml", "--out", str(out), "--no-progress"]) == 0
    lines = (out / CONVERSATIONS).read_text().splitlines(keepends=True)
    (out / CONVERSATIONS).write_text(lines[0])
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def _ids(out: Path) -> list[str]:
    return sorted(json.loads(line)["id"] for line in (out / CONVERSATIONS).read_text().splitlines())


def test_the_manifest_records_absolute_paths(suite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run_then_cut(suite_dir, monkeypatch)
    manifest = json.loads((out / "manifest.json").read_text())
    assert Path(manifest["suite_file"]).is_absolute()
    assert all(Path(s["file"]).is_absolute() and s["sha256"] for s in manifest["scenarios"])


@pytest.mark.parametrize("where", ["empty", "other-tree", "inside-suite"])
def test_resume_from_any_folder_loads_the_recorded_tree(
    suite_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str
) -> None:
    out = _run_then_cut(suite_dir, monkeypatch)
    if where == "inside-suite":
        monkeypatch.chdir(suite_dir)
    else:
        elsewhere = tmp_path / where
        (elsewhere / "suite").mkdir(parents=True)
        if where == "other-tree":  # a folder with the same relative layout holding other scenarios
            for n in range(3):
                (elsewhere / "suite" / f"o{n}.yaml").write_text(OTHER.format(n=n))
            shutil.copy(suite_dir / "suite.yaml", elsewhere / "suite" / "suite.yaml")
        monkeypatch.chdir(elsewhere)
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert _ids(out) == ["chest-1#0", "chest-1#1", "chest-1#2"]


@pytest.mark.parametrize("change", ["edit-scenario", "edit-suite", "move-tree", "delete-scenario"])
def test_resume_and_judge_refuse_files_that_changed_or_moved(
    suite_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    out = _run_then_cut(suite_dir, monkeypatch)
    named = suite_dir / ("suite.yaml" if change == "edit-suite" else "chest.yaml")
    if change.startswith("edit"):
        named.write_text(named.read_text() + "\n# edited\n")
    elif change == "move-tree":
        suite_dir.rename(suite_dir.parent / "moved")
    else:
        named.unlink()
    before = (out / CONVERSATIONS).read_text()
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(named.resolve() if named.exists() else named) in err or named.name in err
    assert ("changed since the run" in err) == change.startswith("edit")
    assert "Traceback" not in err
    if change != "edit-suite":  # judge uses the manifest's suite (or --suite): only the scenarios matter
        assert main(["judge", str(out)]) == 2
        assert named.name in capsys.readouterr().err
    assert (out / CONVERSATIONS).read_text() == before  # nothing was run from another tree


@pytest.mark.parametrize("where", ["other-tree", "inside-suite"])
def test_the_python_api_resumes_the_recorded_tree_from_any_folder(
    suite_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str
) -> None:
    """`simulator.resume` (what `run --resume` calls) reads the recorded files too, never today's folder."""
    import simulator

    out = _run_then_cut(suite_dir, monkeypatch)
    if where == "inside-suite":
        monkeypatch.chdir(suite_dir)
    else:
        elsewhere = tmp_path / where / "suite"
        elsewhere.mkdir(parents=True)
        for n in range(3):
            (elsewhere / f"o{n}.yaml").write_text(OTHER.format(n=n))
        shutil.copy(suite_dir / "suite.yaml", elsewhere / "suite.yaml")
        monkeypatch.chdir(elsewhere.parent)
    simulator.resume(out)
    assert _ids(out) == ["chest-1#0", "chest-1#1", "chest-1#2"]


def test_the_python_api_refuses_a_recorded_file_that_changed(
    suite_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simulator
    from simulator.errors import UserError

    out = _run_then_cut(suite_dir, monkeypatch)
    scenario = suite_dir / "chest.yaml"
    scenario.write_text(scenario.read_text() + "\n# edited\n")
    with pytest.raises(UserError) as caught:
        simulator.resume(out)
    assert any("changed since the run" in p.message and "chest.yaml" in p.file for p in caught.value.problems)
