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
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.errors import UserError
from simulator.jsonbounds import JSONRefused, loads_bounded, text_depth
from simulator.readers import (
    InputRefused,
    read_csv,
    read_text,
    safe_cell,
    text_lines,
    unquote_cell,
    write_sheet,
)
from simulator.record.folder import MAX_RECORD_DEPTH, RunFolder, dump_line
from simulator.record.manifest import Manifest, RoleModels
from simulator.record.models import ConversationRecord, Verdict
from tests.support.hostile_inputs import JSONL_OK, PYTHON_TEXT, Case, build_cases, verdict

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
def test_text_that_is_not_utf8_is_named_with_its_line(
    tmp_path: Path, data: bytes, says: str, line: int | None
) -> None:
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


@pytest.mark.parametrize("kind", ["fifo", "folder", "loop", "missing", "socket"])
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
    expected = {
        "fifo": "FIFO",
        "folder": "a folder",
        "loop": "link loop",
        "missing": "no such file",
        "socket": "socket",
    }
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


@pytest.mark.parametrize(
    "cell", ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "plain", "c1#0", ""]
)
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
    folder = RunFolder.create(
        tmp_path / "run",
        Manifest(run_id="run", created_at=datetime.now(UTC), models=RoleModels(user="u", bot="b")),
    )
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
    folder = RunFolder.create(
        tmp_path / "run",
        Manifest(run_id="run", created_at=datetime.now(UTC), models=RoleModels(user="u", bot="b")),
    )
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


# --- an import file: a cap on the whole file, not only on each line ------------------------------------------

_CAP = 4000  # MAX_IMPORT_BYTES for these tests: the size is patched, the reading path is the real one


def _jsonl_lines(count: int) -> str:
    return "".join(json.dumps({**JSONL_OK, "conversation_id": f"c{i}"}) + "\n" for i in range(count))


