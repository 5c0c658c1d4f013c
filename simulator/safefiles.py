"""Reading a file the user named, safely: only regular files, and never more bytes than a cap.

`validate`, `report` and `show` read files whose paths come from users and from run folders. A FIFO blocks
for ever, `/dev/zero` behind a symlink never ends, and `stat` says nothing true about either. So every reader
opens the file without blocking, checks what it is on the open descriptor (no race with a swapped path),
refuses anything but a regular file, and reads at most `limit` bytes, counted as they are read.
"""

from __future__ import annotations

__all__ = ["WAITS", "FileRefused", "open_regular", "read_capped", "too_large"]

import contextlib
import errno
import functools
import os
import stat
from pathlib import Path
from typing import BinaryIO


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
