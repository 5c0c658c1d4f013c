"""Reading a file the user named, safely: only regular files, and never more bytes than a cap; and writing
a file so that a crash leaves the old one or the new one, never half of either (`replacing`, `write_atomic`).

`validate`, `report` and `show` read files whose paths come from users and from run folders. A FIFO blocks
for ever, `/dev/zero` behind a symlink never ends, and `stat` says nothing true about either. So every reader
opens the file without blocking, checks what it is on the open descriptor (no race with a swapped path),
refuses anything but a regular file, and reads at most `limit` bytes, counted as they are read.
"""

from __future__ import annotations

__all__ = [
    "STALE_AFTER_S",
    "WAITS",
    "FileRefused",
    "append_durable",
    "open_regular",
    "read_capped",
    "replacing",
    "too_large",
    "write_atomic",
]

import contextlib
import errno
import functools
import os
import secrets
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from simulator.diskerrors import naming


class FileRefused(Exception):
    """A file that is not a regular file, cannot be opened, or is larger than its cap: the message says
    which and what to do (the caller adds the file's name)."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a regular file"


WAITS = (
    "a kernel or device file that waits for data, not a file on disk; name a file with the content instead"
)
KERNEL = (
    "a kernel file (under /proc or /sys: it can wait for data, and reading some of them consumes it), not a "
    "file on disk; name a file with the content instead"
)


@functools.cache
def _kernel_devices() -> frozenset[int]:
    """The devices of the kernel's own file systems, where files call themselves regular (size 0) and are
    not: /proc/kmsg blocks, or, when the kernel has logged, hands out (and consumes) its messages."""
    found = set()
    for root in ("/proc", "/sys"):
        with contextlib.suppress(OSError):  # not Linux: no such file system
            found.add(os.stat(root).st_dev)
    return frozenset(found)


_OPEN_FIXES = {
    errno.ENOENT: "no such file; check the path",
    errno.ELOOP: "a symbolic link that leads back to itself (a link loop); point it at a file",
    errno.EACCES: "permission denied; make the file readable",
    errno.ENOTDIR: "a part of the path is a file, not a folder; check the path",
    errno.ENAMETOOLONG: "the path is too long; use a shorter one",
    errno.ENXIO: "a socket or a device with nothing behind it, not a file; name a file with the content instead",
}


def _cannot_open(exc: OSError) -> str:
    fix = _OPEN_FIXES.get(exc.errno or 0)
    return fix if fix else f"cannot read the file ({exc.strerror}); name a readable file"


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for binary reading, if it is a regular file (symlinks followed); FileRefused if not."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileRefused(_cannot_open(exc)) from None
    try:
        status = os.fstat(fd)
        mode = status.st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"{_kind(mode)}, not a regular file; name a file with the content instead")
        if status.st_dev in _kernel_devices():  # refused before a byte is read (reading may consume)
            raise FileRefused(KERNEL)
        # Left non-blocking: it changes nothing for a file on disk, and a kernel file that calls itself
        # regular but waits for data (/proc/kmsg) answers "would block" instead of hanging the reader.
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: Path, limit: int, advice: str = "split it into smaller files") -> bytes:
    """At most `limit` bytes of the regular file `path`; FileRefused when it holds more (counted while
    reading, so a file that grows, or lies about its size, is cut all the same)."""
    with open_regular(path) as handle:
        if os.fstat(handle.fileno()).st_size > limit:  # said at once, without reading gigabytes first
            raise FileRefused(too_large(limit, advice))
        try:
            data = handle.read(limit + 1)
        except BlockingIOError:
            data = None
        except OSError as exc:
            raise FileRefused(f"cannot read the file ({exc.strerror})") from None
    if data is None:
        raise FileRefused(WAITS)
    if len(data) > limit:  # a file that grew, or says it is smaller than it is (counted while reading)
        raise FileRefused(too_large(limit, advice))
    return data


def too_large(limit: int, advice: str) -> str:
    """The refusal of a file over its cap: the cap, and `advice` (the fix)."""
    return f"the file is larger than {limit / 1e6:g} MB: files over {limit / 1e6:g} MB are refused; {advice}"


@contextlib.contextmanager
def replacing(
    path: Path, *, mode: int = 0o666, sync: bool = True, sync_folder: bool = False
) -> Iterator[BinaryIO]:
    """A binary handle on a new file that replaces `path` when the block ends without an error; on an error
    `path` is untouched and the new file removed.

    The new file is made in `path`'s folder (a rename never crosses file systems) under a name no other
    writer uses, created with `mode` (less the umask, as `open` does; 0o600 keeps a secret owner-only from
    its first byte). `sync` puts its bytes on disk before the rename, so a crash cannot leave an empty
    file under the old name; `sync_folder` puts the rename itself on disk too (a crash then cannot bring
    back the old file). An OSError names `path`, never the temporary name."""
    tmp, fd = _create_beside(path, mode)
    _sweep_stale(path, keep=tmp)
    with naming(path):  # a failed write names no file: it names `path`
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
                handle.flush()
                if sync:
                    os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if isinstance(exc, OSError) and exc.filename == str(tmp):
                raise OSError(exc.errno, exc.strerror, str(path)) from exc
            raise
        if sync_folder:
            _sync_folder(path.parent)


def write_atomic(
    path: Path,
    data: bytes | str | Iterable[bytes | str],
    *,
    mode: int = 0o666,
    sync: bool = True,
    sync_folder: bool = False,
) -> None:
    """Replace `path` with `data` (text is written as UTF-8), through `replacing`: a crash or an error
    leaves the old file. `data` may be chunks, written as they come, so a large file is never one string."""
    chunks = [data] if isinstance(data, bytes | str) else data
    with replacing(path, mode=mode, sync=sync, sync_folder=sync_folder) as handle:
        for chunk in chunks:
            handle.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)


def append_durable(path: Path, text: str, *, sync: bool = True) -> None:
    """Append `text` (UTF-8) to a journal-like file in one write, flushed and, unless told not to, synced
    before returning: what a caller has answered for (a sign-off, a spend, an accepted span) is on disk.
    Earlier lines are never touched."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        if sync:
            os.fsync(handle.fileno())


