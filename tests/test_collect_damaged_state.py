"""The collector's state read back on a restart, damaged or edited by hand: a journal that is not a regular
file, or larger than its cap, is one line naming it and the fix (before, `Spool.load` read it whole with no
cap: a spool linked to /dev/zero never finished); a line that cannot be read back is skipped and counted,
as the journal's design says, never in silence (before: skipped and never said). The same for the judge
budget's ledger, the alerts firing and the signals the drift report and the alerts read."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from simulator.collect import spool as spool_module
from simulator.collect.alerts import Alerts
from simulator.collect.sampling import Budget, BudgetLimits
from simulator.collect.spool import CLOSED, SPOOL, Damaged, Marker
from simulator.collect.supervise import LOGGER, QUARANTINED, Quarantine
from simulator.collect.trends import FollowedFolders, load_observations
from simulator.errors import UserError
from simulator.record.manifest import SCHEMA_VERSION
from tests.collect_helpers import collector, genai_turns, records
from tests.traces_helpers import require

TURNS = [("my child has a fever", "How old is your child?"), ("she is 3", "How long has she had it?")]
T0 = datetime(2026, 12, 1, tzinfo=UTC)
# Lines a journal was never written with: not JSON, JSON of another shape, not UTF-8, nested past the parser.
NOT_JSON = {
    "not JSON": b"{not json",
    "null": b"null",
    "a list": b"[1, 2]",
    "a text": b'"span"',
    "not UTF-8": b'{"t": "\xff\xfe"}',
    "nested past the parser": b"[" * 100_000,
}
DAMAGED_SPANS = {
    **NOT_JSON,
    "an empty object": b"{}",
    "no span id": b'{"t": "a"}',
    "a time that is text": b'{"t": "a", "s": "b", "a": "noon"}',
    "a time past 64 bits": b'{"t": "a", "s": "b", "a": 18446744073709551616}',
    "attributes that are a list": b'{"t": "a", "s": "b", "at": [1]}',
    "an event that is a number": b'{"t": "a", "s": "b", "ev": [1]}',
}
DAMAGED_MARKERS = {
    **NOT_JSON,
    "an empty object": b"{}",
    "no refs": b'{"key": "k", "folder": "f", "scenario": "s"}',
    "a folder that is a number": b'{"key": "k", "folder": 1, "scenario": "s", "refs": []}',
    "refs that are a text": b'{"key": "k", "folder": "f", "scenario": "s", "refs": "ab"}',
    "a ref of numbers": b'{"key": "k", "folder": "f", "scenario": "s", "refs": [[1, 2]]}',
    "a ref of three": b'{"key": "k", "folder": "f", "scenario": "s", "refs": [["a", "b", "c"]]}',
}


@pytest.fixture
def said() -> Iterator[list[str]]:
    """What the collector says to its operator (its log), kept for the test."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler, level = Keep(), LOGGER.level
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    yield lines
    LOGGER.removeHandler(handler)
    LOGGER.setLevel(level)


def _document() -> dict[str, object]:
    require("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from simulator.traces.otlp_json import spans_to_json

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    genai_turns(provider, "kid", TURNS)
    return spans_to_json(memory.get_finished_spans())


def _open_conversation(out: Path) -> Path:
    """A collector stopped with one conversation open: its two spans are in the spool."""
    first = collector(out, idle_s=60)
    first.start()
    first.accept(_document())
    first.stop()
    return out / ".collect"


def _insert(path: Path, lines: list[bytes], at: int) -> None:
    """`lines` put into the file before its line `at` (1-based)."""
    kept = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*kept[: at - 1], *(line + b"\n" for line in lines), *kept[at - 1 :]]))


@pytest.mark.parametrize("damage", list(DAMAGED_SPANS))
def test_a_damaged_spool_line_is_skipped_counted_and_said(
    tmp_path: Path, said: list[str], damage: str
) -> None:
    state = _open_conversation(tmp_path / "live")
    _insert(state / SPOOL, [DAMAGED_SPANS[damage]], at=2)
    again = collector(tmp_path / "live", idle_s=60)
    again.start()
    assert again.counts["damaged_journal_lines"] == 1
    assert again.status()["health"]["damaged_journal_lines"] == 1
    note = next(line for line in said if SPOOL in line)
    assert f"{state / SPOOL}: skipped 1 damaged line (the first is line 2)" in note, note
    assert "the spans on them are lost" in note and "restore it from a copy" in note, note
    assert again.counts["reopened_spans"] == 2  # the good lines around it are read
    assert len((state / SPOOL).read_bytes().splitlines()) == 2  # and it is compacted away
    again.tick(everything=True)
    again.stop()
    (record,) = records(tmp_path / "live")
    assert [t.text for t in record.turns] == [m for pair in TURNS for m in pair]  # nothing lost


