"""A setting that names a file is compared by the file's content, not by how its path is spelled: `merge` and
`run --resume` take two checkouts of one suite (absolute paths into each) and relative or absolute spellings
of one file, and refuse the same path to a file of other content, naming the setting and the fix. A run made
before the content was recorded keeps the text comparison, and says so."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from pydantic import BaseModel

from simulator.cli import main
from simulator.config.bot_identity import started_parts
from simulator.config.bot_kinds import BOT_KINDS, bot_kind
from simulator.config.named_files import NamesFile, NamesFolder, NamesPlace
from simulator.config.suite import Suite
from simulator.engine.operational import content_note, measured_differences
from simulator.record.folder import CONVERSATIONS, MANIFEST, RunFolder
from simulator.record.recorded import setting_file_hashes
from tests.test_bot_kinds import _holds_text, _models_of

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "scenarios" / "triage"
SCENARIOS = ("chest-pain-vague-01", "chest-pain-jaw-elderly-02", "back-pain-16", "common-cold-19")
VOCABULARY = ROOT / "examples" / "triage_vocabulary.yaml"
EDITED = ("jaw: [jaws, mandíbula]", "jaw: [jaws, jawline, mandíbula]")  # one more word: other content


def _checkout(
    root: Path, *, absolute: bool = True, vocabulary: str | None = None, edit: bool = False
) -> Path:
    """A copy of a small triage suite at `root` (scenarios, judges, vocabulary): its suite file names them by
    absolute paths into this copy, or by relative ones; `vocabulary` overrides how the vocabulary is named,
    `edit` gives this copy's vocabulary other content. Returns the suite file."""
    (root / "scenarios").mkdir(parents=True)
    for scenario in SCENARIOS:
        shutil.copy(TRIAGE / f"{scenario}.yaml", root / "scenarios")
    shutil.copytree(ROOT / "judges" / "triage", root / "judges")
    text = VOCABULARY.read_text(encoding="utf-8")
    assert EDITED[0] in text
    (root / "vocab.yaml").write_text(text.replace(*EDITED) if edit else text, encoding="utf-8")
    data = yaml.safe_load((TRIAGE / "suite.yaml").read_text(encoding="utf-8"))

    def name(part: str) -> str:
        return str(root / part) if absolute else part

    data["scenarios"] = {"paths": [name("scenarios")]}
    data["judges"]["paths"] = [name("judges")]
    data["user"]["vocabulary"] = vocabulary or name("vocab.yaml")
    data["runs"] = 1
    suite = root / "suite.yaml"
    suite.write_text(json.dumps(data), encoding="utf-8")
    return suite


def _run(suite: Path, out: Path, *extra: str) -> None:
    assert main(["run", str(suite), "--out", str(out), "--no-progress", *extra]) == 0


def _shards(one: Path, two: Path, out: Path) -> tuple[Path, Path]:
    _run(one, out / "shard1", "--shard", "1/2")
    _run(two, out / "shard2", "--shard", "2/2")
    return out / "shard1", out / "shard2"


def _interrupted(run: Path) -> None:
    """`run` as a killed run leaves it: its last conversations not written, its manifest not closed."""
    lines = (run / CONVERSATIONS).read_text(encoding="utf-8").splitlines(keepends=True)
    (run / CONVERSATIONS).write_text("".join(lines[:1]), encoding="utf-8")
    _edit_manifest(run, lambda m: m.update(status="interrupted"))


