"""`simulator show` never writes a bot's terminal escape codes (issue 11, item 11): every control or
text-reordering character from a transcript is printed as a visible escape, in every field show prints."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from simulator.cli import main
from simulator.record.folder import RunFolder
from simulator.report.show import render_conversation
from simulator.visible import json_visible, visible

# Clipboard write (OSC 52), window title (OSC 0), clear screen, colour, one-byte CSI, bell, backspace,
# carriage return (overwrites the line), DEL, a right-to-left override, an isolate.
HOSTILE = [
    "\x1b]52;c;ZWNobyBwd25lZA==\x07",
    "\x1b]0;owned\x1b\\",
    "\x1b[2J\x1b[H",
    "\x1b[31mred\x1b[0m",
    "\x9b31m",
    "ding\x07\x08\x08",
    "safe\rEVIL",
    "del\x7f",
    "file\u202egnp.exe",
    "\u2066iso\u2069",
]
RAW_CONTROLS = ["\x1b", "\x9b", "\x07", "\x08", "\r", "\x7f", "\u202e", "\u2066"]

BOT = f"""
HOSTILE = {HOSTILE!r}


class Bot:
    def __init__(self):
        self.turn = 0

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            return HOSTILE
        if self.turn == 2:
            raise RuntimeError("error text " + HOSTILE[0] + HOSTILE[2])
        return "ok"

    def final_state(self):
        return {{"triage_level": HOSTILE[1]}}


def make():
    return Bot()
"""


@pytest.fixture
def hostile_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "hostile_terminal_bot.py").write_text(BOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "s.yaml").write_text("id: s1\npersona: p\ngoal: g\nfacts: [I am 40.]\n")
    (tmp_path / "suite.yaml").write_text(
        "scenarios: {paths: [s.yaml]}\nbot: {type: python, factory: 'hostile_terminal_bot:make'}\n"
        "user: {model: offline}\nruns: 1\n"
    )
    out = tmp_path / "run"
    main(["run", str(tmp_path / "suite.yaml"), "--out", str(out), "--no-progress"])
    return out


def test_show_prints_escape_codes_visibly(hostile_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["show", str(hostile_run)]) == 0
    shown = capsys.readouterr().out
    for control in RAW_CONTROLS:
        assert control not in shown, repr(control)
    for escaped in ("\\x1b]52;c;", "\\x1b[2J", "\\x9b31m", "\\x07", "\\x0d", "\\u202e", "\\x7f"):
        assert escaped in shown
    assert main(["show", str(hostile_run), "--raw"]) == 0
    raw = capsys.readouterr().out
    assert not any(control in raw for control in RAW_CONTROLS)
    (record,) = [json.loads(line) for line in raw.splitlines()]
    # The same JSON value, escaped (schema 3: a turn's text is in its text parts).
    assert [part["text"] for part in record["turns"][1]["parts"]] == HOSTILE


def test_on_a_real_terminal_only_rich_styles_are_written(hostile_run: Path) -> None:
    """With colours on (a terminal), the bot's sequences are still never written raw."""
    record = next(RunFolder.open(hostile_run).conversations())
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system="truecolor", width=100)
    render_conversation(console, record, [])
    written = buffer.getvalue()
    assert "\x1b[" in written  # rich's own colours
    for sequence in ("\x1b]", "\x1b[2J", "\x1b[H", "\x9b", "\x07", "\u202e", "\x1b[31mred"):
        assert sequence not in written


@pytest.mark.parametrize("text", HOSTILE)
def test_visible_and_json_visible_are_lossless_views(text: str) -> None:
    shown = visible(text)
    assert not any(control in shown for control in RAW_CONTROLS)
    assert json.loads(json_visible(json.dumps(text, ensure_ascii=False))) == text
    assert visible("line one\n\tline two") == "line one\n\tline two"