@pytest.mark.parametrize("damage", list(DAMAGED_MARKERS))
def test_a_damaged_marker_line_is_skipped_counted_and_said(
    tmp_path: Path, said: list[str], damage: str
) -> None:
    state = tmp_path / "live" / ".collect"
    state.mkdir(parents=True)
    kept = Marker("k1", QUARANTINED, "", [("trace", "span")])
    (state / CLOSED).write_bytes(DAMAGED_MARKERS[damage] + b"\n" + kept.line().encode())
    again = collector(tmp_path / "live")
    again.start()
    again.stop()
    assert again.counts["damaged_journal_lines"] == 1
    note = next(line for line in said if CLOSED in line)
    assert f"{state / CLOSED}: skipped 1 damaged line (the first is line 1)" in note, note
    assert "read as open, and may be written again" in note, note
    assert [m.key for m in again.recent] == ["k1"]  # the marker after it is read (and kept)


def test_every_damaged_line_is_counted_and_the_first_named(tmp_path: Path, said: list[str]) -> None:
    state = _open_conversation(tmp_path / "live")
    _insert(state / SPOOL, [DAMAGED_SPANS["not JSON"], DAMAGED_SPANS["not UTF-8"]], at=2)
    _insert(state / SPOOL, [DAMAGED_SPANS["no span id"]], at=5)
    again = collector(tmp_path / "live", idle_s=60)
    again.start()
    again.stop()
    assert again.counts["damaged_journal_lines"] == 3
    assert any("skipped 3 damaged lines (the first is line 2)" in line for line in said), said


def test_a_last_line_without_its_newline_is_not_damage(tmp_path: Path, said: list[str]) -> None:
    """A line cut by a crash was never acknowledged: skipped without a word, as before."""
    state = _open_conversation(tmp_path / "live")
    with (state / SPOOL).open("ab") as handle:
        handle.write(b'{"t": "cut by a cra')
    again = collector(tmp_path / "live", idle_s=60)
    again.start()
    again.stop()
    assert again.counts["damaged_journal_lines"] == 0 and not [line for line in said if "damaged" in line]
    assert again.counts["reopened_spans"] == 2


KINDS: dict[str, Callable[[Path], None]] = {
    "a link to /dev/zero": lambda path: path.symlink_to("/dev/zero"),
    "a FIFO": os.mkfifo,
    "a folder": lambda path: path.mkdir(),
    "a link that leads back to itself": lambda path: path.symlink_to(path.name),
}


@pytest.mark.parametrize("name", [SPOOL, CLOSED])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_journal_that_is_not_a_file_is_refused_by_name(tmp_path: Path, name: str, kind: str) -> None:
    state = tmp_path / "live" / ".collect"
    state.mkdir(parents=True)
    KINDS[kind](state / name)
    with pytest.raises(UserError) as refused:
        collector(tmp_path / "live").start()
    message = str(refused.value)
    assert message.startswith(f"{state / name}: ") and "\n" not in message, message


