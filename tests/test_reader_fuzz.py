"""Issue 43, item 7: a bounded fuzz test per reader. Each reader of structured input (YAML files and the
desk's drafts, scenario files, golden and label CSVs, run-folder JSONL, imported JSONL and CSV transcripts,
people's names, redaction) is given random and structure-shaped input: it returns, or refuses with the
project's one-line error (UserError / YAMLProblem / JSONRefused); never another exception, never a hang.
Bounded in examples and per-example time so CI stays fast (the JSON and OTLP readers' fuzz tests are in
tests/test_deep_json.py and tests/test_traces_malformed.py)."""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.config.golden import read_csv as read_golden_csv
from simulator.config.loading import load_scenarios
from simulator.config.yamlfile import YAMLProblem, parse_yaml
from simulator.errors import UserError
from simulator.names import person_name
from simulator.record.folder import read_jsonl
from simulator.record.label_sheet import read_labels
from simulator.record.models import ConversationRecord
from simulator.record.redact import contains_secret, forget_secrets, redact, register_secrets
from simulator.serve.drafts import validate_draft
from simulator.traces.mapping import Mapping
from simulator.traces.plain import read_csv as read_transcript_csv
from simulator.traces.plain import read_jsonl as read_transcript_jsonl

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# YAML-shaped text: anchors, aliases, merge keys, flow collections, tags, indentation.
YAML_TOKENS = st.sampled_from(
    ["id: a", "persona: p", "goal: g", "facts:", "  - ", "&a ", "*a", "<<: *a", "[", "]", "{", "}", ": ", "- ",
     "\n", "  ", "!!python/object ", "? ", "'", '"', "#", "max_turns: 3", "expected: ", "&b [*a, *a]", "*b", "\t"]
)  # fmt: skip
YAML_TEXT = st.lists(YAML_TOKENS, max_size=40).map("".join) | st.text(max_size=300)
CSV_TEXT = st.lists(
    st.sampled_from(
        ['"', ",", "\n", "item_id", "label", "pass", "conversation_id", "a", "\r", "\x00", ";", "é"]
    ),
    max_size=60,
).map("".join) | st.text(max_size=300)
JSONL_TEXT = st.lists(
    st.sampled_from(['{"', '"}', "[", "]", ":", ",", "\n", '"id"', '"turns"', "1e999", "null", '"\\ud800"',
                     '{"schema_version": 4}', "[[[[[[[[", "]]]]]]]]"]),
    max_size=60,
).map("".join) | st.text(max_size=300)  # fmt: skip


def _timed(call: object) -> float:
    start = time.monotonic()
    call()  # type: ignore[operator]
    return time.monotonic() - start


@FUZZ
@given(YAML_TEXT)
def test_fuzz_the_yaml_parser(text: str) -> None:
    def read() -> None:
        try:
            parse_yaml(text, Path("fuzz.yaml"))
        except YAMLProblem as exc:
            assert str(exc).startswith("fuzz.yaml")

    assert _timed(read) < 5


@FUZZ
@given(YAML_TEXT)
def test_fuzz_scenario_files(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            load_scenarios([path])
        except UserError as exc:
            assert "Traceback" not in exc.render()


@FUZZ
@given(YAML_TEXT)
def test_fuzz_the_desks_drafts(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        kind, problems = validate_draft(root, root / "new.yaml", text, "new.yaml")
        assert kind in ("scenario", "criterion", "suite")
        assert all(p.file == "new.yaml" for p in problems)


@FUZZ
@given(CSV_TEXT)
def test_fuzz_golden_and_label_csvs(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "items.csv"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        for read in (read_golden_csv, read_labels):
            with contextlib.suppress(UserError):
                read(path)


@FUZZ
@given(JSONL_TEXT)
def test_fuzz_run_folder_jsonl(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "conversations.jsonl"
        path.write_bytes(text.encode("utf-8", "surrogatepass") + b"\n")
        with contextlib.suppress(UserError):
            list(read_jsonl(path, ConversationRecord))


@FUZZ
@given(JSONL_TEXT, CSV_TEXT)
def test_fuzz_imported_transcripts(jsonl: str, csv: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        lines, rows = Path(folder) / "t.jsonl", Path(folder) / "t.csv"
        lines.write_bytes(jsonl.encode("utf-8", "surrogatepass") + b"\n")
        rows.write_bytes(csv.encode("utf-8", "surrogatepass"))
        for read, path in ((read_transcript_jsonl, lines), (read_transcript_csv, rows)):
            with contextlib.suppress(UserError):  # never UnicodeDecodeError: the bounded reader names it
                read(path, Mapping())


@FUZZ
@given(st.text(max_size=80))
def test_fuzz_person_names(text: str) -> None:
    try:
        name = person_name(text, "--by")
    except UserError as exc:
        assert "\n" not in str(exc) and "\x1b" not in str(exc)
    else:
        assert name and name == " ".join(name.split())


@FUZZ
@given(st.text(max_size=200), st.sampled_from(["tok-9f8e7d6c5b4a", "s3cr3t-value-xyz"]))
def test_fuzz_redaction_never_raises_and_leaves_no_secret(text: str, secret: str) -> None:
    forget_secrets()
    register_secrets([secret])
    try:
        out = redact(f"{text}{secret}{text}")
        assert (secret not in out and not contains_secret(out)) or contains_secret(text)
    finally:
        forget_secrets()
