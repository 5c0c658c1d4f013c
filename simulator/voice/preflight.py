"""What `validate` and `run` check before a voice run: espeak-ng, pocketsphinx and websockets are
installed and the transcriber's phrases file can be read (docs/voice.md)."""

from __future__ import annotations

__all__ = ["voice_checks"]

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from simulator.errors import UserError
from simulator.safefiles import FileRefused, read_capped
from simulator.voice.config import VoiceBotConfig
from simulator.voice.speech import espeak_path
from simulator.voice.transcribe import missing_transcriber


def _packages() -> None:
    reason = missing_transcriber()
    if reason is None and importlib.util.find_spec("websockets") is None:
        reason = 'needs websockets: pip install -e ".[voice]"'
    if reason is not None:
        raise UserError(f"the voice channel dials the bot and transcribes its speech locally, and {reason}")


def _readable(path: Path) -> None:
    try:
        read_capped(path, 2_000_000)
    except FileRefused as exc:
        raise UserError(f"{path}: {exc}") from None


def voice_checks(
    bot: VoiceBotConfig, resolve: Callable[[str], Path]
) -> Iterator[tuple[tuple[str | int, ...], Callable[[], Any]]]:
    yield ("bot", "caller", "voice"), espeak_path
    yield ("bot", "transcriber"), _packages
    if bot.transcriber.phrases:
        path = resolve(bot.transcriber.phrases)
        yield ("bot", "transcriber", "phrases"), lambda: _readable(path)
