"""The `voice` bot kind's config (docs/voice.md): where the bot's media-stream WebSocket is, how the
simulated caller speaks (and, per persona, barges in or goes quiet), how the bot's speech is transcribed,
and the limits the voice measurements use; registered as a bot kind here. The adapter is
simulator/voice/adapter.py."""

from __future__ import annotations

__all__ = ["AUDIO", "CallerVoice", "VoiceBotConfig", "VoiceLimits"]

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from simulator.config.bot_kinds import (
    LIMIT_FIELDS,
    BotConfig,
    BotKind,
    PreflightCheck,
    register_bot_kind,
    turn_timeout,
)
from simulator.config.bots import BotStart
from simulator.config.named_files import NamesFile
from simulator.config.secrets import SecretURL
from simulator.config.yamlfile import read_text_file
from simulator.errors import UserError
from simulator.models import StrictModel, empty_dict
from simulator.voice.tools import espeak_path, missing_voice_packages


class CallerVoice(StrictModel):
    """How the simulated caller speaks: espeak-ng's `voice` at `rate_wpm`, `pause_s` between sentences, a
    filler ("um") before a sentence with chance `disfluency`, line noise at `noise_dbfs` (None: none). Per
    bot turn, with chance `barge_in`, the caller talks over the bot once it has spoken `barge_in_after_s`;
    with chance `long_silence`, the caller waits `long_silence_s` before answering."""

    voice: str = Field(default="en-us+klatt2", pattern=r"^[\w+-]+$")
    rate_wpm: int = Field(default=160, ge=80, le=450)
    pause_s: float = Field(default=0.35, ge=0, le=10)
    disfluency: float = Field(default=0.0, ge=0, le=1)
    noise_dbfs: float | None = Field(default=-60.0, le=0)
    answer_delay_s: float = Field(default=0.3, ge=0, le=30)
    barge_in: float = Field(default=0.0, ge=0, le=1)
    barge_in_after_s: float = Field(default=1.0, gt=0, le=60)
    long_silence: float = Field(default=0.0, ge=0, le=1)
    long_silence_s: float = Field(default=6.0, gt=0, le=120)

    def with_changes(self, other: CallerVoice) -> CallerVoice:
        """This voice with the fields `other` sets (a persona's caller over the suite's default)."""
        return self.model_copy(update={name: getattr(other, name) for name in other.model_fields_set})


class TranscriberConfig(StrictModel):
    """The local transcriber of the bot's speech: pocketsphinx with its general English model, or a domain
    model built from `phrases` (a text file, one phrase a line, relative to the suite: the bot's prompts,
    questions and advice, numbers written as words)."""

    engine: Literal["pocketsphinx"] = "pocketsphinx"
    phrases: Annotated[str | None, NamesFile()] = None


class VoiceLimits(StrictModel):
    """What the voice figures count: dead air on the bot's side longer than `silence_s`; overlaps of the
    two voices shorter than `overlap_s` are not counted (a breath, an echo)."""

    silence_s: float = Field(default=3.0, gt=0)
    overlap_s: float = Field(default=0.3, ge=0)


class VoiceBotConfig(BotConfig):
    """A phone bot behind a Twilio Media Streams WebSocket (docs/voice.md): the engine plays the carrier,
    dials `url`, and a simulated caller speaks the patient's words."""

    type: Literal["voice"] = "voice"
    url: Annotated[str, SecretURL] = Field(pattern=r"^wss?://")
    # Sent in the start message's customParameters (Twilio's <Parameter> elements); recorded with the suite
    # in the manifest, so never a secret.
    parameters: dict[str, str] = Field(default_factory=empty_dict)
    caller: CallerVoice = Field(default_factory=CallerVoice)
    # Per persona: a scenario whose tags (or factor levels) name an entry speaks with these changes.
    callers: dict[str, CallerVoice] = Field(default_factory=empty_dict)
    # The bot's turn ends once nothing of its speech has played for this long.
    quiet_s: float = Field(default=1.0, gt=0, le=30)
    # No speech from the bot this long after the caller finished is an error (the call went dead).
    timeout_s: float = turn_timeout(20.0)
    # On the first turn the caller waits up to this long for the bot's greeting before speaking.
    greeting_s: float = Field(default=3.0, ge=0, le=60)
    # GET this (with {call_sid}) after the call for the bot's final state (a JSON object).
    state_url: Annotated[str | None, SecretURL] = Field(default=None, pattern=r"^https?://")
    # The final state's entry holding what the bot heard the caller say (a list of strings, or one string).
    heard_state: str = "heard"
    transcriber: TranscriberConfig = Field(default_factory=TranscriberConfig)
    limits: VoiceLimits = Field(default_factory=VoiceLimits)
    # Keep each turn's audio as WAV files in the run folder (audio/); off keeps transcripts and times only.
    keep_audio: bool = True
    start: BotStart | None = None
    # How patiently the bot is waited for may change on resume; what a turn is (quiet_s) may not.
    operational: ClassVar[frozenset[str]] = LIMIT_FIELDS | {"timeout_s"}

    def turn_deadline_s(self) -> float | None:
        """None: a call's turn is bounded by the adapter itself (no speech within timeout_s of the caller's
        last word, a bot still talking 120 s after it), and the caller's own speech is not the bot's time."""
        return None

    def describe(self) -> str:
        return f"voice:{self.url}"

    def preflight_checks(self, resolve: Callable[[str], Path]) -> Iterator[PreflightCheck]:
        yield ("caller", "voice"), espeak_path
        yield ("transcriber",), _packages
        if self.transcriber.phrases:
            path = resolve(self.transcriber.phrases)
            yield ("transcriber", "phrases"), lambda: read_text_file(path)


def _packages() -> None:
    reason = missing_voice_packages()
    if reason is not None:
        raise UserError(reason)


# A capability: the bot speaks on a call (its config is a VoiceBotConfig): its runs have voice figures.
AUDIO = "audio"

# No ENVIRONMENT: a phone line carries no environment API.
register_bot_kind(
    BotKind(
        "voice", VoiceBotConfig, "simulator.voice.adapter:voice_bot_factory", capabilities=frozenset({AUDIO})
    )
)