def _edit_manifest(run: Path, edit: Any) -> None:
    manifest = json.loads((run / MANIFEST).read_text(encoding="utf-8"))
    edit(manifest)
    (run / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")


def _problems(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("  ")]


# (how the first shard's suite names its files, how the second's does): one experiment each time.
SAME_FILES = {
    "two checkouts, absolute paths": (lambda a: _checkout(a), lambda b: _checkout(b)),
    "relative, then absolute": (
        lambda a: _checkout(a, absolute=False),
        lambda b: _checkout(b, absolute=False, vocabulary=str(b / "vocab.yaml")),
    ),
    "absolute, then relative": (
        lambda a: _checkout(a, vocabulary=str(a / "vocab.yaml")),
        lambda b: _checkout(b, vocabulary="vocab.yaml"),
    ),
}


@pytest.mark.parametrize("spellings", SAME_FILES.values(), ids=SAME_FILES.keys())
def test_merge_takes_shards_whose_settings_name_the_same_files_by_other_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spellings: Any
) -> None:
    one, two = _shards(spellings[0](tmp_path / "a"), spellings[1](tmp_path / "b"), tmp_path)
    capsys.readouterr()
    assert main(["merge", str(one), str(two), "--out", str(tmp_path / "m")]) == 0, capsys.readouterr().err
    manifest = RunFolder.open(tmp_path / "m").read_manifest()
    assert manifest.status == "complete" and manifest.counts.conversations == len(SCENARIOS)
    hashes = RunFolder.open(two).read_manifest().setting_files
    assert hashes is not None and hashes["user.vocabulary"].startswith("sha256:")