def _over_the_cap(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / ("t.csv" if kind == "csv" else "t.jsonl")
    if kind == "many lines":
        path.write_text(_jsonl_lines(60))
    elif kind == "one long line":  # under the 256 MB line cap, over the file's
        path.write_text(json.dumps({**JSONL_OK, "note": "x" * (2 * _CAP)}) + "\n")
    elif kind == "blank lines":  # nothing to import, still read: they count too
        path.write_text(_jsonl_lines(1) + "\n" * (2 * _CAP))
    elif kind == "csv":
        path.write_text("conversation_id,role,content\n" + "c1,user,hello there\n" * 400)
    elif kind == "fifo":
        os.mkfifo(path)
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["many lines", "one long line", "blank lines", "csv", "fifo"])
def test_an_import_over_the_files_cap_is_refused_naming_the_file(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import simulator.traces.plain

    monkeypatch.setattr(simulator.traces.plain, "MAX_IMPORT_BYTES", _CAP)
    source = _over_the_cap(tmp_path, kind)
    out = tmp_path / "runs" / "real"
    assert main(["import", str(source), "--out", str(out), "--no-redact"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {source}") and err.count("\n") == 1, err
    assert "Traceback" not in err and "Error" not in err.replace("error:", "")
    if kind == "fifo":
        assert "FIFO" in err
    else:
        assert f"larger than {_CAP / 1e6:g} MB" in err and "split" in err, err
    assert not out.exists()  # refused before anything is written


def test_an_import_under_the_cap_still_reads_every_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simulator.traces.plain

    monkeypatch.setattr(simulator.traces.plain, "MAX_IMPORT_BYTES", _CAP)
    source = tmp_path / "t.jsonl"
    source.write_text(_jsonl_lines(20))
    assert source.stat().st_size < _CAP
    assert main(["import", str(source), "--out", str(tmp_path / "real"), "--no-redact"]) == 0
    assert len(list(RunFolder.open(tmp_path / "real").conversations())) == 20


@pytest.mark.parametrize(
    ("read_first", "grown_by"),
    [
        (1, _jsonl_lines(30)),  # many lines after the first was read
        (1, json.dumps({**JSONL_OK, "note": "x" * 5000}) + "\n"),  # one long line, under the line cap
        (10, _jsonl_lines(5)),  # every line read but nothing after: the growth is what is over
    ],
)
def test_the_line_reader_counts_a_file_that_grows_while_it_is_read(
    tmp_path: Path, read_first: int, grown_by: str
) -> None:
    """The cap is counted on the bytes read, never taken from the size the file gave when it was opened
    (under the cap then)."""
    path = tmp_path / "growing.jsonl"
    path.write_text(_jsonl_lines(10))
    lines = text_lines(path, max_total=path.stat().st_size + 100, advice="split it")
    assert [next(lines)[0] for _ in range(read_first)] == list(range(1, read_first + 1))
    with path.open("a") as more:
        more.write(grown_by)
    with pytest.raises(InputRefused) as caught:
        list(lines)
    said = str(caught.value)
    assert said.startswith(f"{path}:") and "larger than" in said and said.endswith("split it"), said


# --- protobuf: the collector's door --------------------------------------------------------------------


def _any_value_nested(depth: int) -> bytes:
    """An OTLP AnyValue nested `depth` levels through array values, as raw protobuf bytes."""
    body = b""
    for _ in range(depth):
        inner = b"\x0a" + _varint(len(body)) + body  # ArrayValue.values (field 1)
        body = b"\x2a" + _varint(len(inner)) + inner  # AnyValue.array_value (field 5)
    return body


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


@pytest.mark.parametrize(
    "body",
    [
        b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # a length varint of eleven bytes
        b"\x0a\x80",  # a varint cut short
        b"\x0a\x10" + b"\x00" * 3,  # a length past the end
        b"\x0f",  # wire type 7 does not exist
        b"\x0a\x05\x0a\x03\x0a\x01",  # nested messages cut short
    ],
)
def test_protobuf_that_is_not_a_message_is_one_400(body: bytes) -> None:
    from simulator.collect.decode import PROTOBUF, BodyError, decode_request

    with pytest.raises(BodyError) as caught:
        decode_request(body, PROTOBUF, "", "traces", 10_000_000)
    assert caught.value.status == 400 and "protobuf message" in str(caught.value)
    assert "Error" not in str(caught.value) and "\n" not in str(caught.value)


def test_protobuf_nested_past_its_limit_is_refused_and_a_shallow_one_read() -> None:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    from simulator.readers import parse_protobuf

    assert parse_protobuf(_any_value_nested(20), AnyValue(), "v", 10**6).HasField("array_value")
    with pytest.raises(InputRefused) as caught:
        parse_protobuf(_any_value_nested(5000), AnyValue(), "the value", 10**6)
    assert str(caught.value).startswith("the value: not a AnyValue protobuf message")
    with pytest.raises(InputRefused, match="larger than 10 bytes"):
        parse_protobuf(b"\x00" * 11, AnyValue(), "the value", 10)


def test_a_huge_repeated_field_is_bounded_by_the_body_limit() -> None:
    from simulator.collect.decode import PROTOBUF, BodyError, decode_request

    one = b"\x0a\x00"  # an empty ResourceSpans, repeated
    assert decode_request(one * 1000, PROTOBUF, "", "traces", 10_000)["resourceSpans"]
    with pytest.raises(BodyError):
        import gzip

        decode_request(gzip.compress(one * 2_000_000), PROTOBUF, "gzip", "traces", 1_000_000)


# --- the desk's editor ----------------------------------------------------------------------------------

DESK_DRAFTS = {
    "a number of 5000 digits": "id: asks-age\ncriterion: c\nseverity: " + "9" * 5000 + "\n",
    "a timestamp of month 99": "id: asks-age\ncriterion: !!timestamp 2024-99-01\n",
    "a python tag": "id: asks-age\ncriterion: !!python/object/apply:os.system ['id']\n",
    "a merge key of itself in flow style": "id: asks-age\ncriterion: c\nx: &x {a: 1, <<: *x}\n",
    "a breadth bomb": "a: &a [" + ", ".join(["x"] * 2000) + "]\nb: [" + ", ".join(["*a"] * 2000) + "]\n",
    "a NUL": "id: asks-age\ncriterion: c\x00\n",
}


@pytest.mark.timeout(120)
def test_the_desk_editor_answers_each_hostile_draft_with_its_problem(tmp_path: Path) -> None:
    from tests.desk_support import csrf, desk_client, make_desk_folders

    client = desk_client(make_desk_folders(tmp_path))
    for name, text in DESK_DRAFTS.items():
        response = client.post(
            "/edit/validate",
            json={"area": "judges", "path": "asks-age.yaml", "text": text},
            headers={"X-CSRF-Token": csrf(client)},
        )
        assert response.status_code in (200, 400), (name, response.text[:300])
        shown = response.text
        assert "Traceback" not in shown and "ValueError" not in shown, (name, shown[:300])
        if response.status_code == 200:
            assert response.json()["problems"], name


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "/proc/kmsg", "folder"])
def test_the_desk_editor_never_waits_on_a_file_that_is_not_one(tmp_path: Path, kind: str) -> None:
    from tests.desk_support import desk_client, make_desk_folders

    folders = make_desk_folders(tmp_path)
    target = folders.judges / "odd.yaml"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        if not Path(kind).exists():
            pytest.skip(f"{kind} is not on this machine")
        target.symlink_to(kind)
    client = desk_client(folders)
    response = client.get("/edit/judges/odd.yaml")
    assert response.status_code >= 400 and "odd.yaml" in response.text
    assert "Traceback" not in response.text
    assert client.get("/edit").status_code == 200  # the listing and other files still answer


# --- the desk's request bodies: one cap, counted while they arrive -------------------------------------------

_DESK_CAP = 50_000  # `serve --max-body` for these tests


def _desk_bodies(token: str) -> dict[str, dict[str, Any]]:
    """httpx request arguments, each a body over the cap, by how it is sent."""
    big = "a" * (3 * _DESK_CAP)
    form = {"X-CSRF-Token": token, "Content-Type": "application/x-www-form-urlencoded"}

    def chunks() -> Iterator[bytes]:
        for _ in range(30):
            yield b"note=" + b"a" * (_DESK_CAP // 10)

    return {
        "an urlencoded form": {"url": "/label", "data": {"csrf": token, "note": big}},
        "a multipart form": {
            "url": "/label",
            "data": {"csrf": token},
            "files": {"upload": ("big.txt", big.encode(), "text/plain")},
            "headers": {"X-CSRF-Token": token},
        },
        "a JSON body": {
            "url": "/edit/validate",
            "json": {"area": "judges", "path": "asks-age.yaml", "text": big},
            "headers": {"X-CSRF-Token": token},
        },
        "chunks with no length": {"url": "/label", "content": chunks(), "headers": form},
        "a length smaller than the body": {
            "url": "/label",
            "content": big.encode(),
            "headers": {**form, "Content-Length": "100"},
        },
        "a length larger than the cap": {
            "url": "/label",
            "content": b"note=short",
            "headers": {**form, "Content-Length": str(10 * _DESK_CAP)},
        },
    }


def _is_the_desks_413(response: Any) -> bool:
    text = response.text
    return (
        response.status_code == 413
        and f"{_DESK_CAP:,} bytes" in text
        and "--max-body" in text
        and "\n" not in text.strip()
    )


@pytest.mark.timeout(120)
def test_every_body_the_desk_reads_is_capped_while_it_arrives(tmp_path: Path) -> None:
    """Through the ASGI app (Starlette's TestClient hands it the body as sent, whatever the header says)."""
    from tests.desk_support import csrf, desk_client, make_desk_folders

    client = desk_client(make_desk_folders(tmp_path), max_body=_DESK_CAP)
    token = csrf(client)
    for name, request in _desk_bodies(token).items():
        if "chunks" in name:
            assert "content-length" not in client.build_request("POST", **request).headers
        response = client.post(**request)
        assert _is_the_desks_413(response), (name, response.status_code, response.text[:300])
    # Under the cap the same requests are read: a label form, a draft to validate.
    ok = client.post("/label", data={"csrf": token, "note": "a" * (_DESK_CAP // 2)})
    assert ok.status_code not in (403, 413) and "larger than" not in ok.text, ok.text[:300]
    draft = {"area": "judges", "path": "asks-age.yaml", "text": "id: x\n" + "#" * (_DESK_CAP // 3)}
    assert client.post("/edit/validate", json=draft, headers={"X-CSRF-Token": token}).status_code == 200


@pytest.mark.timeout(120)
def test_a_form_under_the_cap_is_read_whatever_its_parts(tmp_path: Path) -> None:
    """python-multipart's own limits (1 MB a part, 1,000 fields) answer with its own text: under the desk's
    cap a long field is read, and a form of too many fields is the desk's one-line error."""
    from simulator.serve.config import MAX_BODY_BYTES
    from tests.desk_support import csrf, desk_client, make_desk_folders

    client = desk_client(make_desk_folders(tmp_path))
    token = csrf(client)
    long_field = "a" * (MAX_BODY_BYTES * 3 // 4)  # over python-multipart's 1 MB a part
    sent = {
        "urlencoded, one long field": {"data": {"csrf": token, "note": long_field}},
        "multipart, one long field": {
            "data": {"csrf": token, "note": long_field},
            "files": {"f": ("x.txt", b"y", "text/plain")},
        },
        "multipart, a long file": {"data": {"csrf": token}, "files": {"f": ("x.txt", long_field.encode())}},
    }
    for name, request in sent.items():
        response = client.post("/label", headers={"X-CSRF-Token": token}, **request)
        assert "exceeded" not in response.text and "larger than" not in response.text, name
        assert "give your name as labeller" in response.text, (
            name,
            response.text[-400:],
        )  # read, then checked
    many = {"csrf": token, **{f"f{i}": "x" for i in range(1500)}}
    response = client.post("/label", data=many, headers={"X-CSRF-Token": token})
    assert response.status_code == 400 and "more than 1,000 fields" in response.text, response.text[-400:]
    assert "Too many" not in response.text


@pytest.mark.timeout(120)
def test_the_served_desk_caps_bodies_on_the_wire(tmp_path: Path) -> None:
    """Over real HTTP (uvicorn, as `simulator serve` runs it, and httpx): the same bodies are refused, and a
    length smaller than what follows never lets the rest in as body (the server reads the declared length,
    the rest is no request at all), while the desk keeps answering."""
    import socket
    from urllib.parse import urlsplit

    import httpx

    from simulator.serve import create_app
    from tests.browser_support import live_server
    from tests.desk_support import make_desk_folders

    app = create_app(make_desk_folders(tmp_path).config(max_body=_DESK_CAP))
    with live_server(app) as base, httpx.Client(base_url=base, timeout=30) as client:
        client.get("/")
        token = client.cookies["desk_csrf"]
        for name, request in _desk_bodies(token).items():
            if "length" in name and "chunks" not in name:
                continue  # httpx will not send a length that lies; a raw socket does, below
            response = client.post(**request)
            assert _is_the_desks_413(response), (name, response.status_code, response.text[:300])
        address = urlsplit(base)
        with socket.create_connection((address.hostname, address.port), timeout=30) as raw:
            head = (
                f"POST /label HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                f"Content-Type: application/x-www-form-urlencoded\r\nX-CSRF-Token: {token}\r\n"
                f"Cookie: desk_csrf={token}\r\n\r\n"
            )
            raw.sendall(head.encode() + b"note=" + b"a" * (3 * _DESK_CAP))
            answer = raw.recv(65536).decode("latin-1")
        assert answer.startswith("HTTP/1.1 "), answer[:200]
        status = int(answer.split()[1])
        assert status < 500 and status != 413, answer[:300]  # read as the 100 bytes it declared
        assert client.get("/").status_code == 200


# --- bounded fuzz tests of the readers that had none ------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CSV_BYTES = st.lists(
    st.sampled_from([b'"', b",", b";", b"\t", b"\n", b"\r\n", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b"a", b"=1",
                     b"\xe9", b"conversation_id", b"label"]),
    max_size=60,
).map(b"".join)  # fmt: skip


@FUZZ
@given(CSV_BYTES)
def test_fuzz_the_csv_reader(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.csv"
        path.write_bytes(data)
        try:
            sheet = read_csv(path)
        except InputRefused as exc:
            assert str(exc).startswith(str(path)) and "\n" not in str(exc)
        else:
            assert all(line >= 2 for line, _ in sheet.rows)


@FUZZ
@given(st.binary(max_size=200) | CSV_BYTES)
def test_fuzz_the_line_reader(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "l.jsonl"
        path.write_bytes(data)
        try:
            lines = list(text_lines(path, max_line=64))
        except InputRefused as exc:
            assert str(exc).startswith(str(path)) and "\n" not in str(exc)
        else:
            assert all(text.strip() for _, text in lines)


@FUZZ
@given(st.binary(max_size=300))
def test_fuzz_the_protobuf_door(data: bytes) -> None:
    from simulator.collect.decode import PROTOBUF, BodyError, decode_request

    try:
        decode_request(data, PROTOBUF, "", "traces", 10_000)
    except BodyError as exc:
        assert exc.status == 400 and "\n" not in str(exc)


YAML_VALUES = st.sampled_from(
    ["!!int ", "!!float ", "!!timestamp ", "!!binary ", "!!bool ", "!!set ", "!!omap ", "!!str ", "9" * 700, "1e999",
     ".nan", "2024-13-45", "0x", "0o9", "[", "{", "&a ", "*a", "<<: *a", "? ", ": ", "\n  ", "- "]
)  # fmt: skip


@FUZZ
@given(st.lists(YAML_VALUES, max_size=12).map("".join))
def test_fuzz_yaml_values_the_constructor_cannot_build(text: str) -> None:
    from simulator.config.yamlfile import YAMLProblem, parse_yaml

    try:
        parse_yaml("a: " + text, Path("v.yaml"))
    except YAMLProblem as exc:
        assert str(exc).startswith("v.yaml") and "\n" not in str(exc)


@FUZZ
@given(st.text(max_size=120) | st.sampled_from(["[NaN]", '{"tasks": 1e999}', "[" + "7" * 5000 + "]"]))
def test_fuzz_json_files_people_name(text: str) -> None:
    """tau2's tasks.json and a safety-case document: read or refused in one line naming the file."""
    import tempfile

    from simulator.safety.archive import read_archived
    from simulator.tau2.tasks import read_tasks

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        for read in (read_tasks, read_archived):
            try:
                read(path)
            except UserError as exc:
                assert str(path) in str(exc) and "Traceback" not in exc.render()


# --- the Python API: the same readers, the same one-line UserError ------------------------------------------


def _not_a_file(root: Path, kind: str) -> Path:
    import socket

    path = root / "suite.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link loop":
        path.symlink_to(root / "other.yaml")
        (root / "other.yaml").symlink_to(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    elif kind == "recursive alias":
        path.write_text("name: t\nscenarios: &s {paths: [*s]}\n")
    elif kind == "5000-digit runs":
        path.write_text("name: t\nruns: " + "9" * 5000 + "\n")
    else:
        path.symlink_to(kind)
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "kind",
    ["fifo", "folder", "link loop", "socket", "/dev/zero", "/dev/null", "recursive alias", "5000-digit runs"],
)
def test_the_api_raises_one_user_error_for_a_suite_that_cannot_be_read(tmp_path: Path, kind: str) -> None:
    import simulator

    path = _not_a_file(tmp_path, kind)
    for call in (lambda: simulator.load_suite(path), lambda: simulator.run(str(path))):
        with pytest.raises(simulator.UserError) as caught:
            call()
        rendered = caught.value.render()
        assert str(path) in rendered and "Traceback" not in rendered
        assert "no such" not in rendered  # it is there: the error says what it is instead
        assert not PYTHON_TEXT.search(rendered), rendered


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "folder"])
def test_the_api_resume_refuses_a_run_folder_whose_records_are_not_files(tmp_path: Path, kind: str) -> None:
    import simulator

    run = tmp_path / "run"
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps(JSONL_OK) + "\n")
    assert main(["import", str(source), "--out", str(run), "--no-redact"]) == 0
    records = run / "conversations.jsonl"
    records.unlink()
    if kind == "fifo":
        os.mkfifo(records)
    elif kind == "folder":
        records.mkdir()
    else:
        records.symlink_to(kind)
    with pytest.raises(simulator.UserError) as caught:
        simulator.resume(run)
    assert "Traceback" not in caught.value.render() and not PYTHON_TEXT.search(caught.value.render())


@pytest.mark.parametrize("state_bytes", [60_000, 200_000])
def test_a_state_over_the_line_limit_is_an_error_not_an_unreadable_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], state_bytes: int
) -> None:
    """The issue's 300 MB environment state, scaled down: the readers' line limit is lowered for the test
    (writer and reader share it), a state past it is left out and the conversation recorded as an error."""
    import simulator.record.folder as folder_module

    monkeypatch.setattr(folder_module, "MAX_RECORD_BYTES", 50_000)
    folder = RunFolder.create(
        tmp_path / "run",
        Manifest(run_id="run", created_at=datetime.now(UTC), models=RoleModels(user="u", bot="b")),
    )
    folder.append_conversation(_record(environment_state={"rows": ["x" * 1000] * (state_bytes // 1000)}))
    [stored] = RunFolder.open(tmp_path / "run").conversations()
    assert stored.environment_state is None and stored.error is not None
    assert "MB a reader takes" in stored.error.message and stored.error.kind == "record_too_large"
    assert "recorded as an error instead" in capsys.readouterr().err
