"""A call's audio kept in the run folder: `audio/<conversation>/<turn>-<side>.wav`, 8 kHz 16-bit mono.

Only the engine writing a run creates these files (the factory is given the run folder when the run
starts); readers (report, show, the desk) only link to them. Paths in the record are relative to the run
folder, so a moved or copied run folder still finds its audio.
"""

from __future__ import annotations

__all__ = ["AUDIO_DIR", "AudioFiles", "conversation_folder"]

import re
import wave
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from simulator.voice.mulaw import SAMPLE_RATE

AUDIO_DIR = "audio"
_UNSAFE = re.compile(r"[^\w.-]+")


def conversation_folder(conversation_id: str) -> str:
    """A folder name for one attempt at a conversation: its (scenario#repeat) key and attempt token, made
    safe for every file system."""
    parts = conversation_id.split("/")
    name = "-".join(parts[-2:]) if len(parts) >= 3 else conversation_id
    return _UNSAFE.sub("_", name).strip("._") or "call"


class AudioFiles:
    """Writes one conversation's audio files under `run_folder/audio/<folder>/`."""

    def __init__(self, run_folder: Path, folder: str) -> None:
        self.run_folder = run_folder
        self.relative = Path(AUDIO_DIR) / folder

    def write(self, name: str, samples: NDArray[np.int16], channels: int = 1) -> str:
        """Write `name`.wav and return its path relative to the run folder (forward slashes)."""
        target = self.run_folder / self.relative
        target.mkdir(parents=True, exist_ok=True)
        path = target / f"{name}.wav"
        with wave.open(str(path), "wb") as out:
            out.setnchannels(channels)
            out.setsampwidth(2)
            out.setframerate(SAMPLE_RATE)
            out.writeframes(np.ascontiguousarray(samples, dtype="<i2").tobytes())
        return (self.relative / path.name).as_posix()
