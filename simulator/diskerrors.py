"""A full disk, a read-only folder or a missing permission: one line naming the path and the fix.

Writes fail with `ENOSPC` (full), `EDQUOT` (quota), `EROFS` (read-only file system), `EACCES`/`EPERM` (no
permission). Those are the user's environment, not a bug: the command line prints `os_error_line` instead
of a traceback. A failed `write()` names no file, so the writers wrap themselves in `naming(path)`.
"""

from __future__ import annotations

__all__ = ["naming", "os_error_line"]

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}

_FIXES = {
    errno.ENOSPC: "the disk is full; free some space (or write somewhere else)",
    errno.EDQUOT: "the disk quota is used up; free some space (or write somewhere else)",
    errno.EROFS: "it is on a read-only file system; copy the folder somewhere writable, or write elsewhere",
    errno.EACCES: "no permission to write there; fix its permissions (chmod u+w) or write elsewhere",
    errno.EPERM: "the operation is not permitted there; fix its permissions or write elsewhere",
}


@contextmanager
def naming(path: Path | str) -> Iterator[None]:
    """Re-raise an OSError that names no file (a failed write or flush) as one naming `path`."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno in DISK_ERRNOS:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def os_error_line(exc: OSError, resume_hint: str | None = None) -> str | None:
    """The one line for a disk or permission error (None for any other OSError, which stays a bug)."""
    if exc.errno not in DISK_ERRNOS:
        return None
    where = exc.filename if exc.filename is not None else "a file being written"
    line = f"cannot write {where}: {exc.strerror or 'error ' + str(exc.errno)}; {_FIXES[exc.errno]}"
    return line + (f"; {resume_hint}" if resume_hint else "")
