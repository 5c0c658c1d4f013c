"""Inputs a writer or a command line gets wrong that passed silently or crashed: YAML 1.1's number forms
(`max_turns: 012` ran 10 turns), a level or an id written twice in other capitals, a report written over
the run's own records or a suite, `new --out` under a file or at a folder (a traceback), and `run --out` at
a folder that holds no run (advice to resume it, which then said it is not a run folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from tests.support.projects import BOT, CRITERION, SCENARIO, SCENARIOS, one_scenario_project


def _err(capsys: pytest.CaptureFixture[str], args: list[str], code: int = 2) -> str:
    assert main(args) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Errno" not in err, err
    return err


NUMBERS = {
    "octal max_turns": ("scenario", "max_turns: 012\n", "s1.yaml:5", "YAML reads 012 as an octal number, 10"),
    "octal with 0o": ("scenario", "max_turns: 0o12\n", None, None),  # YAML 1.1 reads it as text: refused as such
    "hexadecimal runs": ("suite", "runs: 0x10\n", "suite.yaml:3", "YAML reads 0x10 as a hexadecimal number, 16"),
    "binary concurrency": ("suite", "concurrency: 0b11\n", "suite.yaml:3", "as a binary number, 3"),
    "grouped digits": ("suite", "runs: 1_0\n", "suite.yaml:3", "grouped by '_', 10"),
    "base 60": ("scenario", "max_turns: 1:30\n", "s1.yaml:5", "as a base-60 number, 90"),
    "a float in base 60": ("suite", "user: {model: offline, temperature: 1:30.5}\n", "suite.yaml:3",
                           "as a base-60 number, 90.5"),
    "an id in octal": ("scenario-id", "id: 0123\n", "s1.yaml:1", "as an octal number, 83"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NUMBERS))
def test_a_number_in_a_yaml_1_1_form_is_refused_where_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    where, line, at, said = NUMBERS[name]
    if where == "suite":
        suite = one_scenario_project(tmp_path, SCENARIOS + BOT + line)
    elif where == "scenario":
        suite = one_scenario_project(tmp_path, SCENARIOS + BOT, SCENARIO + line)
    else:
        suite = one_scenario_project(tmp_path, SCENARIOS + BOT, SCENARIO.replace("id: s1\n", line))
    err = _err(capsys, ["validate", str(suite)])
    if said is None:  # read as text, so the field refuses it (a number is expected)
        assert "s1.yaml:5 [max_turns]" in err, err
        return
    assert f"{at}:" in err and said in err and "quote it for text" in err, err
    assert "not valid YAML" not in err, err


@pytest.mark.parametrize("text", ["12", "-3", "1.5", "1.0e+3", ".5", "0", "'012'", '"0x10"'])
def test_numbers_written_plainly_and_quoted_text_still_read(tmp_path: Path, text: str) -> None:
    from simulator.config.yamlfile import load_yaml

    path = tmp_path / "x.yaml"
    path.write_text(f"a: {text}\n")
    value = load_yaml(path).data["a"]
    assert isinstance(value, str) if text[0] in "'\"" else isinstance(value, int | float)


LEVELS = {
    "the same level twice": ("[self_care, gp, gp, emergency]", "'gp' is listed twice"),
    "a level in other capitals": ("[self_care, gp, GP, emergency]", "'GP' is listed twice ('gp' too"),
    "an empty level": ("[self_care, '', emergency]", "a level is empty"),
    "emergency twice, far apart": ("[emergency, gp, Emergency]", "'Emergency' is listed twice"),
}


@pytest.mark.parametrize("name", sorted(LEVELS))
def test_an_outcome_level_listed_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    levels, said = LEVELS[name]
    suite = one_scenario_project(
        tmp_path, SCENARIOS + BOT + f"outcome: {{key: triage_level, levels: {levels}}}\n", SCENARIO
    )
    err = _err(capsys, ["validate", str(suite)])
    assert "suite.yaml:3 [outcome.levels]" in err and said in err, err


@pytest.mark.parametrize(
    "kind, mine, other", [("scenario", "s1", "S1"), ("scenario", "s1", "s1"), ("criterion", "c1", "C1"),
                          ("criterion", "c1", "c1")],
)  # fmt: skip
def test_ids_that_differ_only_in_case_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, mine: str, other: str
) -> None:
    suite = one_scenario_project(tmp_path, SCENARIOS + BOT, criterion=CRITERION)
    folder = tmp_path / ("scenarios" if kind == "scenario" else "judges")
    text = (SCENARIO if kind == "scenario" else CRITERION).replace(f"id: {mine}", f"id: {other}")
    (folder / f"{other}-copy.yaml").write_text(text)
    err = _err(capsys, ["validate", str(suite)])
    if other == mine:
        assert f"duplicate {kind} id '{mine}'" in err, err
    else:
        assert f"{kind} id '{other}' differs only in case from '{mine}'" in err or (
            f"{kind} id '{mine}' differs only in case from '{other}'" in err
        ), err


@pytest.fixture
def run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    bot = "bot: {type: python, factory: 'examples.triage_bot:make_bot'}\n"
    suite = one_scenario_project(tmp_path, SCENARIOS + bot + "runs: 1\n")
    run = tmp_path / "run"
    assert main(["run", str(suite), "--out", str(run), "--no-progress"]) in (0, 1), capsys.readouterr().err
    capsys.readouterr()
    return run


@pytest.mark.parametrize(
    "flag, target",
    [("--json", "run/conversations.jsonl"), ("--html", "run/manifest.json"), ("--junit", "run/verdicts.jsonl"),
     ("--html", "run/.writer.lock"), ("--junit", "suite.yaml"), ("--json", "suite.yaml"),
     ("--html", "scenarios/s1.yaml"), ("--json", "notes.txt")],
)  # fmt: skip
def test_a_report_is_never_written_over_the_run_or_another_file(
    run_folder: Path, capsys: pytest.CaptureFixture[str], flag: str, target: str
) -> None:
    """`report RUN --json RUN/conversations.jsonl` replaced the run's records (the run was lost)."""
    root = run_folder.parent
    (root / "notes.txt").write_text("mine\n")
    path = root / target
    before = path.read_bytes() if path.exists() else None
    err = _err(capsys, ["report", str(run_folder), flag, str(path), "--quiet"])
    assert f"{flag} {path}:" in err, err
    assert (path.read_bytes() if path.exists() else None) == before
    assert main(["report", str(run_folder), "--quiet"]) == 0  # the run still reads