@pytest.mark.parametrize("name", [SPOOL, CLOSED])
def test_a_journal_over_its_cap_is_refused_naming_the_cap_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The cap is read from the module when the journal is read: a small one here, not a huge file (the
    reader counts while reading too: test_hostile_readers' file that grows)."""
    if name == SPOOL:
        state = _open_conversation(tmp_path / "live")
    else:
        state = tmp_path / "live" / ".collect"
        state.mkdir(parents=True)
        (state / CLOSED).write_text(Marker("k", QUARANTINED, "", [("t", "s")]).line() * 40)
    monkeypatch.setattr(spool_module, "MAX_JOURNAL_BYTES", (state / name).stat().st_size - 1)
    with pytest.raises(UserError) as refused:
        collector(tmp_path / "live").start()
    message = str(refused.value)
    assert message.startswith(f"{state / name}: ") and "larger than" in message, message
    assert "move it away to start with an empty journal" in message and "\n" not in message, message


def test_a_quarantine_linked_to_dev_zero_is_refused_not_read_for_ever(tmp_path: Path) -> None:
    (tmp_path / "quarantine.jsonl").symlink_to("/dev/zero")
    with pytest.raises(UserError, match=r"quarantine\.jsonl: a character device, not a regular file"):
        Quarantine(tmp_path).count()


# ---- the judge budget's ledger, the alerts firing, the signals -------------------------------------------

LEDGER_DAMAGE = {
    **NOT_JSON,
    "an empty object": b"{}",
    "calls that are text": b'{"day": "2026-12-01", "id": "x", "calls": "many", "dollars": 1}',
    "a day that is a list": b'{"day": [1], "id": "x", "calls": 1, "dollars": 1}',
}


@pytest.mark.parametrize("damage", list(LEDGER_DAMAGE))
def test_a_damaged_ledger_line_is_skipped_and_said_the_rest_counted(
    tmp_path: Path, said: list[str], damage: str
) -> None:
    ledger = tmp_path / "budget.jsonl"
    good = json.dumps({"day": "2026-12-01", "id": "c1", "calls": 3, "dollars": 0.5}).encode()
    ledger.write_bytes(b"\n".join([good, LEDGER_DAMAGE[damage], good.replace(b"c1", b"c2")]) + b"\n")
    budget = Budget(BudgetLimits(calls=10), ledger)
    assert budget.spent("2026-12-01").calls == 6
    assert any(f"{ledger}: skipped 1 damaged line (the first is line 2)" in line for line in said), said
    assert any("not counted against their day's budget" in line for line in said), said


@pytest.mark.parametrize(
    ("state", "firing"),
    [
        (b'["fail_rate(x) > 1%"]', {"fail_rate(x) > 1%"}),
        (b"", None),
        (b"{not json", None),
        (b'"fail_rate(x) > 1%"', None),
        (b"[1, 2]", None),
        (b'{"fail_rate(x) > 1%": true}', None),
        (b"[" * 100_000, None),
        (b"\xff\xfe", None),
    ],
)
def test_the_alerts_firing_are_read_back_or_said_and_sent_again(
    tmp_path: Path, said: list[str], state: bytes, firing: set[str] | None
) -> None:
    path = tmp_path / "alerts-firing.json"
    path.write_bytes(state)
    alerts = Alerts([], path)
    assert alerts.firing == (firing or set())
    if firing is None:
        assert any(str(path) in line and "sent again" in line for line in said), said
    else:
        assert not said


@pytest.mark.parametrize("kind", ["a link to /dev/zero", "a FIFO", "a folder"])
def test_alerts_firing_that_are_not_a_file_are_refused_by_name(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "alerts-firing.json"
    KINDS[kind](path)
    with pytest.raises(UserError) as refused:
        Alerts([], path)
    assert str(refused.value).startswith(f"{path}: ") and "not a regular file" in str(refused.value)


def _signals_folder(tmp_path: Path, lines: list[bytes]) -> Path:
    folder = tmp_path / "live" / "live-20261201-001"
    folder.mkdir(parents=True)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "kind": "imported",
        "run_id": folder.name,
        "created_at": T0.isoformat(),
        "models": {"user": "real", "bot": "b"},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "signals.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    return folder


def _signal(n: int) -> bytes:
    at = (T0 + timedelta(hours=n)).isoformat()
    return json.dumps({"conversation_id": f"c{n}#0", "started_at": at, "handover": False}).encode()


SIGNALS_DAMAGE = {
    **NOT_JSON,
    "an empty object": b"{}",
    "no conversation id": json.dumps({"started_at": T0.isoformat()}).encode(),
    "a time without its zone": json.dumps(
        {"conversation_id": "x", "started_at": "2026-12-01T05:00"}
    ).encode(),
    "a time that is a number": json.dumps({"conversation_id": "x", "started_at": 7}).encode(),
}


@pytest.mark.parametrize("followed", [False, True])
@pytest.mark.parametrize("damage", list(SIGNALS_DAMAGE))
def test_a_damaged_signals_line_is_left_out_of_the_rates_and_said(
    tmp_path: Path, said: list[str], damage: str, followed: bool
) -> None:
    """Before, a line without its conversation id was a KeyError in `simulator drift` and the alert loop,
    and a time without its zone a TypeError when sorted with the others."""
    folder = _signals_folder(tmp_path, [_signal(0), _signal(1), SIGNALS_DAMAGE[damage], _signal(2)])
    observations = load_observations([folder], followed=FollowedFolders() if followed else None)
    assert [o.conversation.rpartition("/")[2] for o in observations] == ["c0#0", "c1#0", "c2#0"]
    note = next(line for line in said if "signals.jsonl" in line)
    assert f"{folder / 'signals.jsonl'}: skipped 1 damaged line (the first is line 3)" in note, note
    assert "left out of the rates" in note, note


def test_followed_signals_name_the_line_of_the_file_not_of_what_was_read_since(
    tmp_path: Path, said: list[str]
) -> None:
    folder = _signals_folder(tmp_path, [_signal(0), _signal(1)])
    followed = FollowedFolders()
    assert len(followed.observations(folder)) == 2 and not said
    with (folder / "signals.jsonl").open("ab") as handle:
        handle.write(_signal(2) + b"\n{}\n" + _signal(3) + b"\n")
    assert len(followed.observations(folder)) == 4
    assert any("(the first is line 4)" in line for line in said), said


def test_damaged_names_how_many_and_the_first() -> None:
    damaged = Damaged(Path("/x/spool.jsonl"), "the spans on them are lost", [3, 9])
    assert damaged.note().startswith("/x/spool.jsonl: skipped 2 damaged lines (the first is line 3); ")
