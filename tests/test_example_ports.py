"""Every example under examples/ that listens on a port, run by hand on a port another program holds, ends
with one plain line naming the port and the flag that chooses another, and exit code 2 (as `simulator serve`
does: simulator/listening.py `exit_on_unlistenable`), never a traceback or uvicorn's "[Errno 98]" and exit 1.
`--port 0`, the fix each names, listens on a free port and prints which."""

from __future__ import annotations

import os
import re
import select
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ports import held_port

ROOT = Path(__file__).resolve().parent.parent
_WHATSAPP = {"WHATSAPP_APP_SECRET": "s", "WHATSAPP_ACCESS_TOKEN": "t", "WHATSAPP_VERIFY_TOKEN": "v"}
# Each example that listens (its module), with the environment it needs to get as far as listening, and
# the line it prints once it listens (the port filled in).
EXAMPLES: dict[str, tuple[dict[str, str], str]] = {
    "examples.http_triage_bot": ({}, "Triage bot listening on http://127.0.0.1:{port}/chat"),
    "examples.whatsapp_triage_bot": (
        _WHATSAPP,
        "whatsapp triage bot listening on http://127.0.0.1:{port}/webhook",
    ),
    "examples.voice.triage_voice_bot": ({}, "voice triage bot listening on ws://127.0.0.1:{port}/ws"),
    "examples.live.triage_web": ({}, "triage web app listening on http://127.0.0.1:{port}/chat"),
}
_PORT_FLAG = re.compile(r"""add_argument\(\s*["']--port["']""")


def test_every_example_that_takes_a_port_is_checked_here() -> None:
    """A new example with a `--port` flag joins EXAMPLES, so its taken port is tested too."""
    found = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "examples").rglob("*.py")
        if _PORT_FLAG.search(path.read_text(encoding="utf-8"))
    }
    assert found == set(EXAMPLES)


def _env(module: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **EXAMPLES[module][0]}


@pytest.mark.parametrize("module", sorted(EXAMPLES))
def test_an_examples_port_another_program_holds_is_one_line_and_exit_2(module: str, tmp_path: Path) -> None:
    with held_port() as port:
        done = subprocess.run(
            [sys.executable, "-m", module, "--port", str(port)],
            cwd=tmp_path,
            env=_env(module),
            capture_output=True,
            text=True,
            timeout=120,  # an example that started would serve for ever: this fails the test instead
        )
    err = done.stderr
    assert done.returncode == 2, (done.returncode, err)
    assert "Traceback" not in err and "Errno" not in err, err
    assert err.endswith("\n") and err.splitlines()[-1] == (
        f"error: cannot listen on 127.0.0.1:{port}: port {port} is already in use by another program; "
        f"stop it, or choose another port: --port {port + 1}, or --port 0 for any free one"
    ), err
    assert [line for line in err.splitlines() if "error" in line.lower()] == [err.splitlines()[-1]], err
    assert done.stdout == ""  # it never said it listens


@pytest.mark.parametrize("module", sorted(EXAMPLES))
def test_port_0_the_fix_offered_listens_on_a_free_port_and_says_which(module: str, tmp_path: Path) -> None:
    example = subprocess.Popen(
        [sys.executable, "-m", module, "--port", "0"],
        cwd=tmp_path,
        env=_env(module),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert example.stdout is not None
        # A minute to say it listens (the voice bot loads pipecat first); one that never says it fails here.
        ready, _, _ = select.select([example.stdout], [], [], 60)
        line = example.stdout.readline().strip() if ready else ""
        pattern = re.escape(EXAMPLES[module][1]).replace(re.escape("{port}"), r"(\d+)")
        said = re.fullmatch(pattern, line)
        assert said, (line, example.stderr.read() if example.poll() is not None else "")  # type: ignore[union-attr]
        port = int(said.group(1))
        assert port != 0
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass  # it listens where it says
    finally:
        example.terminate()
        example.communicate(timeout=30)
