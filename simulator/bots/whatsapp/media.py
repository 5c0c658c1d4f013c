"""The media a simulated user sends on WhatsApp (a photo, a voice note), stored as the Cloud API stores it.

When a user turn carries a `media` part, the engine keeps a file for it under a new media id, posts the
`image` / `audio` webhook naming that id, and the local Graph API serves it as the Cloud API does:
`GET /{version}/{media-id}` answers `{messaging_product, url, mime_type, sha256, file_size, id}`, and the `url`
answers the bytes to a request carrying the bearer token. The record keeps what the person showed or said
(the part's caption, `description` or `transcript`); the bytes are a small placeholder of the stated type,
made here: a 1x1 PNG whose `Description` text chunk holds the description (an image), or a second of silent
MP3 (a voice note). A bot is tested on receiving, fetching and answering media, not on seeing or hearing it.
"""

from __future__ import annotations

__all__ = ["MediaFile", "MediaStore", "placeholder"]

import hashlib
import secrets
import struct
import zlib
from dataclasses import dataclass

from simulator.bots.whatsapp.routing import Inbox
from simulator.record.parts import MediaPart

# One MPEG-1 Layer III frame (128 kbit/s, 44.1 kHz, mono, no padding): 417 bytes; zero side information
# and main data decode to silence. 38 frames are about one second.
_MP3_FRAME = bytes([0xFF, 0xFB, 0x90, 0xC4]) + bytes(413)
_MP3_FRAMES = 38


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def _png(description: str) -> bytes:
    """A 1x1 white PNG; the description in an iTXt chunk (UTF-8)."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\xff\xff")
    text = b"Description\x00\x00\x00\x00\x00" + description.encode("utf-8")
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"iTXt", text)
        + _png_chunk(b"IDAT", pixels)
        + _png_chunk(b"IEND", b"")
    )


def placeholder(part: MediaPart) -> tuple[bytes, str]:
    """The bytes and content type the engine sends for a user's media part."""
    if part.kind == "image":
        return _png(part.description or part.caption or ""), "image/png"
    if part.kind == "audio":
        return _MP3_FRAME * _MP3_FRAMES, "audio/mpeg"
    raise ValueError(part.kind)


@dataclass(frozen=True)
class MediaFile:
    """One stored media file: its id, the conversation it belongs to, its bytes and their description."""

    media_id: str
    owner: Inbox  # the conversation it was sent in
    data: bytes
    mime_type: str
    key: str  # the secret part of its download URL

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


class MediaStore:
    """The user media of the open conversations, by media id; dropped when a conversation closes."""

    def __init__(self) -> None:
        self._files: dict[str, MediaFile] = {}

    def add(self, owner: Inbox, part: MediaPart) -> MediaFile:
        data, mime_type = placeholder(part)
        media_id = str(secrets.randbelow(9 * 10**15) + 10**15)
        stored = MediaFile(media_id, owner, data, mime_type, secrets.token_hex(8))
        self._files[media_id] = stored
        return stored

    def get(self, media_id: str) -> MediaFile | None:
        return self._files.get(media_id)

    def drop(self, owner: Inbox) -> None:
        for media_id in [m for m, stored in self._files.items() if stored.owner is owner]:
            del self._files[media_id]
