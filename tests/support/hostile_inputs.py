"""Hostile inputs for every structured-input reader (issue 43, round four): new variants of each input class,
built into a folder and run through the CLI, by tests/test_hostile_readers.py (in process) and by
bench/hostile_readers.py (each case a real `python -m simulator` child under a 20 s timeout, to count).

A case is refused (exit 2, an `error:` line naming its file, no traceback, no Python exception text, no raw
terminal escape) or, for the benign variants (a UTF-8 BOM, CRLF line ends), accepted (exit 0).
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SCENARIO = "id: s1\npersona: p\ngoal: g\nfacts: [a fact]\n"
JSONL_OK = {
    "conversation_id": "c1",
    "messages": [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi, how can I help?"},
    ],
}
HAZARDS = (
    "title: t\nsystem: {name: n, version: '1', intended_use: u}\nowner: o\nmatrix: dcb0129\n"
    "hazards:\n  - id: HAZ-01\n    title: t\n    cause: c\n    effect: e\n    harm: h\n"
    "    severity: major\n    likelihood: low\n    controls: []\n"
)
SUITE = (
    "name: t\nscenarios: {paths: ['.']}\nbot: {type: http, url: http://127.0.0.1:9/chat}\nuser: {model: offline}\n"
    "outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}\n"
)
# Python's own exception names and messages: never what a person is told.
PYTHON_TEXT = re.compile(
    r"Traceback|\b(?:[A-Z][a-z]+)+(?:Error|Exception)\b|codec can't|Expecting (?:value|property)|"
    r"sys\.set_int_max_str_digits|object has no attribute|unhashable type|validation errors? for"
)


@dataclass
class Case:
    name: str
    klass: int  # the input class (1 aliases ... 10 escapes)
    argv: list[str]
    named: str  # what the error line must name (a file or a flag)
    accept: bool = False  # a benign variant: exit 0


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _special(root: Path) -> dict[str, Path]:
    """Things that are not regular files, each where a file path is expected."""
    special = root / "special"
    special.mkdir()
    found: dict[str, Path] = {}
    os.mkfifo(special / "fifo")
    found["fifo"] = special / "fifo"
    (special / "folder").mkdir()
    found["folder"] = special / "folder"
    (special / "loop-a").symlink_to(special / "loop-b")
    (special / "loop-b").symlink_to(special / "loop-a")
    found["link loop"] = special / "loop-a"
    (special / "zero").symlink_to("/dev/zero")
    found["/dev/zero"] = special / "zero"
    (special / "null").symlink_to("/dev/null")
    found["/dev/null"] = special / "null"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(special / "sock"))
    sock.close()  # the socket file stays: nothing answers behind it
    found["socket"] = special / "sock"
    if Path("/proc/kmsg").exists():
        (special / "kmsg").symlink_to("/proc/kmsg")
        found["/proc/kmsg"] = special / "kmsg"
    return found


def _write(root: Path, name: str, data: str | bytes) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode("utf-8", "surrogatepass"))
    else:
        path.write_bytes(data)
    return path


def _yaml_cases(root: Path) -> list[Case]:
    """Class 1 (recursive and exploding aliases) and the YAML variants of 6 and 7, through `validate`."""
    texts: dict[str, tuple[int, str | bytes]] = {
        "self alias in a flow list": (1, "id: s1\npersona: p\ngoal: g\nfacts: &f [a, *f]\n"),
        "self alias through a merge key": (1, "id: s1\npersona: p\ngoal: g\nexpected: &e {a: 1, <<: *e}\n"),
        "self alias as a mapping key": (1, "id: s1\npersona: p\ngoal: g\nexpected: {? &k [*k] : v}\n"),
        "self alias nested two deep": (1, "id: s1\npersona: p\ngoal: g\nexpected: &x {a: {b: [*x]}}\n"),
        "breadth bomb (1000 x 1000)": (
            1,
            "id: s1\npersona: p\ngoal: g\nexpected:\n  a: &a [" + ", ".join(["x"] * 1000) + "]\n"
            "  b: [" + ", ".join(["*a"] * 1000) + "]\n",
        ),
        "merge-key bomb": (
            1,
            "id: s1\npersona: p\ngoal: g\nexpected:\n  m0: &m0 {"
            + ", ".join(f"k{i}: {'v' * 200}" for i in range(50))
            + "}\n"
            + "".join(
                f"  m{i}: &m{i} {{{', '.join(f'x{j}: *m{i - 1}' for j in range(8))}}}\n" for i in range(1, 7)
            ),
        ),
        "python object tag": (6, "id: s1\npersona: !!python/object/apply:os.system ['echo hi']\ngoal: g\n"),
        "python name tag": (6, "id: s1\npersona: !!python/name:os.system\ngoal: g\n"),
        "integer of 5000 digits": (6, "id: s1\npersona: p\ngoal: g\nmax_turns: " + "9" * 5000 + "\n"),
        "tagged integer of 5000 digits": (
            6,
            "id: s1\npersona: p\ngoal: g\nmax_turns: !!int " + "9" * 5000 + "\n",
        ),
        "float that overflows": (7, "id: s1\npersona: p\ngoal: g\nmax_turns: 1e999\n"),
        "NaN turns": (7, "id: s1\npersona: p\ngoal: g\nmax_turns: .nan\n"),
        "duplicate key in a flow mapping": (7, "{id: s1, id: s2, persona: p, goal: g}\n"),
        "two merge keys": (7, "base: &b {persona: p}\nid: s1\n<<: *b\n<<: *b\ngoal: g\n"),
        "UTF-16 with BOM": (6, "\ufeff" + SCENARIO),  # re-encoded below
        "UTF-16 without BOM": (6, SCENARIO),  # re-encoded below
        "NUL byte in a value": (6, "id: s1\npersona: p\x00q\ngoal: g\n"),
        "lone surrogate bytes": (6, b"id: s1\npersona: \xed\xa0\x80\ngoal: g\n"),
        "latin-1 byte": (6, b"id: s1\npersona: caf\xe9\ngoal: g\n"),
        "tab indentation": (7, "id: s1\npersona: p\ngoal: g\nfacts:\n\t- a\n"),
        "two documents": (7, SCENARIO + "---\n" + SCENARIO),
        "binary tag of garbage": (6, "id: s1\npersona: !!binary '@@@'\ngoal: g\n"),
        "set tag": (7, "id: s1\npersona: !!set {a, b}\ngoal: g\n"),
        "timestamp tag of nonsense": (7, "id: s1\npersona: !!timestamp 2024-99-99\ngoal: g\n"),
        "deep flow nesting 10000": (3, "id: s1\npersona: p\ngoal: g\nexpected: " + _deep(10000) + "\n"),
    }
    cases: list[Case] = []
    for index, (name, (klass, text)) in enumerate(texts.items()):
        data: str | bytes = text
        if name == "UTF-16 with BOM":
            data = str(text).encode("utf-16")
        elif name == "UTF-16 without BOM":
            data = str(text).encode("utf-16-le")
        path = _write(root, f"yaml/{index:02d}.yaml", data)
        cases.append(Case(f"validate: {name}", klass, ["validate", str(path)], str(path)))
    for name, text in (
        ("an escape in an unknown key", SCENARIO + "\x1b[31mbad\x1b[0m: 1\n"),
        ("an escape in a value's type error", SCENARIO + 'max_turns: "\x1b]52;c;aGk=\x07"\n'),
    ):
        path = _write(root, f"yaml/escape-{len(cases)}.yaml", text)
        cases.append(Case(f"validate: {name}", 10, ["validate", str(path)], str(path)))
    named = _write(root, "yaml/\x1b]0;title\x07.yaml", "persona: [\n")
    cases.append(Case("validate: an escape in the file name", 10, ["validate", str(named)], "title"))
    for name, text in (
        ("UTF-8 BOM", "\ufeff" + SCENARIO),
        ("CRLF line ends", SCENARIO.replace("\n", "\r\n")),
    ):
        path = _write(root, f"yaml/ok-{name[:5].replace(' ', '')}/s1.yaml", text)
        cases.append(Case(f"validate: {name}", 7, ["validate", str(path)], str(path), accept=True))
    return cases


def _jsonl_cases(root: Path, out: Callable[[], str]) -> list[Case]:
    """JSON-lines and OTLP JSON imports: each file holds only a hostile record, so the import has nothing to
    write and must say why (naming file and line)."""
    otlp_span = {
        "traceId": "0" * 31 + "1",
        "spanId": "0" * 15 + "1",
        "name": "chat",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
    }

    def otlp(spans: list[dict[str, object]]) -> str:
        return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})

    ok = json.dumps(JSONL_OK)
    texts: dict[str, tuple[int, str | bytes]] = {
        "NaN in a record": (7, ok[:-1] + ', "score": NaN}\n'),
        "Infinity in a record": (7, ok[:-1] + ', "score": -Infinity}\n'),
        "float 1e999": (7, ok[:-1] + ', "score": 1e999}\n'),
        "integer of 5000 digits": (6, ok[:-1] + ', "n": ' + "7" * 5000 + "}\n"),
        "repeated key": (7, '{"conversation_id": "c1", "conversation_id": "c2", "messages": []}\n'),
        "deep array 100000": (3, '{"conversation_id": "c1", "x": ' + _deep(100000) + "}\n"),
        "deep object 3000": (
            3,
            '{"conversation_id": "c1", "x": ' + '{"a":' * 3000 + "1" + "}" * 3000 + "}\n",
        ),
        "UTF-16 JSONL": (6, ok.encode("utf-16")),
        "NUL inside a line": (6, ok[:20] + "\x00" + ok[20:] + "\n"),
        "OTLP: NaN attribute": (7, otlp([otlp_span])[:-4] + ', "x": NaN}]}]}\n'),
        "OTLP: 5000-digit start time": (
            2,
            otlp([{**otlp_span, "startTimeUnixNano": "9" * 5000}]).replace(
                '"' + "9" * 5000 + '"', "9" * 5000
            ),
        ),
        "OTLP: deep attribute value 100000": (
            3,
            otlp([otlp_span])[:-4] + ', "x": ' + _deep(100000) + "}]}]}\n",
        ),
        "OTLP: UTF-16": (6, (otlp([otlp_span]) + "\n").encode("utf-16")),
        "OTLP: repeated resourceSpans": (7, '{"resourceSpans": [], "resourceSpans": []}\n'),
        "OTLP: an attribute key that is a number": (
            2,
            otlp([{**otlp_span, "attributes": [{"key": 5, "value": {"stringValue": "x"}}]}]),
        ),
        "OTLP: a start time of 10^30 ns": (2, otlp([{**otlp_span, "startTimeUnixNano": "1" + "0" * 30}])),
        "OTLP: a start time as a float": (2, otlp([{**otlp_span, "startTimeUnixNano": 1.5e30}])),
        "OTLP: a negative end time": (2, otlp([{**otlp_span, "endTimeUnixNano": "-5"}])),
        "OTLP: a trace id that is not hex": (2, otlp([{**otlp_span, "traceId": "zz" * 16}])),
        "OTLP: attributes that are text": (2, otlp([{**otlp_span, "attributes": "gen_ai.system=x"}])),
        "OTLP: an intValue that is not a number": (
            2,
            otlp([{**otlp_span, "attributes": [{"key": "n", "value": {"intValue": "abc"}}]}]),
        ),
        "OTLP: an event at 10^40 ns": (
            2,
            otlp([{**otlp_span, "events": [{"name": "e", "timeUnixNano": "1" + "0" * 40}]}]),
        ),
        "escape in a record's time": (
            10,
            json.dumps(
                {
                    **JSONL_OK,
                    "messages": [{"role": "user", "content": "x", "timestamp": "\x1b[2J\x1b]0;t\x07"}],
                }
            ),
        ),
        "escape in the conversation id": (
            10,
            json.dumps({**JSONL_OK, "conversation_id": "\x1b[31mred", "messages": []}),
        ),
    }
    cases = []
    for index, (name, (klass, text)) in enumerate(texts.items()):
        suffix = ".json" if name.startswith("OTLP") else ".jsonl"
        path = _write(root, f"jsonl/{index:02d}{suffix}", text)
        cases.append(Case(f"import: {name}", klass, ["import", str(path), "--out", out()], str(path)))
    nothing = {
        "an empty file": "",
        "blank lines only": "\n\n   \n\r\n",
        "OTLP with no spans": '{"resourceSpans": []}\n',
        "a JSON array of nothing": "[]\n",
    }
    for index, (name, data) in enumerate(nothing.items()):
        path = _write(root, f"jsonl/nothing-{index}.jsonl", data)
        cases.append(Case(f"import: {name}", 7, ["import", str(path), "--out", out()], str(path)))
    empty_suite = root / "nothing" / "suite.yaml"
    empty_suite.mkdir(parents=True)
    cases.append(
        Case("validate: a folder named suite.yaml", 7, ["validate", str(empty_suite)], str(empty_suite))
    )
    for name, data in (("UTF-8 BOM", "\ufeff" + ok + "\n"), ("CRLF line ends", ok + "\r\n")):
        path = _write(root, f"jsonl/ok-{name[:5].replace(' ', '')}.jsonl", data)
        cases.append(
            Case(f"import: {name}", 7, ["import", str(path), "--out", out()], str(path), accept=True)
        )
    return cases


def _csv_cases(root: Path, run: Path) -> list[Case]:
    """Label sheets, imported CSV transcripts and golden CSVs."""
    header = "conversation_id,criterion_id,label,notes\n"
    sheets: dict[str, tuple[int, str | bytes]] = {
        "huge cell (60 MB)": (6, header + 'c1#0,crit,pass,"' + "x" * 60_000_000 + '"\n'),
        "NUL in a cell": (6, header + "c1#0,crit,pa\x00ss,\n"),
        "semicolon separated": (7, header.replace(",", ";") + "c1#0;crit;pass;\n"),
        "tab separated": (7, header.replace(",", "\t") + "c1#0\tcrit\tpass\t\n"),
        "unclosed quote": (7, header + 'c1#0,crit,"pass\n'),
        "UTF-16 (Excel 'Unicode text')": (6, (header + "c1#0,crit,pass,\n").encode("utf-16")),
        "formula in the label": (7, header + "c1#0,crit,=cmd|' /C calc'!A0,\n"),
        "escape in the label": (10, header + "c1#0,crit,\x1b]52;c;aGk=\x07pass,\n"),
        "header only, nothing labelled": (7, header),
    }
    cases = []
    long_note = header + 'c1#0,crit,pass,"' + "x" * 200_000 + '"\n'  # past csv's 128 KB field limit: a note
    for index, (name, (klass, text)) in enumerate([*sheets.items(), ("a note of 200 KB", (7, long_note))]):
        path = _write(root, f"csv/labels-{index:02d}.csv", text)
        argv = ["labels", "import", str(run), str(path), "--labeller", "Dr A"]
        cases.append(Case(f"labels import: {name}", klass, argv, str(path), accept="200 KB" in name))
    good = _write(root, "csv/labels-good.csv", header + "c1#0,crit,pass,\n")
    for name in ("\x1b]52;c;aGk=\x07", "Dr \x1b[2J A", "\x9b31m"):
        argv = ["labels", "import", str(run), str(good), "--labeller", name]
        cases.append(Case(f"labels import --labeller {name!r}", 10, argv, "--labeller"))
    golden_header = "item_id,intent,kind,user_message,reference,context\n"
    golden = {
        "context of 5000-digit number": (6, golden_header + 'g1,i,answer,hi,ref,"[' + "9" * 5000 + ']"\n'),
        "context nested 100000": (3, golden_header + 'g1,i,answer,hi,ref,"' + _deep(100000) + '"\n'),
        "context with NaN": (7, golden_header + 'g1,i,answer,hi,ref,"[NaN]"\n'),
        "semicolon separated golden": (7, golden_header.replace(",", ";") + "g1;i;answer;hi;ref;\n"),
    }
    for index, (name, (klass, text)) in enumerate(golden.items()):
        path = _write(root, f"csv/golden-{index:02d}.csv", text)
        cases.append(Case(f"validate golden: {name}", klass, ["validate", str(path)], str(path)))
    transcript = {
        "CSV transcript, 300 KB message": (
            6,
            "conversation_id,role,content\n" + 'c1,user,"' + "y" * 300_000 + '"\n',
        ),
        "CSV transcript, stray quote": (7, 'conversation_id,role,content\nc1,user,"hi\n'),
        "CSV transcript, NUL": (6, "conversation_id,role,content\nc1,user,h\x00i\n"),
    }
    for index, (name, (klass, text)) in enumerate(transcript.items()):
        path = _write(root, f"csv/transcript-{index:02d}.csv", text)
        out = str(root / "out" / f"csv-{index}")
        cases.append(Case(f"import: {name}", klass, ["import", str(path), "--out", out], str(path)))
    return cases


def _path_cases(root: Path, run: Path, out: Callable[[], str]) -> list[Case]:
    """Class 6 and 8: a FIFO, folder, link loop, device or socket wherever a file path is accepted."""
    special = _special(root)
    _write(root, "suite/s1.yaml", SCENARIO)
    suite = _write(root, "suite/suite.yaml", SUITE)
    commands: dict[str, Callable[[Path], list[str]]] = {
        "validate": lambda p: ["validate", str(p)],
        "safety-case --hazards": lambda p: ["safety-case", str(run), "--hazards", str(p)],
        "labels import": lambda p: ["labels", "import", str(run), str(p), "--labeller", "Dr A"],
        "calibrate": lambda p: ["calibrate", str(run), str(p)],
        "import": lambda p: ["import", str(p), "--out", out()],
        "import --format csv": lambda p: ["import", str(p), "--format", "csv", "--out", out()],
        "import --format jsonl": lambda p: ["import", str(p), "--format", "jsonl", "--out", out()],
        "import --mapping": lambda p: [
            "import",
            str(root / "jsonl" / "ok.jsonl"),
            "--mapping",
            str(p),
            "--out",
            out(),
        ],
        "import --redact": lambda p: [
            "import",
            str(root / "jsonl" / "ok.jsonl"),
            "--redact",
            str(p),
            "--out",
            out(),
        ],
        "vary": lambda p: ["vary", str(p), "--factors", "speaker=self,relative-speaks"],
        "draft --pathway": lambda p: ["draft", str(suite), "--pathway", str(p)],
        "coverage --hazards": lambda p: ["coverage", str(suite), "--hazards", str(p)],
        "coverage (suite)": lambda p: ["coverage", str(p), "--hazards", str(root / "ok" / "hazards.yaml")],
    }
    _write(root, "jsonl/ok.jsonl", json.dumps(JSONL_OK) + "\n")
    _write(root, "ok/hazards.yaml", HAZARDS)
    cases = []
    for command, argv in commands.items():
        for kind, path in special.items():
            cases.append(
                Case(f"{command}: {kind}", 8 if kind in ("folder", "link loop") else 6, argv(path), str(path))
            )
    return cases


def _run_folder_cases(root: Path, make_run: Callable[[Path], None]) -> list[Case]:
    """A run folder whose files are not what simulator wrote: `report` and `show` refuse them by name."""
    cases = []
    variants: dict[str, tuple[int, Callable[[Path], None]]] = {
        "conversations.jsonl is a FIFO": (6, lambda f: (f.unlink(), os.mkfifo(f))),
        "conversations.jsonl is a link to /dev/zero": (6, lambda f: (f.unlink(), f.symlink_to("/dev/zero"))),
        "conversations.jsonl is a folder": (8, lambda f: (f.unlink(), f.mkdir())),
        "conversations.jsonl is UTF-16": (6, lambda f: f.write_bytes(f.read_text().encode("utf-16"))),
        "conversations.jsonl has NaN": (
            7,
            lambda f: f.write_text(f.read_text().replace('"repeat":0', '"repeat":NaN')),
        ),
        "manifest.json is a FIFO": (
            6,
            lambda f: ((f.parent / "manifest.json").unlink(), os.mkfifo(f.parent / "manifest.json")),
        ),
        "manifest.json nested 100000": (3, lambda f: (f.parent / "manifest.json").write_text(_deep(100000))),
        "manifest.json with a 5000-digit number": (
            6,
            lambda f: (f.parent / "manifest.json").write_text('{"schema_version": ' + "9" * 5000 + "}"),
        ),
    }
    for index, (name, (klass, damage)) in enumerate(variants.items()):
        run = root / "runs" / f"damaged-{index:02d}"
        make_run(run)
        damage(run / "conversations.jsonl")
        for command in ("report", "show"):
            cases.append(Case(f"{command}: {name}", klass, [command, str(run)], str(run)))
    return cases


def build_cases(root: Path, make_run: Callable[[Path], None]) -> list[Case]:
    """Every hostile case, its files written under `root`. `make_run(path)` writes a small valid run folder
    (an import of one conversation)."""
    run = root / "runs" / "base"
    make_run(run)
    counter = iter(range(10_000))

    def out() -> str:
        return str(root / "out" / f"o{next(counter)}")

    return [
        *_yaml_cases(root),
        *_jsonl_cases(root, out),
        *_csv_cases(root, run),
        *_path_cases(root, run, out),
        *_run_folder_cases(root, make_run),
    ]


def verdict(case: Case, code: int | None, err: str) -> str | None:
    """What is wrong with one outcome, or None when it is right. `code` None: it did not finish in time."""
    if code is None:
        return "hang"
    if "Traceback" in err:
        return "traceback"
    if case.accept:
        return None if code == 0 else f"refused a benign file (exit {code})"
    if code == 0:
        return "silent acceptance (exit 0)"
    if "\x1b" in err or "\x07" in err:
        return "raw terminal escape"
    if PYTHON_TEXT.search(err):
        return f"python exception text: {PYTHON_TEXT.search(err).group(0)!r}"  # type: ignore[union-attr]
    if not err.startswith("error:"):
        return f"no error line (exit {code})"
    if case.named not in err and Path(case.named).name not in err:
        return "the error does not name the file"
    if "no such" in err and os.path.lexists(case.named):
        return "wrong hint: 'no such file' for something that is there"
    return None
