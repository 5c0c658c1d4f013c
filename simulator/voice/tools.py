"""The voice channel's tools, found before a run: espeak-ng (the caller's voice, a system package), and the
`voice` extra's pocketsphinx (the transcriber) and websockets (the carrier's client). `validate` asks here
(the voice kind's preflight checks) as `run` does, so a missing one is one line with its fix."""

from __future__ import annotations

__all__ = ["espeak_path", "missing_voice_packages"]

import importlib.util
import shutil

from simulator.errors import UserError


def espeak_path() -> str:
    found = shutil.which("espeak-ng")
    if found is None:
        raise UserError(
            "the voice caller needs espeak-ng to speak: install it (Debian/Ubuntu: apt-get install espeak-ng)"
        )
    return found


def missing_voice_packages() -> str | None:
    """Why the voice channel cannot dial or transcribe here (a package missing), or None."""
    missing = [name for name in ("pocketsphinx", "websockets") if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return f'the voice channel needs {" and ".join(missing)}: pip install -e ".[voice]"'