# A temporary file of `replacing` left by a process that died before its rename (`kill -9`, a power cut):
# older than this, no writer is still filling it, and the next replacement of the same file removes it.
# It may hold what the file held (the pseudonym key, owner-only): it should not outlive the crash.
STALE_AFTER_S = 600

# When each path's folder was last swept (time.monotonic()): a file replaced every few seconds (the run
# manifest's checkpoint, the collector's spool) scans its folder once per STALE_AFTER_S, not on every
# replacement; a leftover is then gone within STALE_AFTER_S of its becoming stale. Bounded: a process that
# replaces many distinct files forgets them all at once and sweeps each again on its next replacement.
_LAST_SWEEP: dict[str, float] = {}
_SWEEPS_KEPT = 4096


def _sweep_stale(path: Path, keep: Path) -> None:
    """Remove the temporary files of earlier replacements of `path` that died before their rename and are
    older than STALE_AFTER_S (a live writer's is newer), at most once per STALE_AFTER_S for one path. Best
    effort: what cannot be removed stays."""
    key, now = os.path.abspath(path), time.monotonic()
    last = _LAST_SWEEP.get(key)
    if last is not None and now - last < STALE_AFTER_S:
        return
    if len(_LAST_SWEEP) >= _SWEEPS_KEPT:
        _LAST_SWEEP.clear()
    _LAST_SWEEP[key] = now
    prefix = f".{path.name[:200]}."
    with contextlib.suppress(OSError):
        cutoff = time.time() - STALE_AFTER_S
        with os.scandir(path.parent) as entries:
            for entry in entries:
                name = entry.name
                if not (name.startswith(prefix) and name.endswith(".tmp") and len(name) == len(prefix) + 12):
                    continue  # `replacing` names them `.NAME.` + 8 hex digits + `.tmp`
                if entry.path == str(keep) or not _is_hex(name[len(prefix) : -4]):
                    continue
                with contextlib.suppress(OSError):
                    if (
                        entry.is_file(follow_symlinks=False)
                        and entry.stat(follow_symlinks=False).st_mtime < cutoff
                    ):
                        os.unlink(entry.path)


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _create_beside(path: Path, mode: int) -> tuple[Path, int]:
    """A new, empty file next to `path` with a name of its own (two writers never share one), hidden."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name[:200]}.{secrets.token_hex(4)}.tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
            return tmp, os.open(tmp, flags, mode)
        except FileExistsError:
            continue
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", str(path))


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
