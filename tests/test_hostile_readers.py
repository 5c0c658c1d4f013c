"""Issue 43, round four, the input side: every structured-input reader goes through one bounded reader
(simulator/readers.py), and the record writer refuses what a reader would refuse (simulator/record/folder.py).

The battery (tests/support/hostile_inputs.py) holds new variants of each input class: recursive aliases
through merge keys, flow style and keys; breadth and merge-key bombs; Python tags; numbers of thousands of
digits; NaN, Infinity and 1e999 in JSON; repeated keys; UTF-16 with and without a BOM; NUL bytes; CSV cells
past csv's field limit, unclosed quotes, the wrong separator, formulas and escapes in cells; and a FIFO, a
folder, a link loop, /dev/zero, /dev/null, a socket and /proc/kmsg wherever a path is accepted. Each is run
through the CLI: refused with an `error:` line naming its file, exit 2, no traceback, no Python exception text;
a UTF-8 BOM or CRLF line ends are read as they are.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.errors import UserError
from simulator.jsonbounds import JSONRefused, loads_bounded, text_depth
from simulator.readers import InputRefused, read_csv, read_text, safe_cell, text_lines, unquote_cell, write_sheet
from simulator.record.folder import MAX_RECORD_DEPTH, RunFolder, dump_line
from simulator.record.manifest import Manifest, RoleModels
from simulator.record.models import ConversationRecord, Verdict
from tests.support.hostile_inputs import JSONL_OK, Case, build_cases, verdict

CLASSES = [1, 2, 3, 6, 7, 8, 10]


@pytest.fixture(scope="module")
def battery(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    root = tmp_path_factory.mktemp("hostile")
    source = root / "one.jsonl"
    source.write_text(json.dumps(JSONL_OK) + "\n")

    def make_run(path: Path) -> None:
        assert main(["import", str(source), "--out", str(path), "--no-redact"]) == 0

    return build_cases(root, make_run)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("klass", CLASSES)
def test_each_hostile_input_is_one_clear_refusal(
    battery: list[Case], klass: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every case of one input class, through the CLI in process; the failures are listed together."""
    cases = [case for case in battery if case.klass == klass]
    assert len(cases) >= 3  # several inputs per class
    failures = []
    for case in cases:
        capsys.readouterr()
        code = main(case.argv)
        err = capsys.readouterr().err
        wrong = verdict(case, code, err)
        if wrong:
            failures.append(f"{case.name}: {wrong}: {err.strip()[-200:]}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[NaN]", "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ("[-Infinity]", "-Infinity"),
        ("[1e999]", "too large for a float"),
        ("[-1e400]", "too large for a float"),
        ("[" + "1" * 700 + "]", "digits"),
        ('{"a": 1, "a": 2}', 'repeats the key "a"'),
        ('{"x": {"k": [], "k": {}}}', 'repeats the key "k"'),
        ("[" * 70 + "]" * 70, "nested more than"),
        (b"\xff\xfe[\x001\x00]\x00", "not UTF-8"),
    ],
)
def test_the_json_door_refuses_what_python_would_take(text: str | bytes, says: str) -> None:
    with pytest.raises(JSONRefused) as caught:
        loads_bounded(text, "the body")
    assert says in str(caught.value) and str(caught.value).startswith("the body")
    assert "\n" not in str(caught.value) and "Error" not in str(caught.value)


@pytest.mark.parametrize("text", ['\ufeff{"a": 1}', '{"a": 1.5e10, "b": -0.0, "c": 12345678901234567890}'])
def test_the_json_door_still_reads_ordinary_json(text: str) -> None:
    assert isinstance(loads_bounded(text, "the body"), dict)


@pytest.mark.parametrize(
    ("data", "says", "line"),
    [
        ("a: 1\n".encode("utf-16"), "UTF-16", None),
        ("a: 1\n".encode("utf-16-le"), "NUL bytes", 1),
        (b"ok\nok\ncaf\xe9\n", "not UTF-8", 3),
        (b"ok\n\x00", "NUL bytes", 2),
    ],
)
def test_text_that_is_not_utf8_is_named_with_its_line(tmp_path: Path, data: bytes, says: str, line: int | None) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    with pytest.raises(InputRefused) as caught:
        read_text(path, 1000)
    assert says in str(caught.value) and caught.value.problem.line == line
    assert caught.value.problem.file == str(path)


def test_a_utf8_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"\xef\xbb\xbfid: x\n")
    assert read_text(path, 1000) == "id: x\n"
    assert list(text_lines(path)) == [(1, "id: x\n")]