@pytest.mark.parametrize("absolute", [True, False], ids=["absolute", "relative"])
def test_merge_refuses_the_same_path_to_a_file_of_other_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], absolute: bool
) -> None:
    """The same text, other content: with absolute paths the shard ran from a copy edited in place."""
    vocabulary = str(tmp_path / "shared" / "vocab.yaml") if absolute else "vocab.yaml"
    first = _checkout(tmp_path / "a", absolute=False, vocabulary=vocabulary)
    (tmp_path / "shared").mkdir()
    shutil.copy(VOCABULARY, tmp_path / "shared" / "vocab.yaml")
    _run(first, tmp_path / "shard1", "--shard", "1/2")
    shared = tmp_path / "shared" / "vocab.yaml"
    shared.write_text(shared.read_text(encoding="utf-8").replace(*EDITED), encoding="utf-8")
    second = _checkout(tmp_path / "b", absolute=False, vocabulary=vocabulary, edit=True)
    _run(second, tmp_path / "shard2", "--shard", "2/2")
    capsys.readouterr()
    code = main(["merge", str(tmp_path / "shard1"), str(tmp_path / "shard2"), "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2 and "not one experiment" in err and "Traceback" not in err
    [line] = _problems(err)
    assert "[user.vocabulary]" in line and f"'{vocabulary}' (content sha256:" in line
    assert "the same path names a file of other content" in line and "re-run this shard" in line
    assert not (tmp_path / "m").exists()


def test_merge_compares_the_paths_of_a_run_that_recorded_no_content_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = _shards(_checkout(tmp_path / "a"), _checkout(tmp_path / "b"), tmp_path)
    _edit_manifest(two, lambda m: m.pop("setting_files"))  # as a simulator of before the fix wrote it
    capsys.readouterr()
    assert main(["merge", str(one), str(two), "--out", str(tmp_path / "m")]) == 2
    [line] = _problems(capsys.readouterr().err)
    assert "[user.vocabulary]" in line and "(content not recorded)" in line
    assert "its paths are compared as written, so spell them as that run did" in line


@pytest.mark.parametrize("spellings", SAME_FILES.values(), ids=SAME_FILES.keys())
def test_resume_takes_a_suite_file_naming_the_same_files_by_other_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spellings: Any
) -> None:
    run = tmp_path / "run"
    _run(spellings[0](tmp_path / "a"), run)
    _interrupted(run)
    given = spellings[1](tmp_path / "b")
    capsys.readouterr()
    code = main(["run", str(given), "--resume", str(run), "--concurrency", "2", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    manifest = RunFolder.open(run).read_manifest()
    assert manifest.status == "complete" and manifest.counts.conversations == len(SCENARIOS)
    assert manifest.sessions[-1].settings_changed == {"concurrency": [8, 2]}


def test_resume_refuses_a_suite_file_whose_setting_names_a_file_of_other_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    _run(_checkout(tmp_path / "a", absolute=False), run)
    _interrupted(run)
    other = _checkout(tmp_path / "b", absolute=False, edit=True)  # `vocab.yaml` too, another word in it
    capsys.readouterr()
    code = main(["run", str(other), "--resume", str(run), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"{other}: resume can change only how calls are made" in err
    assert "user.vocabulary: 'vocab.yaml' (content sha256:" in err
    assert "the same path names a file of other content" in err and "Start a new run for those" in err


def test_resume_refuses_when_a_file_a_setting_names_changed_since_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a suite file too: the resume reads the run's own files, which must be as the run read them."""
    run = tmp_path / "run"
    _run(_checkout(tmp_path / "a"), run)
    _interrupted(run)
    vocabulary = tmp_path / "a" / "vocab.yaml"
    vocabulary.write_text(vocabulary.read_text(encoding="utf-8").replace(*EDITED), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "the files this run was made from are not as recorded" in err and "Traceback" not in err
    [line] = _problems(err)
    assert line.startswith(f"  {vocabulary}: the user.vocabulary file of this run changed since the run")
    assert "restore it as it was, or start a new run" in line
    vocabulary.unlink()
    assert main(["run", "--resume", str(run), "--no-progress"]) == 2
    assert "the user.vocabulary file of this run is no longer here" in capsys.readouterr().err


def test_resume_compares_the_paths_of_a_run_that_recorded_no_content_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    _run(_checkout(tmp_path / "a"), run)
    _interrupted(run)
    _edit_manifest(run, lambda m: m.pop("setting_files"))
    given = _checkout(tmp_path / "b")
    capsys.readouterr()
    assert main(["run", str(given), "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"user.vocabulary: '{tmp_path / 'a' / 'vocab.yaml'}' (content not recorded)" in err
    assert "compared as written, so spell them as that run did" in err
    assert main(["run", "--resume", str(run), "--no-progress"]) == 0  # without a suite file: as it began


# Every kind of setting that names a file: (suite fields, the setting's path, the file's name). The file is
# written at <checkout>/<name>; `{file}` in the fields is how the suite names it.
SETTINGS: dict[str, tuple[dict[str, Any], str, str]] = {
    "user.vocabulary": ({"user": {"model": "offline", "vocabulary": "{file}"}}, "user.vocabulary", "v.yaml"),
    "user.styles": ({"user": {"model": "offline", "styles": "{file}"}}, "user.styles", "styles.yaml"),
    "bot.system_prompt_file": (
        {"bot": {"type": "chat", "model": "test:echo", "system_prompt_file": "{file}"}},
        "bot.system_prompt_file",
        "prompt.txt",
    ),
    "bot.start.command": (
        {
            "bot": {
                "type": "http",
                "url": "http://127.0.0.1:{port}/chat",
                "start": {"command": ["{python}", "{file}", "--port", "{port}"]},
            }
        },
        "bot.start.command",
        "bot.py",
    ),
    "bot.transcriber.phrases": (
        {"bot": {"type": "voice", "url": "wss://bot.test/stream", "transcriber": {"phrases": "{file}"}}},
        "bot.transcriber.phrases",
        "phrases.txt",
    ),
    "redteam.pack": ({"redteam": {"pack": "{file}"}}, "redteam.pack", "strategies.yaml"),
    "redteam.instructions_file": (
        {"redteam": {"pack": "p.yaml", "instructions_file": "{file}"}},
        "redteam.instructions_file",
        "instructions.txt",
    ),
}


def _suite(folder: Path, fields: dict[str, Any], name: str, content: str) -> Suite:
    """A suite in `folder` whose setting names `name` as `fields` say; the file holds `content`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(content, encoding="utf-8")
    data: dict[str, Any] = {"bot": {"type": "python", "factory": "examples.triage_bot:make_bot"}}
    data.update(json.loads(json.dumps(fields).replace('"{file}"', json.dumps(name))))
    suite = Suite.model_validate(data)
    suite._base_dir = folder
    return suite


def _absolute(suite: Suite, name: str) -> Suite:
    """`suite` with the setting naming `name` written as an absolute path into its folder."""
    text = json.dumps(suite.model_dump(mode="json"))
    copy = Suite.model_validate(
        json.loads(text.replace(json.dumps(name), json.dumps(str(suite.base_dir / name))))
    )
    copy._base_dir = suite.base_dir
    return copy


def _compare(one: Suite, other: Suite) -> list[tuple[str, Any, Any]]:
    return measured_differences(one, setting_file_hashes(one), other, setting_file_hashes(other))


@pytest.mark.parametrize("case", SETTINGS.values(), ids=SETTINGS.keys())
def test_every_setting_that_names_a_file_is_compared_by_its_content(tmp_path: Path, case: Any) -> None:
    fields, setting, name = case
    a = _suite(tmp_path / "a", fields, name, "the same words\n")
    b = _suite(tmp_path / "b", fields, name, "the same words\n")
    assert setting_file_hashes(a)  # the file is recorded
    assert _compare(_absolute(a, name), _absolute(b, name)) == []  # two checkouts, absolute paths
    assert _compare(a, _absolute(b, name)) == []  # relative and absolute spellings
    assert _compare(_absolute(a, name), a) == []
    edited = _suite(tmp_path / "c", fields, name, "other words\n")
    [(path, here, there)] = _compare(a, edited)  # the same text, another content
    assert path == setting and name in repr(here) and repr(here) != repr(there)
    assert "the same path names a file of other content" in content_note(here, there)
    [(path, here, there)] = measured_differences(a, None, _absolute(b, name), setting_file_hashes(b))
    assert path == setting and "compared as written" in content_note(here, there)  # not recorded: text
    assert measured_differences(a, None, b, setting_file_hashes(b)) == []  # the same text still agrees


def test_a_started_bot_s_identity_does_not_depend_on_where_its_file_is(tmp_path: Path) -> None:
    """`bot_identity` (compared by merge and pooled by the safety case) names a command's file relative to the
    bot's folder: two checkouts, and a relative or absolute spelling, are one bot; other content is another."""
    for folder, content in (("a", "print('bot')\n"), ("b", "print('bot')\n"), ("c", "print('other')\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "bot.py").write_text(content, encoding="utf-8")
    a, b, c = (tmp_path / "a", tmp_path / "b", tmp_path / "c")
    relative = started_parts(["{python}", "bot.py"], a)
    assert started_parts(["{python}", str(a / "bot.py")], a) == relative
    assert started_parts(["{python}", str(b / "bot.py")], b) == relative
    assert "sha256 of bot.py" in relative
    assert (
        started_parts(["{python}", str(c / "bot.py")], c)["sha256 of bot.py"] != relative["sha256 of bot.py"]
    )


# --- guard: every config field that looks like it names a file declares it -----------------------------

_PATH_NAME = re.compile(r"(^|_)(file|files|path|paths|dir|folder|cwd|pack|vocabulary|styles|phrases)$")
# Fields named like a path that are not compared by a file's content, and why.
EXEMPT = {
    "MessagesSource.phrases": "the phrases themselves (level -> patterns), not a file",
}


def undeclared_file_fields(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> list[str]:
    """Text fields (nested models included) named like a path that declare none of NamesFile, NamesFolder and
    NamesPlace."""
    seen = set() if seen is None else seen
    seen.add(model)
    found = []
    for name, info in model.model_fields.items():
        declared = any(isinstance(m, NamesFile | NamesFolder | NamesPlace) for m in info.metadata)
        where = f"{model.__name__}.{name}"
        if _PATH_NAME.search(name) and _holds_text(info.annotation) and not declared and where not in EXEMPT:
            found.append(where)
        for inner in _models_of(info.annotation):
            if inner not in seen:
                found += undeclared_file_fields(inner, seen)
    return found


def test_the_file_guard_catches_an_undeclared_field_and_passes_a_declared_one() -> None:
    class Nested(BaseModel):
        rules_file: str | None = None

    class Careless(BaseModel):
        prompt_path: str
        cwd: str | None = None
        nested: Nested | None = None
        file_count: int = 0  # not a path's name

    assert undeclared_file_fields(Careless) == ["Careless.prompt_path", "Careless.cwd", "Nested.rules_file"]

    class Careful(BaseModel):
        prompt_path: Annotated[str, NamesFile()]
        cwd: Annotated[str | None, NamesFolder()] = None
        cache_path: Annotated[str, NamesPlace()] = "c.sqlite"

    assert undeclared_file_fields(Careful) == []


@pytest.mark.parametrize("name", ["suite", *BOT_KINDS.names()])
def test_every_field_that_names_a_file_declares_it(name: str) -> None:
    assert undeclared_file_fields(Suite if name == "suite" else bot_kind(name).config) == []
