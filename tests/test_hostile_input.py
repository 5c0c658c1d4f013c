"""Hostile and mistaken input files (issue 11, items 6-9): each class of defect gets one clear error line
naming file, line and field, never a traceback, never a silent pass, never minutes of work."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.config.yamlfile import MAX_DEPTH, MAX_FILE_BYTES, load_yaml
from simulator.errors import UserError

SCENARIO = "id: s1\npersona: p\ngoal: g\n"


def _one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 2) -> str:
    """Run the CLI; it must exit `code` with an `error:` message and no traceback."""
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error:"), err
    return err


def _bombs() -> dict[str, str]:
    """Alias bombs of several shapes: nested lists, nested mappings, a bomb under `facts`, in a flow list."""
    lists = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    maps = ["m0: &m0 {k: v}"] + [
        f"m{i}: &m{i} {{{', '.join(f'k{j}: *m{i - 1}' for j in range(9))}}}" for i in range(1, 8)
    ]
    names = ["x"] + [f"y{i}" for i in range(6)]
    facts = "x: &x [a, b, c, d, e, f, g, h]\n" + "".join(
        f"{name}: &{name} [{', '.join([f'*{names[i]}'] * 8)}]\n" for i, name in enumerate(names[1:])
    )
    return {
        "lists": SCENARIO + "expected:\n" + "".join(f"  {line}\n" for line in lists),
        "mappings": SCENARIO + "expected:\n" + "".join(f"  {line}\n" for line in maps),
        "facts": SCENARIO
        + "expected:\n"
        + "".join(f"  {line}\n" for line in facts.splitlines())
        + "facts: *y5\n",
        # Aliases as keys: a 400 KB string named once, then the key of 40 one-entry mappings (16 MB of text).
        "keys": SCENARIO
        + "expected:\n  s: &s "
        + "x" * 400_000
        + "\n  l: ["
        + ", ".join(f"{{*s : {i}}}" for i in range(40))
        + "]\n",
        # And as part of a complex key (`? [*s, *s]`), 20 times.
        "complex keys": SCENARIO
        + "expected:\n  s: &s "
        + "x" * 400_000
        + "\n  l:\n"
        + "".join(f"    - ? [*s, *s, {i}]\n      : v\n" for i in range(20)),
    }


@pytest.mark.parametrize("shape", sorted(_bombs()))
def test_alias_bombs_are_refused_at_once(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_bombs()[shape])
    with pytest.raises(UserError) as caught:
        load_scenarios([path])
    assert "aliases (*name) expand to more than" in caught.value.render()


def test_aliases_within_the_bound_still_work(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(
        "- &base {id: a, persona: shared persona, goal: g, tags: [t]}\n- {<<: *base, id: b}\n"
        "- id: c\n  persona: p\n  goal: g\n  tags: &tags [x, y]\n- {id: d, persona: p, goal: g, tags: *tags}\n"
    )
    scenarios = load_scenarios([path])
    assert [s.id for s in scenarios] == ["a", "b", "c", "d"]
    assert scenarios[1].persona == "shared persona" and scenarios[3].tags == ["x", "y"]


def test_files_over_the_size_limit_are_refused_before_reading(tmp_path: Path) -> None:
    for name, size in (("big.yaml", MAX_FILE_BYTES + 1), ("huge.yaml", 3 * MAX_FILE_BYTES)):
        path = tmp_path / name
        with path.open("wb") as handle:
            handle.truncate(size)  # sparse: the size is what matters, not the content
        with pytest.raises(UserError) as caught:
            load_scenarios([path])
        assert f"files over {MAX_FILE_BYTES / 1e6:.0f} MB are refused" in caught.value.render()


@pytest.mark.parametrize(
    "text",
    [
        "".join(" " * i + f"k{i}:\n" for i in range(MAX_DEPTH + 5)) + " " * (MAX_DEPTH + 5) + "k: 1\n",
        "expected: " + "[" * 200 + "]" * 200 + "\n",
        "expected: " + "[" * 5000 + "]" * 5000 + "\n",
        "".join("  " * i + "-\n" for i in range(400)) + "  " * 400 + "x\n",
    ],
    ids=["block-mappings", "flow-200", "flow-5000", "block-lists"],
)
def test_deeply_nested_yaml_is_one_clear_line(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(SCENARIO.replace("id: s1\n", "") + text if text.startswith("expected") else text)
    err = _one_error_line(capsys, ["validate", str(path)])
    assert "nest" in err and str(path) in err


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("id: s1\npersona: p\ngoal: g\ngoal: h\n", 4, "goal"),
        (
            "id: s1\npersona: p\ngoal: g\nexpected:\n  triage_level: gp\n  triage_level: emergency\n",
            6,
            "expected.triage_level",
        ),
        (
            "- id: s1\n  persona: p\n  goal: g\n- id: s2\n  persona: p\n  persona: q\n  goal: g\n",
            6,
            "[2].persona",
        ),
        ("{id: s1, persona: p, goal: g, id: s2}\n", 1, "id"),
    ],
)
def test_duplicate_keys_are_errors(tmp_path: Path, text: str, line: int, field: str) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        load_scenarios([path])
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (line, field)
    assert "duplicate key" in problem.message and "keep one of them" in problem.message


def test_duplicate_key_in_a_suite(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("bot: {type: python, factory: a:b}\nruns: 2\nruns: 3\n")
    with pytest.raises(UserError) as caught:
        load_suite(path)
    assert [(p.line, p.field) for p in caught.value.problems] == [(3, "runs")]


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("opnai", "did you mean 'openai'?"),
        ("antropic", "did you mean 'anthropic'?"),
        ("locl", "did you mean 'local'?"),
        ("mistral", "use one of: anthropic, openai, local"),
    ],
)
def test_unknown_provider_names_are_errors(tmp_path: Path, name: str, hint: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        f"bot: {{type: python, factory: a:b}}\nproviders:\n  openai: {{}}\n  {name}: {{timeout_s: 5}}\n"
    )
    with pytest.raises(UserError) as caught:
        load_suite(path)
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (4, f"providers.{name}")
    assert hint in problem.message


@pytest.mark.parametrize("provider", ["openai", "anthropic", "local"])
def test_api_key_env_naming_an_unset_variable_stops_the_run(
    tmp_path: Path, provider: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SIMULATOR_TEST_UNSET_KEY", raising=False)
    (tmp_path / "s.yaml").write_text(SCENARIO)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "bot: {type: python, factory: nowhere:make}\nuser: {model: offline}\nproviders:\n"
        f"  {provider}:\n    base_url: http://127.0.0.1:9/v1\n    api_key_env: SIMULATOR_TEST_UNSET_KEY\n"
    )
    err = _one_error_line(capsys, ["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"])
    assert f"{suite}:6 [providers.{provider}.api_key_env]" in err
    assert "set the SIMULATOR_TEST_UNSET_KEY environment variable" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("flag", ["--concurrency", "--runs"])
@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_bad_numbers_on_the_command_line_are_blamed_on_the_flag(
    suite_dir: Path, flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", str(suite_dir / "suite.yaml"), flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "suite.yaml:" not in err


@pytest.mark.parametrize(
    ("suite", "expected"),
    [
        (
            "bot: {type: python, factory: a:b}\nproviders: {openai: {timeot_s: 5}}\n",
            "did you mean 'timeout_s'?",
        ),
        (
            "bot: {type: python, factory: a:b}\nproviders: {openai: {zzz: 5}}\n",
            "allowed keys: adaptive_concurrency",
        ),
        (
            "bot: {type: http, url: 'http://x', zzz: 1}\n",
            "allowed keys: environment_mcp, headers, max_messages_per_conversation, max_messages_per_turn, "
            "max_reply_bytes, max_tool_calls_per_turn, start, timeout_s, type, url, version",
        ),
        ("bot: {type: chat, model: 'openai:x', system_prompt: p, zzz: 1}\n", "allowed keys: decision_tool"),
        (
            "bot: {type: python, factory: a:b}\noutcome: {key: k, levels: [a, b], zzz: 1}\n",
            "allowed keys: critical",
        ),
    ],
)
def test_unknown_key_hints_are_never_empty(tmp_path: Path, suite: str, expected: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(suite)
    with pytest.raises(UserError) as caught:
        load_suite(path)
    (problem,) = caught.value.problems
    assert expected in problem.message and not problem.message.endswith("allowed keys: ")


@pytest.mark.parametrize("name", ["suite-http.yaml", "http.yml", "nightly-suite.yaml", "z.yaml"])
def test_suite_files_are_told_apart_by_content(
    suite_dir: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str], bot_module: str
) -> None:
    (suite_dir / name).write_text(
        f"name: second\nbot: {{type: python, factory: '{bot_module}:make'}}\nuser: {{model: offline}}\nruns: 1\n"
    )
    for file in suite_dir.rglob("chest.yaml"):  # validate wants a scenario's file named after its id
        file.rename(file.with_name("chest-1.yaml"))
    assert [s.id for s in load_scenarios([suite_dir])] == ["chest-1"]
    assert main(["validate", str(suite_dir)]) == 0
    out = capsys.readouterr().out
    assert f"suite {suite_dir / name}: ok" in out and "1 scenario: ok" in out
    assert main(["run", str(suite_dir / name), "--out", str(tmp_path / "run"), "--no-progress"]) == 0


@pytest.mark.parametrize(
    "content",
    [b"id: s1\npersona: caf\xe9\ngoal: g\n", b"\xff\xfe\x00\x00binary", b"\x89PNG\r\n\x1a\n\x00\x00"],
    ids=["latin-1", "utf-32-bom", "png"],
)
def test_non_utf8_yaml_is_one_clear_line(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    err = _one_error_line(capsys, ["validate", str(path)])
    assert str(path) in err and ("UTF-8" in err or "not valid YAML" in err)


def test_located_lines_survive_the_single_parse(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("id: s1\npersona: p\ngoal: g\nfacts:\n  - a\n  - b\n")
    located = load_yaml(path)
    assert located.line_of(("facts", 1)) == 6 and located.line_of(("goal",)) == 3
    assert located.data == {"id": "s1", "persona": "p", "goal": "g", "facts": ["a", "b"]}


def test_show_repeat_out_of_range(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    for argv in (["--repeat", "99"], ["--repeat", "-1"], ["--scenario", "chest-1", "--repeat", "3"]):
        err = _one_error_line(capsys, ["show", str(out), *argv])
        assert "its repeats are 0-2 (counted from 0)" in err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["judge", "RUN", "--concurrency", "0"], "--concurrency"),
        (["judge-pairwise", "A", "B", "--criterion", "x", "--concurrency", "-2"], "--concurrency"),
        (["compare", "A", "B", "--max-flips", "-1"], "--max-flips"),
    ],
)
def test_count_flags_of_other_commands_are_checked_at_the_flag(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and f"argument {flag}" in capsys.readouterr().err


def test_judge_checks_api_key_env_too(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SIMULATOR_TEST_UNSET_KEY", raising=False)
    out = tmp_path / "run"
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    other = tmp_path / "judging.yaml"
    other.write_text(
        "bot: {type: python, factory: a:b}\nproviders:\n  openai: {api_key_env: SIMULATOR_TEST_UNSET_KEY}\n"
    )
    err = _one_error_line(capsys, ["judge", str(out), "--suite", str(other)])
    assert f"{other}:3 [providers.openai.api_key_env]" in err