@pytest.mark.parametrize(
    "kind", ["fifo", "folder", "loop", "missing", "socket"]
)
def test_every_reader_says_what_a_path_is(tmp_path: Path, kind: str) -> None:
    import socket

    path = tmp_path / "x"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(tmp_path / "y")
        (tmp_path / "y").symlink_to(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    expected = {"fifo": "FIFO", "folder": "a folder", "loop": "link loop", "missing": "no such file", "socket": "socket"}
    for read in (lambda: read_text(path, 100), lambda: list(text_lines(path)), lambda: read_csv(path)):
        with pytest.raises(InputRefused) as caught:
            read()
        assert expected[kind] in str(caught.value) and str(caught.value).startswith(str(path))


@pytest.mark.parametrize(
    ("sheet", "says", "line"),
    [
        ("a;b;c\n1;2;3\n", "separated by semicolons", 1),
        ("a\tb\tc\n1\t2\t3\n", "separated by tabs", 1),
        ('a,b\n1,"2\n3,4\n', "quote opened and never closed", 2),
        ('a,b\n1,2\n3,"4"x\n', "stray quote", 3),
        ("a,b\n" + "1," + "x" * 300_000 + "\n", None, None),  # past csv's 128 KB field limit: read
    ],
)
def test_csv_sheets(tmp_path: Path, sheet: str, says: str | None, line: int | None) -> None:
    path = tmp_path / "s.csv"
    path.write_text(sheet)
    if says is None:
        assert len(read_csv(path).rows[0][1][1]) == 300_000
        return
    with pytest.raises(InputRefused) as caught:
        read_csv(path)
    assert says in str(caught.value) and caught.value.problem.line == line


@pytest.mark.parametrize("cell", ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "plain", "c1#0", ""])
def test_sheets_simulator_writes_never_hold_a_formula(tmp_path: Path, cell: str) -> None:
    path = tmp_path / "labels.csv"
    write_sheet(path, ["conversation_id", "notes"], [[cell, cell]])
    written = path.read_text()
    assert not any(line.split(",")[0].startswith(("=", "+", "-", "@")) for line in written.splitlines())
    sheet = read_csv(path)
    assert [unquote_cell(c) for c in sheet.rows[0][1]] == [cell, cell] if cell else sheet.rows == []
    assert safe_cell(cell).startswith("'") == cell.startswith(("=", "+", "-", "@", "\t"))


def _record(**update: object) -> ConversationRecord:
    now = datetime.now(UTC)
    base = ConversationRecord(
        id="s1#0", scenario_id="s1", repeat=0, stop_reason="user_done", turns=[], started_at=now, ended_at=now
    )
    return base.model_copy(update=update)


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {"leaf": 1}
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize(
    "update",
    [
        {"environment_state": _nested(MAX_RECORD_DEPTH + 10)},
        {"final_state": _nested(190)},  # under pydantic's limit, over the writer's: refused all the same
        {"environment_state": {"rows": [[[[[[[[]]]]]]]] * 10, "deep": _nested(300)}},
    ],
)
def test_the_writer_records_an_error_instead_of_a_line_readers_refuse(
    tmp_path: Path, update: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = RunFolder.create(tmp_path / "run", Manifest(run_id="run", created_at=datetime.now(UTC), models=RoleModels(user="u", bot="b")))
    folder.append_conversation(_record(**update))
    folder.append_conversation(_record(id="s1#1", repeat=1, final_state={"triage_level": "gp"}))
    assert "recorded as an error instead" in capsys.readouterr().err
    records = list(RunFolder.open(tmp_path / "run").conversations())
    assert [r.id for r in records] == ["s1#0", "s1#1"]
    assert records[0].error is not None and records[0].error.kind == "record_too_large"
    assert records[0].stop_reason == "error" and records[0].environment_state is None
    assert "levels deep" in records[0].error.message and records[1].error is None
    assert main(["report", str(tmp_path / "run")]) in (0, 1, 3)
    assert "not a file simulator wrote" not in capsys.readouterr().err


def test_a_verdict_too_deep_to_read_is_written_as_an_error(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path / "run", Manifest(run_id="run", created_at=datetime.now(UTC), models=RoleModels(user="u", bot="b")))
    verdict_ = Verdict(
        conversation_id="s1#0", scenario_id="s1", repeat=0, criterion_id="c", kind="code", result="pass",
        actual=_nested(200),
    )  # fmt: skip
    folder.append_verdicts([verdict_])
    [stored] = RunFolder.open(tmp_path / "run").verdicts()
    assert stored.result == "error" and stored.actual is None and stored.error is not None


@pytest.mark.parametrize("depth", [1, 63, 64, 65, 127, 128, 129, 500])
def test_text_depth_agrees_with_the_parser(depth: int) -> None:
    text = json.dumps({"s": "[[[[{{{{ not nesting ]]", "v": json.loads("[" * depth + "]" * depth)})
    assert text_depth(text) == depth + 1 or (depth + 1 <= 64 and text_depth(text) <= 64)


def test_dump_line_refuses_a_record_nested_past_the_readers_limit() -> None:
    with pytest.raises(UserError) as caught:
        dump_line(_record(final_state=_nested(MAX_RECORD_DEPTH)))
    assert "levels deep" in str(caught.value) and "\n" not in str(caught.value)
