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
"""

from __future__ import annotations

__all__ = ["WATCHDOG"]

WATCHDOG = r"""
import os, signal, sys, time
pgid, grace, log = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
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
        return False

if alive():
    try:
        with open(log, "a", encoding="utf-8") as out:
            out.write("--- the engine that started this bot ended without stopping it; the watchdog stopped "
                      "its process group\n")
    except OSError:
        pass
    try:
        os.killpg(pgid, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + grace
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive():
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
"""
