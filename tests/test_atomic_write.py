"""One atomic write for every file the project replaces (safefiles.replacing / write_atomic): the new content
or the old, never half; no temporary file left behind, after success or failure; a new file created with
the mode asked for from its first byte (the pseudonym key is owner-only before the secret is written)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from simulator.safefiles import STALE_AFTER_S, append_durable, replacing, write_atomic
from simulator.traces.pseudonym import load_key


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _chunks() -> Iterator[bytes | str]:
    yield "first line\n"
    yield b"second \xc3\xa9\n"
    yield "third é\n"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("text é\n", "text é\n".encode()),
        (b"\x00\xffbytes", b"\x00\xffbytes"),
        ("", b""),
        ([b"a", "b", b"c"], b"abc"),
        (_chunks, "first line\nsecond é\nthird é\n".encode()),
    ],
    ids=["str", "bytes", "empty", "list", "generator"],
)
@pytest.mark.parametrize("existing", [True, False], ids=["replaced", "new"])
@pytest.mark.parametrize("sync", [True, False], ids=["synced", "unsynced"])
def test_the_content_is_written_and_no_temporary_file_stays(
    tmp_path: Path, data: object, expected: bytes, existing: bool, sync: bool
) -> None:
    target = tmp_path / "file.jsonl"
    if existing:
        target.write_bytes(b"old content that is longer than the new one" * 10)
    chunks = data() if callable(data) else data
    write_atomic(target, chunks, sync=sync, sync_folder=sync)  # type: ignore[arg-type]
    assert target.read_bytes() == expected
    assert os.listdir(tmp_path) == ["file.jsonl"]


def _failing(after: int) -> Iterable[bytes]:
    for n in range(after):
        yield f"line {n}\n".encode()
    raise ValueError("the source broke midway")


@pytest.mark.parametrize("after", [0, 1, 1000])
def test_a_failing_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path, after: int) -> None:
    target = tmp_path / "spool.jsonl"
    target.write_bytes(b"old\n")
    with pytest.raises(ValueError, match="midway"):
        write_atomic(target, _failing(after))
    assert target.read_bytes() == b"old\n"
    assert os.listdir(tmp_path) == ["spool.jsonl"]


def test_a_failing_write_of_a_new_file_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_atomic(tmp_path / "new.json", _failing(3))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_error_in_the_writing_block_leaves_the_old_file(
    tmp_path: Path, error: type[BaseException]
) -> None:
    target = tmp_path / "manifest.json"
    target.write_text("{}")
    with pytest.raises(error), replacing(target) as handle:
        handle.write(b'{"half": ')
        raise error()
    assert target.read_text() == "{}" and os.listdir(tmp_path) == ["manifest.json"]


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o400])
def test_a_new_file_has_the_mode_asked_for_from_its_first_byte(
    tmp_path: Path, umask_022: None, mode: int
) -> None:
    target = tmp_path / "secret.key"
    with replacing(target, mode=mode) as handle:
        # Before a byte is written: the file already has its mode (never chmod-ed after the secret).
        assert stat.S_IMODE(os.fstat(handle.fileno()).st_mode) == mode
        handle.write(b"secret")
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert target.read_bytes() == b"secret"


def test_the_default_mode_is_what_open_gives(tmp_path: Path, umask_022: None) -> None:
    write_atomic(tmp_path / "a.json", "{}")
    (tmp_path / "b.json").write_text("{}")
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
    assert (tmp_path / "a.json").stat().st_mode == (tmp_path / "b.json").stat().st_mode


def test_a_replaced_file_takes_the_mode_asked_for(tmp_path: Path, umask_022: None) -> None:
    target = tmp_path / "pseudonym.key"
    target.write_bytes(b"readable by all")
    target.chmod(0o644)
    write_atomic(target, b"secret", mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_two_writers_of_one_file_never_share_a_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "index.json"
    with replacing(target) as first, replacing(target) as second:
        first.write(b"first")
        second.write(b"second")
        assert len(os.listdir(tmp_path)) == 2  # two temporary files, neither the target
    assert target.read_bytes() == b"first"  # the outer block ends last: its file is the one left
    assert os.listdir(tmp_path) == ["index.json"]


@pytest.mark.parametrize(
    ("code", "raised"),
    [(errno.ENOSPC, OSError), (errno.EACCES, PermissionError), (errno.EROFS, OSError)],
)
def test_a_failed_write_names_the_target_not_the_temporary_file(
    tmp_path: Path, code: int, raised: type[OSError]
) -> None:
    target = tmp_path / "conversations.jsonl"
    with pytest.raises(raised) as caught, replacing(target) as handle:
        handle.write(b"x")
        raise OSError(code, os.strerror(code))  # what a write to a full or read-only disk raises
    assert caught.value.filename == str(target) and caught.value.errno == code
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("blocker", ["missing", "file"])
def test_a_folder_that_cannot_hold_the_file_names_the_target(tmp_path: Path, blocker: str) -> None:
    folder = tmp_path / "out"
    if blocker == "file":
        folder.write_text("a file where the folder should be")
    with pytest.raises(OSError) as caught:
        write_atomic(folder / "manifest.json", "{}")
    assert caught.value.filename == str(folder / "manifest.json")


@pytest.mark.parametrize("stale", [None, 0o644, 0o666])
def test_the_pseudonym_key_is_owner_only_whatever_the_folder_held(
    tmp_path: Path, umask_022: None, stale: int | None
) -> None:
    """An earlier crash may have left a temporary file behind: the new key never inherits its mode."""
    key_path = tmp_path / "state" / "pseudonym.key"
    key_path.parent.mkdir()
    if stale is not None:
        leftover = key_path.with_name(key_path.name + ".partial")
        leftover.write_bytes(b"")
        leftover.chmod(stale)
    key = load_key(key_path, create=True)
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert key_path.read_bytes() == key and len(key) >= 16
    assert load_key(key_path, create=False) == key


@pytest.mark.parametrize("sync", [True, False])
@pytest.mark.parametrize("lines", [["one\n"], ["a\n", "b\n", "c\n"], ["café ☕\n", "\n"]])
def test_append_durable_adds_lines_and_never_touches_earlier_ones(
    tmp_path: Path, lines: list[str], sync: bool
) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text("earlier\n", encoding="utf-8")
    for line in lines:
        append_durable(path, line, sync=sync)
    assert path.read_text(encoding="utf-8") == "earlier\n" + "".join(lines)


def test_append_durable_makes_a_new_file_and_names_a_missing_folder(tmp_path: Path) -> None:
    append_durable(tmp_path / "new.jsonl", "x\n")
    assert (tmp_path / "new.jsonl").read_text() == "x\n"
    with pytest.raises(FileNotFoundError) as caught:
        append_durable(tmp_path / "nowhere" / "j.jsonl", "x\n")
    assert caught.value.filename == str(tmp_path / "nowhere" / "j.jsonl")


def _aged(path: Path, seconds: float) -> Path:
    path.write_bytes(b"left by a crash")
    old = path.stat().st_mtime - seconds
    os.utime(path, (old, old))
    return path


@pytest.mark.parametrize("name", ["manifest.json", "pseudonym.key", "collect.spool", "a b.yaml"])
def test_a_crashed_writer_s_old_temporary_file_is_removed_by_the_next_replacement(
    tmp_path: Path, name: str
) -> None:
    """`kill -9` between the write and the rename left `.NAME.xxxxxxxx.tmp` for ever (for the pseudonym key,
    a copy of the key). The next replacement of the same file removes such a file once it is older than
    STALE_AFTER_S; a younger one (a writer still at work), another file's, or one named otherwise stays."""
    target = tmp_path / name
    target.write_text("old")
    stale = [
        _aged(tmp_path / f".{name}.{digits}.tmp", STALE_AFTER_S + 60) for digits in ("0a1b2c3d", "ffffffff")
    ]
    young = _aged(tmp_path / f".{name}.12345678.tmp", 5)
    others = [
        _aged(tmp_path / ".other.json.0a1b2c3d.tmp", STALE_AFTER_S + 60),  # another file's
        _aged(tmp_path / f".{name}.notahex!.tmp", STALE_AFTER_S + 60),  # not a name `replacing` gives
        _aged(tmp_path / f".{name}.0a1b2c3d.tmp.bak", STALE_AFTER_S + 60),
        _aged(tmp_path / f"{name}.0a1b2c3d.tmp", STALE_AFTER_S + 60),  # not hidden
    ]
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert not any(path.exists() for path in stale)
    assert young.exists() and all(path.exists() for path in others)