def test_a_report_may_replace_an_earlier_report_and_go_beside_the_records(
    run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = {"--html": run_folder / "report.html", "--json": run_folder.parent / "r.json",
               "--junit": run_folder.parent / "r.xml"}  # fmt: skip
    for _ in range(2):  # the second time, each file exists and is replaced
        args = ["report", str(run_folder), "--quiet"]
        for flag, path in outputs.items():
            args += [flag, str(path)]
        assert main(args) == 0, capsys.readouterr().err
    assert all(path.stat().st_size > 0 for path in outputs.values())


@pytest.mark.parametrize("command", ["gate", "safety-case"])
def test_other_commands_refuse_the_run_s_own_files_too(
    run_folder: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    target = run_folder / "conversations.jsonl"
    before = target.read_bytes()
    args = {
        "gate": ["gate", str(run_folder), "--require", "errors<=100%", "--json", str(target)],
        "safety-case": ["safety-case", str(run_folder), "--hazards", "examples/triage_hazards.yaml",
                        "--json", str(target)],
    }[command]  # fmt: skip
    err = _err(capsys, args)
    assert f"--json {target}: that is one of the run folder's own files" in err, err
    assert target.read_bytes() == before


NEW = {
    "scenario": ["new", "scenario", "--id", "x1", "--persona", "p", "--goal", "g", "--fact", "f"],
    "criterion": ["new", "criterion", "--id", "c2", "--criterion", "c", "--pass", "p", "--fail", "f"],
    "suite": ["new", "suite", "--url", "http://127.0.0.1:8765/chat", "--judge-model", "none"],
}


@pytest.mark.parametrize("what", sorted(NEW))
@pytest.mark.parametrize("where", ["under a file", "a folder", "a folder with --force"])
def test_new_with_an_out_that_cannot_be_a_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, where: str
) -> None:
    (tmp_path / "afile").write_text("hi\n")
    (tmp_path / "fdir").mkdir()
    out = {"under a file": tmp_path / "afile" / "s" / "x.yaml", "a folder": tmp_path / "fdir",
           "a folder with --force": tmp_path / "fdir"}[where]  # fmt: skip
    force = ["--force"] if where.endswith("--force") and what != "suite" else []
    err = _err(capsys, [*NEW[what], "--out", str(out), *force])
    if where == "under a file":
        assert f"--out {out}: {tmp_path / 'afile'} is a file, not a folder" in err, err
    elif what == "suite":
        assert "already exists" in err or "that is a folder" in err, err
    else:
        assert f"--out {out}: that is a folder" in err, err
    assert (tmp_path / "afile").read_text() == "hi\n"


def test_run_out_at_a_folder_that_holds_no_run_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = one_scenario_project(tmp_path, SCENARIOS + BOT)
    other = tmp_path / "nonrun"
    other.mkdir()
    (other / "other.txt").write_text("x")
    err = _err(capsys, ["run", str(suite), "--out", str(other), "--no-progress"])
    assert "holds other files and no run" in err and "--resume" not in err, err


KEYS = {
    "yes": ("yes: x\n", "the key yes is read by YAML as a boolean"),
    "null": ("null: x\n", "the key null is read by YAML as null"),
    "tilde": ("~: x\n", "the key ~ is read by YAML as null"),
    "a number": ("1: x\n", "the key 1 is read by YAML as a number"),
    "a date": ("2026-01-01: x\n", "the key 2026-01-01 is read by YAML as a date"),
    "a nested number": ("expected: {triage_level: gp, 1: 2}\n", "the key 1 is read by YAML as a number"),
    "a list as a key": ("? [a, b]\n: x\n", "found unhashable key"),
}


@pytest.mark.parametrize("name", sorted(KEYS))
def test_a_key_yaml_does_not_read_as_a_name_is_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """`yes: x` was reported as the field `[1]`, `null: x` as `[None]`: YAML had made them True and None."""
    line, said = KEYS[name]
    suite = one_scenario_project(tmp_path, SCENARIOS + BOT, "id: s1\npersona: p\ngoal: g\n" + line)
    err = _err(capsys, ["validate", str(suite)])
    assert "s1.yaml:4" in err and said in err and "[None]" not in err and "[1]" not in err, err
    if "read by YAML" in said:
        assert "quote it if it is one" in err, err


@pytest.mark.parametrize("line", ["base: &b {persona: p}\n", "base: {persona: p}\n", "base:\n  persona: p\n"])
def test_a_mapping_where_a_text_field_goes_is_not_advised_as_a_list_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    """The colon hint (`- Pain: sharp` read as a key and a value; quote it) is for a list's item: given for
    `base: {persona: p}` it advised quoting a list item that was never there."""
    suite = one_scenario_project(tmp_path, SCENARIOS + BOT, "id: s1\npersona: p\ngoal: g\n" + line)
    err = _err(capsys, ["validate", str(suite)])
    assert "s1.yaml:4 [base]" in err and "got a mapping" in err and "put it in quotes" not in err, err


SETTINGS = {
    "concurrency of 10^20": ("concurrency: 100000000000000000000\n", "[concurrency]", "should be at most 10000"),
    "a connection limit of 10^9": ("providers: {openai: {max_connections: 1000000000}}\n",
                                   "[providers.openai.max_connections]", "should be at most 10000"),
    "a first wait past the longest": ("providers: {openai: {backoff_initial_s: 500, backoff_max_s: 1}}\n",
                                      "[providers.openai.backoff_initial_s]", "backoff_initial_s (500 s) is longer than backoff_max_s"),
    "a floor above the limit": ("providers: {anthropic: {min_connections: 40, max_connections: 8}}\n",
                                "[providers.anthropic.min_connections]", "min_connections (40) is above max_connections (8)"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_setting_the_engine_would_quietly_change_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Accepted before: 10^20 workers (a pool of that many tasks), a floor the engine clamped to the limit, a
    first wait the engine cut to the longest."""
    line, field, said = SETTINGS[name]
    suite = one_scenario_project(tmp_path, SCENARIOS + BOT + line)
    err = _err(capsys, ["validate", str(suite)])
    assert f"suite.yaml:3 {field}" in err and said in err, err


@pytest.mark.parametrize("value", ["asycnio", "uv-loop", "trio"])
def test_a_mistyped_event_loop_is_refused_not_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """SIMULATOR_EVENT_LOOP=asycnio ran the other loop silently: the one a problem was being chased on."""
    monkeypatch.setenv("SIMULATOR_EVENT_LOOP", value)
    suite = one_scenario_project(tmp_path, SCENARIOS + BOT)
    err = _err(capsys, ["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"])
    assert f"SIMULATOR_EVENT_LOOP='{value}'" in err and "asyncio or uvloop" in err, err
    assert "never awaited" not in err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", ["asyncio", "UVLOOP", ""])
def test_the_event_loops_that_exist_are_taken(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from simulator.eventloop import run_async

    async def answer() -> int:
        return 42

    monkeypatch.setenv("SIMULATOR_EVENT_LOOP", value)
    assert run_async(answer()) == 42
