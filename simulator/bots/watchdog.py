"""The watchdog that ends a started bot when the engine that started it dies, even by `kill -9`.

A bot the suite starts (`bot.start`) runs in its own process group, so the engine can stop it and every child
it made. The engine stops it on every exit path it lives through (the end of the run, an error, Ctrl-C,
SIGTERM); for the ones it does not (SIGKILL, a crash of the interpreter, the OOM killer) this small process keeps
watch: it holds the read end of a pipe whose only write end is the engine's. The kernel closes that end when
the engine process ends, however it ends; the watchdog then sees end-of-file, sends SIGTERM to the bot's
process group, SIGKILL after the grace period, notes it in the bot's log, and exits. When the engine stops the
bot itself, it kills the watchdog first.

It is started as `python -c WATCHDOG PGID GRACE_S LOG` (no simulator import: it is up in milliseconds), in its
own session, so neither a Ctrl-C at the terminal nor a kill of the engine's whole process group reaches it. A
pipe works wherever the engine runs (Linux, macOS), and, unlike a parent-death signal (Linux's prctl
PR_SET_PDEATHSIG), it reaches the bot's children too, and does not fire when the thread that started the bot
ends before the process does.

A process group does not hold every process a bot may start: a daemon that makes its own session (a
double-forking server, `start_new_session=True`) leaves it. So every started bot also carries a mark in its
environment (`SIMULATOR_BOT_MARK`, random per start), which its children and daemons inherit; the engine's
stop and the watchdog both end every process that carries it (`marked_pids`, from /proc where there is one:
Linux; elsewhere the group alone).
"""

from __future__ import annotations

__all__ = ["MARK_VARIABLE", "WATCHDOG", "marked_pids"]

import inspect
import os

MARK_VARIABLE = "SIMULATOR_BOT_MARK"


def marked_pids(mark: str) -> list[int]:
    """The processes whose environment holds SIMULATOR_BOT_MARK=`mark` (Linux's /proc; none elsewhere)."""
    needle = ("SIMULATOR_BOT_MARK=" + mark).encode()
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                variables = handle.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if needle in variables:
            found.append(int(name))
    return found


WATCHDOG = (
    "import os\n"
    + inspect.getsource(marked_pids)
    + r"""
import signal, sys, time
pgid, grace, log, mark = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
signal.signal(signal.SIGINT, signal.SIG_IGN)
try:
    while os.read(0, 512):
        pass
except OSError:
    pass

def alive():
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return bool(marked_pids(mark))

def kill(sig):
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass
    for pid in marked_pids(mark):
        try:
            os.kill(pid, sig)
        except OSError:
            pass

if alive():
    try:
        with open(log, "a", encoding="utf-8") as out:
            out.write("--- the engine that started this bot ended without stopping it; the watchdog stopped "
                      "its process group\n")
    except OSError:
        pass
    kill(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive():
        kill(signal.SIGKILL)
"""
)