def test_a_folder_in_the_way_of_the_sweep_is_left(tmp_path: Path) -> None:
    target = tmp_path / "manifest.json"
    folder = tmp_path / ".manifest.json.0a1b2c3d.tmp"
    folder.mkdir()
    old = folder.stat().st_mtime - STALE_AFTER_S - 60
    os.utime(folder, (old, old))
    write_atomic(target, "x")
    assert folder.is_dir() and target.read_text() == "x"


def test_a_file_replaced_often_has_its_folder_swept_once_per_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest's checkpoint and the spool replace their file every few seconds: the folder is scanned
    on the first replacement and then once per STALE_AFTER_S, not each time. A leftover that appears in
    between is gone on the first replacement after the period."""
    import simulator.safefiles as safefiles

    clock = [1000.0]
    monkeypatch.setattr(safefiles.time, "monotonic", lambda: clock[0])
    scans: list[str] = []
    real_scandir = os.scandir

    def counting_scandir(folder: str | Path) -> object:
        scans.append(str(folder))
        return real_scandir(folder)

    monkeypatch.setattr(safefiles.os, "scandir", counting_scandir)
    targets = [tmp_path / "manifest.json", tmp_path / "collect.spool"]
    for _ in range(20):
        for target in targets:
            write_atomic(target, "x")
    assert len(scans) == len(targets)  # once per path, however many replacements
    leftover = _aged(tmp_path / ".manifest.json.0a1b2c3d.tmp", STALE_AFTER_S + 60)
    clock[0] += STALE_AFTER_S - 1
    write_atomic(targets[0], "y")
    assert leftover.exists() and len(scans) == len(targets)
    clock[0] += 2
    write_atomic(targets[0], "z")
    assert not leftover.exists() and len(scans) == len(targets) + 1
