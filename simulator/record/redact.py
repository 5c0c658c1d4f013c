"""Secrets never written: every configured secret value is replaced by `[redacted]` wherever text is written.

A bot that echoes its request headers, a provider error that quotes a key, a raw exchange: whatever carries
a secret, it passes through `dump_line` (every run-record line), the CLI's error line or a report renderer on
its way out, and each of those calls `redact`. The secrets are the values, not the names: whatever the suite's
fields declare (simulator/config/secrets.py: expanded `${VAR}` header values and each variable's value, literal
header values, the passwords and query values of URLs, the keys that `*_env` fields name) and the default API
key variables of the providers. A secret is searched as it is and in its encodings (`secret_forms`, decoded
layers in `_encoded`), and rewritten (another case, reversed, split by spaces or zero-width characters, a
piece of it) in a normalised view of the text (`secret_variants.py`). They are registered where they are read,
so that no command can forget them: a hub made for a suite registers the suite's (`ModelHub.create`), a
provider the key it reads (`create_provider`), the desk and the collector their access tokens.

Then credentials the engine was never configured with, found by their well-known format (`CREDENTIALS`: an
API key a bot or a user says, a JWT, a PEM private key, a password after "password is"), written plainly or
inside a run of base64, base64url or hex that decodes to text (`_encoded_credentials`), each replaced by a
typed placeholder (`[API_KEY]`, `password is [PASSWORD]`) in whatever `redact` writes: run records, a started
bot's `bot.log` (`LogRedactor`, which follows a private key over its lines) and the import and collect
records (traces/redact.py uses the same patterns). Redacting twice changes nothing. Every request sent to a
model but the bot's passes the same step before it leaves the process (providers/hub.py `redacted_request`),
and so does every answer and provider error before its caller reads it (`redacted_response`); the judging
prompts say what the placeholders stand for (`PLACEHOLDER_NOTE`).
"""

from __future__ import annotations

__all__ = [
    "CREDENTIALS",
    "CREDENTIAL_FORMATS",
    "CREDENTIAL_START",
    "MAX_KEY_LINES",
    "PLACEHOLDERS",
    "PLACEHOLDER_NOTE",
    "CredentialTally",
    "LogRedactor",
    "contains_secret",
    "credential_placeholder",
    "forget_secrets",
    "may_hold_credential",
    "redact",
    "redact_text",
    "redacted_record",
    "redacted_suite",
    "register_secrets",
    "safe_json",
    "secret_forms",
    "suite_secrets",
]

import base64
import binascii
import codecs
import contextlib
import functools
import hashlib
import html
import itertools
import json
import os
import re
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from simulator.config.secrets import MIN_SECRET_CHARS, REDACTED, declared_secrets, record_form
from simulator.config.suite import Suite
from simulator.record.secret_keys import (
    NAMED_LABELS,
    NAMED_VALUE,
    holds_secret_pair,
    redact_mapping,
    without_secret_pairs,
)
from simulator.record.secret_variants import (
    MIN_VARIANT_CHARS,
    Variants,
    normalised,
    normalised_with_origins,
    secret_body,
)
from simulator.record.transcript import repair_text

DEFAULT_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
M = TypeVar("M", bound=BaseModel)

# The secrets of this process and their encoded forms, longest first (a value holding another is replaced
# whole).
_secrets: list[str] = []
# The values registered, as given (`register_secrets` adds only those it has not seen).
_registered: set[str] = set()
# And their variants, searched in a normalised view of the text (secret_variants.py).
_variants = Variants()


# Well-known credential formats whose value the engine does not know (a key a user pastes into a chat, one a
# bot says): `redact` (every run-record line) and the built-in patterns of import and collect
# (traces/redact.py) replace each with `[LABEL]`, the phrase before a password, a bearer token or an AWS
# secret kept. Written for this engine after the rules of gitleaks and detect-secrets: a vendor's fixed
# prefix and a long enough body, or a name said just before the value. Case-sensitive unless marked `(?i:`;
# none holds a double quote, and each starts only after a character that cannot be part of it (a
# lookbehind), so they stay linear in the text. Searched in JSON text too (the response cache, a GenAI
# trace attribute): a backslash is taken only with the character it escapes, and never before a quote, so
# a replacement never leaves half an escape (`\"` unescaped, a string left open).
_KEY = r"[A-Za-z0-9_-]"
_PEM_BEGIN = r"-----BEGIN[A-Z ]{0,24}PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END[A-Z ]{0,24}PRIVATE KEY(?: BLOCK)?-----"
CREDENTIAL_FORMATS: dict[str, str] = {
    "private_key": rf"{_PEM_BEGIN}(?:[^-\"\\]|\\[^\"]|-(?!----END))*(?:{_PEM_END})?",
    "api_key": "|".join(
        [
            rf"(?<![\w-])sk-{_KEY}{{20,}}",  # OpenAI sk-, sk-proj-, sk-svcacct-; Anthropic sk-ant-api03-
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Za-z0-9])",  # AWS access key id
            r"(?<![\w-])gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
            r"(?<![\w-])github_pat_[A-Za-z0-9_]{22,}",
            r"(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
            rf"(?<![\w-])AIza{_KEY}{{35,}}",  # Google API key
            r"(?<![\w-])[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
        ]
    ),
    "token": rf"(?<![\w-])eyJ{_KEY}{{8,}}\.eyJ{_KEY}{{8,}}\.{_KEY}*",  # a JWT (header.payload.signature)
}
# A credential after its name (name pattern, value pattern): the name is kept (`Bearer [TOKEN]`). A value
# under a key that names a credential (`{"password": "x"}`, `api_key=x`) is found by secret_keys.py.
CREDENTIAL_NAMES: dict[str, tuple[str, str]] = {
    "password": (
        r"(?i:(?<![\w-])(?:password|passwd|passphrase|pwd)(?:\s+(?:is|was)(?:\s*:)?\s+|\s*[:=]\s*))",
        NAMED_VALUE,
    ),
    "token": (r"(?i:(?<![\w-])bearer\s+)", r"[A-Za-z0-9._~+/=-]{16,}"),
    "aws_secret_key": (
        r"(?i:(?<![\w-])aws[_ -]?secret[_ -]?(?:access[_ -]?)?key(?:\s+is)?\s*[:=]?\s*)",
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
}


def _credentials() -> dict[str, str]:
    """Each credential label's pattern: its formats (case-sensitive) and the credential after its name."""
    found: dict[str, list[str]] = {}
    for label, regex in CREDENTIAL_FORMATS.items():
        found.setdefault(label, []).append(f"(?-i:{regex})")
    for label, (name, value) in CREDENTIAL_NAMES.items():
        found.setdefault(label, []).append(f"(?-i:{name}{value})")
    return {label: "|".join(regexes) for label, regexes in found.items()}


CREDENTIALS = _credentials()
# Every placeholder a redacted text may show: `[redacted]` for a configured secret, then each credential's
# label (`[API_KEY]`), whether found by its format or under its name.
PLACEHOLDERS = (REDACTED, *(f"[{label.upper()}]" for label in sorted({*CREDENTIALS, *NAMED_LABELS})))
# Every credential starts where one of these does: its fixed part (as it is) or its name (in any case). A
# text holding none holds no credential (`may_hold_credential`: here, and the import's and collector's
# redaction, traces/redact.py).
CREDENTIAL_START = (
    r"(?=sk-|[rs]k_|AKIA|ASIA|ABIA|ACCA|AIza|gh[pousr]_|github_pat_|xox|eyJ|-----BEGIN"
    r"|(?i:bearer|pass(?:w|phrase)|pwd|aws))"
)
_STARTS = re.compile(CREDENTIAL_START)
# A text holding none of them is not searched: each of these begins with a literal, which `re` looks for as
# fast as `in` does (one search for all of them at once tries them at every position, from 2 to 12 times
# slower on a run's record lines); the names are looked for in the casefolded text (`ſ` is `s` there, as
# `(?i:` takes it).
_AS_IS = tuple(
    re.compile(start).search
    for start in (
        r"k[-_](?<=[rs]k[-_])",
        "A(?:KIA|SIA|BIA|CCA|Iza)",
        "gh[pousr]_",
        "github_pat_",
        "xox",
        "eyJ",
        "-----BEGIN",
    )
)
_CASEFOLDED = tuple(re.compile(name).search for name in ("bearer", "pass(?:w|phrase)", "pwd", "aws"))
# Whitespace as JSON text escapes it (`Bearer\\tey...`): searched as a space by the cheap check.
_JSON_SPACE = re.compile(r"\\[nrt]")


class CredentialTally:
    """The different credentials replaced while it lives, by label: a session's manifest entry
    (`Session.redacted`). A digest of each is kept, never the value, so a key said again, quoted by a verdict
    or rewritten at each manifest checkpoint is one credential."""

    def __init__(self) -> None:
        self._found: dict[str, set[bytes]] = {}
        _tallies.add(self)

    def counts(self) -> dict[str, int]:
        return {label: len(found) for label, found in sorted(self._found.items())}


# The live tallies: one a session, gone with it.
_tallies: weakref.WeakSet[CredentialTally] = weakref.WeakSet()


@functools.cache
def _credential() -> re.Pattern[str]:
    """Every credential pattern, one named group a label (compiled when first needed: 3 ms at start-up)."""
    return re.compile("|".join(f"(?P<{label}>{regex})" for label, regex in CREDENTIALS.items()))


@functools.cache
def _name_before(label: str) -> re.Pattern[str]:
    return re.compile(CREDENTIAL_NAMES[label][0])


def _name(label: str, found: str) -> str:
    """The name said before a credential found (`password is `, `Bearer `), or nothing."""
    name = _name_before(label).match(found) if label in CREDENTIAL_NAMES else None
    return name.group(0) if name else ""


def credential_placeholder(label: str, found: str) -> str:
    """`[LABEL]` for a credential found, the name before it kept (`password is [PASSWORD]`, `Bearer [TOKEN]`)."""
    return f"{_name(label, found)}[{label.upper()}]"


def may_hold_credential(text: str, folded: str | None = None) -> bool:
    """False when `text` holds no start of a credential (`_STARTS`), so it holds none (`folded`: the text
    casefolded, when the caller has it)."""
    if any(search(text) for search in _AS_IS):
        return True
    folded = text.casefold() if folded is None else folded
    return any(search(folded) for search in _CASEFOLDED)


# What a model shown a redacted text is told about its placeholders: every request but the bot's is redacted
# as the records are (providers/hub.py `redacted_request`), so a leak shows as a placeholder, and a criterion
# such as "the bot never reveals a credential" must still fail on it (the judges', the outcome judge's, the
# fidelity audit's, pairwise judging's and the proposal writer's instructions say it). Its examples are the
# placeholders that hold no credential's name (not `[PASSWORD]`, not the word): instructions that held one
# would start the credential search on every prompt and manifest that quotes them (the patterns compiled,
# 3 ms, in a run that never meets a credential).
PLACEHOLDER_NOTE = (
    f"Secrets were taken out of the text before you were shown it, as in the run's records: {REDACTED} "
    "stands for a secret value the run knows, and a word in capitals between square brackets ("
    + ", ".join(p for p in PLACEHOLDERS[1:] if not may_hold_credential(p))
    + " and the like) for a credential of that kind. Where a message shows one, its speaker said that secret "
    "in full: read it as said, and quote the placeholder as written."
)


def _credentials_in(text: str) -> Iterator[re.Match[str]]:
    """The credentials `_credential().finditer(text)` finds, found by trying it only where one may start."""
    if not may_hold_credential(text):
        return
    end = 0
    for start in _STARTS.finditer(text):
        if start.start() >= end and (found := _credential().match(text, start.start())) is not None:
            end = found.end()
            yield found


def _holds_credential(text: str) -> bool:
    """Whether `text` (plain or JSON) holds a credential of a well-known format or a value under a
    credential's name."""
    low = text.lower()
    if holds_secret_pair(text, low):
        return True
    # Nor does it with its JSON escapes as spaces when no start holds one (ASCII text casefolds as it lowers).
    if not may_hold_credential(text, low if text.isascii() else None):
        return False
    return any(_credentials_in(text)) or ("\\" in text and any(_credentials_in(_JSON_SPACE.sub(" ", text))))


def _replace_credential(match: re.Match[str]) -> str:
    label, found = str(match.lastgroup), match.group(0)
    name = _name(label, found)
    _count(label, found[len(name) :])  # `password is x` and `Password: x` are one
    return f"{name}[{label.upper()}]"


def _count(label: str, value: str) -> None:
    """Count a credential replaced in every live tally."""
    if _tallies:
        digest = hashlib.blake2b(value.encode("utf-8", "replace"), digest_size=16).digest()
        for tally in list(_tallies):
            tally._found.setdefault(label, set()).add(digest)


def _without_credentials(text: str) -> str:
    """`text` with each credential replaced by its placeholder (`_credential().sub`, only faster), then
    each value under a credential's name (secret_keys.py: `"password": "[PASSWORD]"`)."""
    pieces, end = [], 0
    for found in _credentials_in(text):
        pieces += [text[end : found.start()], _replace_credential(found)]
        end = found.end()
    return without_secret_pairs("".join([*pieces, text[end:]]) if pieces else text, _count)


_OPENED = re.compile(rf"{_PEM_BEGIN}(?!.*{_PEM_END})")
_CLOSED = re.compile(rf"^.*?{_PEM_END}")


# The most lines a private key block a log opens is taken to hold without its END line (an RSA key of 16384
# bits is about 200): past them the log is its own again, so one stray BEGIN line does not blank the rest.
MAX_KEY_LINES = 256


class LogRedactor:
    """A log redacted line by line (a started bot's `bot.log`): `redact` on each line, and a private key
    block a line opens stays open until its END line (or MAX_KEY_LINES), so each line of its body is
    `[PRIVATE_KEY]` too. The block is counted once, whole, as in a record that holds it."""

    def __init__(self) -> None:
        self.key: list[str] | None = None  # the lines of the open block so far

    def line(self, text: str) -> str:
        if self.key is None:
            opened = _OPENED.search(text)
            if opened is None:
                return redact(text)
            self.key = [text[opened.start() :]]
            return redact(text[: opened.start()]) + "[PRIVATE_KEY]"
        closed = _CLOSED.match(text)
        if closed is None and len(self.key) < MAX_KEY_LINES:
            self.key.append(text)
            return "[PRIVATE_KEY]"
        block, self.key = self.key, None
        _count("private_key", "\n".join([*block, closed.group(0)] if closed else block))
        if closed is None:
            return self.line(text)
        return "[PRIVATE_KEY]" + self.line(text[closed.end() :])


def safe_json(data: Any, **dumps: Any) -> str:
    """`data` as JSON text (`json.dumps(data, **dumps)`) with its secrets and credentials replaced: the gate
    for what the engine writes as JSON that is no record model (`dump_line` is theirs): the desk's clinician
    queue, the collector's review queue, quarantine and signals."""
    text = json.dumps(data, **dumps)
    if contains_secret(text):
        text = json.dumps(redact(data), **dumps)
    return text


def redacted_record(record: M) -> M:
    """`record` as `dump_line` (record/folder.py) writes it: its secrets and credentials replaced (`redact`),
    or the same object when there is nothing to replace. What a judge model is shown (an external model too)
    and what its evidence quotes are checked against; the checks in code read what the bot said, so a
    `must_not_match` on `sk-` still fails when the bot says a key."""
    try:
        text = record.model_dump_json(exclude_none=True)
    except ValueError:  # lone surrogates: U+FFFD, as `dump_line` writes them
        data = repair_text(record.model_dump(mode="python", exclude_none=True, by_alias=True))
        text = type(record).model_validate(data).model_dump_json(exclude_none=True)
    if not contains_secret(text):
        return record
    return type(record).model_validate(redact(json.loads(text)))


def suite_secrets(suite: Suite, environ: dict[str, str] | None = None) -> set[str]:
    """Every secret value a run of `suite` could send somewhere, read from the environment now: what the
    suite's fields declare (config/secrets.py: a bot's headers, URLs and key variables, a started bot's
    ${VAR}s, each provider's key and base URL) and the providers' default key variables."""
    env = dict(os.environ) if environ is None else environ
    values = declared_secrets(suite, env)
    values.update(env[name] for name in DEFAULT_KEY_VARIABLES if name in env)
    return {v for v in values if len(v.strip()) >= MIN_SECRET_CHARS}


def redacted_suite(suite: Suite) -> Suite:
    """The suite as the manifest keeps it: each declared field in its record form (`${VAR}` templates kept,
    as they name a variable, not its value; literal header values and URL passwords and query values
    replaced by `[redacted]`)."""
    copy = suite.model_copy(deep=True)
    record_form(copy)
    return copy


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 and base64url text a secret's bytes produce wherever they sit inside a longer encoded
    value (`Basic base64(user:pass)`): for each of the three alignments, the characters only its bytes fix."""
    cores: set[str] = set()
    for offset in range(3):
        padded = b"\0" * offset + raw
        start, end = (offset * 4 + 2) // 3, len(padded) * 4 // 3
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            core = encode(padded).decode("ascii")[start:end]
            if len(core) >= 2 * MIN_SECRET_CHARS:
                cores.add(core)
    return cores


def _aligned_cores(raw: bytes, group: int, chars: int, encoders: Iterable[Any]) -> set[str]:
    """The text an encoding of `group`-byte blocks into `chars` characters (base32: 5 -> 8; base85: 4 -> 5)
    gives for a secret's bytes inside a longer value: for each alignment, the whole blocks only its bytes
    fill (base85 mixes a block's bytes into all its characters, so only whole blocks are fixed)."""
    cores: set[str] = set()
    for offset in range(group):
        padded = b"\0" * offset + raw
        first, last = -(-offset // group), len(padded) // group
        for encode in encoders:
            text = encode(padded[: last * group]).decode("ascii")
            core = text[first * chars : last * chars]
            if len(core) >= 2 * MIN_SECRET_CHARS:
                cores.add(core)
    return cores


def _base32_cores(raw: bytes) -> set[str]:
    """Base32 (either case) at any alignment: a character holds 5 bits, so the characters between the
    secret's first and last full bits are fixed by it alone."""
    cores: set[str] = set()
    for offset in range(5):
        padded = b"\0" * offset + raw
        start, end = -(-offset * 8 // 5), len(padded) * 8 // 5
        core = base64.b32encode(padded).decode("ascii")[start:end]
        if len(core) >= 2 * MIN_SECRET_CHARS:
            cores |= {core, core.lower()}
    return cores


def secret_forms(value: str) -> set[str]:
    """A secret as it may be echoed: as is, escaped inside JSON text (a bot that echoes its headers as JSON),
    percent-encoded (in a URL; either case of hex, every byte or only the unsafe ones), base64 and
    base64url (at any alignment), base32 and base85 (at any alignment), hex in either case, literal `\\uXXXX`
    escapes (either case), HTML-escaped or written as numeric entities; and each of those as it appears
    inside JSON text, and inside JSON text that is itself inside JSON text (a record of an echoed body). Encodings of encodings (base64 of gzip of hex, base32 of base64 ...) are found by decoding (`_encoded`)."""
    raw = value.encode("utf-8")
    forms = _plain_forms(value, raw)
    once = {json.dumps(form)[1:-1] for form in forms}  # in JSON text
    return forms | once | {json.dumps(form)[1:-1] for form in once}  # in JSON text inside JSON text


def _plain_forms(value: str, raw: bytes) -> set[str]:
    utf16 = value.encode("utf-16-be")
    units = [int.from_bytes(utf16[i : i + 2], "big") for i in range(0, len(utf16), 2)]
    return {
        "".join(f"\\u{unit:04x}" for unit in units),
        "".join(f"\\u{unit:04X}" for unit in units),
        *_base32_cores(raw),
        *_aligned_cores(raw, 4, 5, (base64.b85encode, base64.a85encode)),
        value,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1],
        quote(value, safe=""),
        re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(value, safe="")),
        "".join(f"%{b:02X}" for b in raw),
        "".join(f"%{b:02x}" for b in raw),
        raw.hex(),
        raw.hex().upper(),
        html.escape(value),
        "".join(f"&#{ord(c)};" for c in value),
        "".join(f"&#x{ord(c):x};" for c in value),
        "".join(f"&#x{ord(c):X};" for c in value),
        *_base64_cores(raw),
    }


def _add_variants(value: str) -> None:
    """A secret's variants, searched in the normalised view (any case, NFKC, format characters, whitespace
    and separators dropped): its body (without a known prefix such as `sk-proj-`) as it is, reversed and in
    ROT13, and its bytes in hex, base64 (any alignment), decimal and octal (a byte list or `\\163\\153`
    escapes shows as their digits once separators go). A body with digits and letters is random enough that
    any run of FRAGMENT_CHARS of it is searched too (a key split between two messages); not of its reversed
    or ROT13 forms, which would take three times the blocks (a third more time on every record line). A
    body shorter than MIN_VARIANT_CHARS or of few different characters has no variants."""
    body = secret_body(value)
    view = normalised(body)
    if len(view) < MIN_VARIANT_CHARS or len(set(view)) < 6:
        return
    random = sum(c.isdigit() for c in view) >= 2 and sum(c.isalpha() for c in view) >= 2
    _variants.add(view, pieces=random)
    _variants.add(view[::-1], pieces=False)
    _variants.add(codecs.encode(view, "rot13"), pieces=False)
    raw = body.encode("utf-8")
    numbers = ("".join(str(b) for b in raw), "".join(f"{b:03o}" for b in raw))
    for form in (raw.hex(), *numbers, *_base64_cores(raw)):
        _variants.add(normalised(form), pieces=False)


def register_secrets(values: Iterable[str]) -> None:
    """Add secret values for this process: from now on nothing written holds them, in any of their forms.
    A value registered before costs a set look-up (every hub and provider built registers what it reads)."""
    fresh = {v for v in values if v not in _registered and len(v.strip()) >= MIN_SECRET_CHARS}
    if not fresh:
        return
    _registered.update(fresh)
    known = set(_secrets)
    for value in fresh:
        known |= secret_forms(value)
        _add_variants(value)
    _TEXT_RUN[0] = re.compile(rb"[\x20-\x7e]{%d,}" % min(8, *map(len, _registered)))
    _secrets[:] = sorted(known, key=len, reverse=True)
    _run_verdicts.clear()
    _searched_texts.clear()
    _searched_short.clear()


def forget_secrets() -> None:
    """Forget every registered secret (for a program that runs several suites, and for tests)."""
    _registered.clear()
    _secrets.clear()
    _variants.clear()
    _run_verdicts.clear()
    for remembered in _credential_runs:
        remembered.clear()
    _searched_texts.clear()
    _searched_short.clear()
    _TEXT_RUN[0] = re.compile(rb"[\x20-\x7e]{8,}")


def contains_secret(text: str) -> bool:
    """Whether `text` (plain or JSON) holds a registered secret: a cheap check before any rewriting. Inside
    JSON text a secret appears escaped, which is one of its registered forms; a compressed blob is decoded."""
    if len(text) < _MIN_REMEMBERED_TEXT:
        short = _searched_short.get(text)
        if short is None:
            short = _searched(text)
            if len(_searched_short) >= _MAX_REMEMBERED_TEXTS:
                _searched_short.clear()
            _searched_short[text] = short
        return short
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    found = _searched_texts.get(key)
    if found is None:
        found = _searched(text)
        if len(_searched_texts) >= _MAX_REMEMBERED_TEXTS:
            del _searched_texts[next(iter(_searched_texts))]  # the oldest
        _searched_texts[key] = found
    return found


def _searched(text: str) -> bool:
    return (
        _holds(text)
        or bool(_secrets and _encoded(text))
        or _holds_credential(text)
        or any(_encoded_credentials(text))
    )


# What the last long texts searched held, by their digest, while the secrets stay the same (cleared when they
# change): a conversation's record is searched as written (`dump_line`) and again as each judge model is shown
# it (`redacted_record`: the criteria's judges, the fidelity audit, the outcome judge), the same JSON text
# three or four times. A 128-bit digest, not the text, so that remembering costs no memory worth counting.
_searched_texts: dict[bytes, bool] = {}
_MIN_REMEMBERED_TEXT = 1_000
_MAX_REMEMBERED_TEXTS = 4_096
# And the last short texts, by themselves (4,096 of under 1,000 characters): a simulated user's request holds every
# message of its conversation so far, each searched again at every turn before it is sent
# (providers/hub.py `redacted_request`); Python keeps a text's hash, so asking again costs a lookup
# (a message of 300 characters is searched in 10 to 90 us, with and without configured secrets).
_searched_short: dict[str, bool] = {}


def _holds(text: str, *, garbled: bool = False) -> bool:
    """Whether `text` holds a registered form of a secret as it is, or a variant in its normalised view
    (not searched in `garbled` text, bytes decoded from no UTF-8: the view of random bytes costs and finds
    nothing)."""
    if any(secret in text for secret in _secrets):
        return True
    return bool(_variants) and not garbled and _variants.found(normalised(text))


# A run of base64, base64url, base32 or hex long enough to hold an encoded secret (gzip adds 18 bytes), with
# up to 6 `=` of padding after it: `(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}+={0,6}`, found without `re`
# (`_blob_runs`): the text's bytes marked `1` for the alphabet and `0` for the rest (`bytes.translate`),
# and 24 ones looked for as a substring, in C (the expression, tried at each run of the alphabet, took 4
# times as long on a run's record lines).
_BLOB_MARKS = bytes(
    ord("1") if chr(b) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-" else ord("0")
    for b in range(256)
)
_BLOB_START = b"1" * 24
_MAX_INFLATED = 4_000_000  # bytes a blob may inflate to while it is searched (a bomb stops here)
_MAX_DEPTH = 3  # encodings inside encodings searched (base64 of gzip of hex is three)
_HEX = re.compile(r"[0-9a-fA-F]+")
_BASE32 = re.compile(r"[A-Z2-7]+=*|[a-z2-7]+=*")
# Decoded bytes worth searching hold a run of printable text as long as the shortest secret (at most 8):
# a secret, or an encoding of one, is text; random ids decode to bytes that are not.
_TEXT_RUN = [re.compile(rb"[\x20-\x7e]{8,}")]


def _stream_bits(data: bytes) -> int | None:
    """zlib's `wbits` for `data` when it starts as a gzip or zlib stream does, else None."""
    if data[:2] == b"\x1f\x8b":
        return 16 + zlib.MAX_WBITS
    if len(data) > 1 and data[0] & 0x0F == 8 and int.from_bytes(data[:2], "big") % 31 == 0:
        return zlib.MAX_WBITS
    return None


def _inflated(data: bytes) -> bytes:
    """`data`, inflated when it is a gzip or zlib stream (at most _MAX_INFLATED bytes of it)."""
    wbits = _stream_bits(data)
    if wbits is None:
        return data
    inflated = _inflates(data, wbits)
    return data if inflated is None else inflated


def _inflates(data: bytes, wbits: int) -> bytes | None:
    """The gzip or zlib stream `data` inflated (at most _MAX_INFLATED bytes), or None when it is damaged.

    A stream whose end only is spoilt is read: an encoding read on into what follows it (ascii85 into the
    next member of compact JSON, `","next":`) decodes its last group wrong, and that group is the stream's
    checksum; its body is read again as raw deflate, which checks no trailer."""
    try:
        return zlib.decompressobj(wbits).decompress(data, _MAX_INFLATED)
    except zlib.error:
        pass
    body = _deflate_body(data, wbits)
    if body is not None:
        with contextlib.suppress(zlib.error):
            return zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, _MAX_INFLATED)
    return None


def _deflate_body(data: bytes, wbits: int) -> bytes | None:
    """The deflate data of a zlib or gzip stream (RFC 1950, 1952), past its header; None when the header is
    cut off or asks for a preset dictionary."""
    if wbits == zlib.MAX_WBITS:
        return None if data[1] & 0x20 else data[2:]
    flags, at = data[3] if len(data) > 3 else 0, 10
    try:
        if flags & 0x04:  # FEXTRA: a length, then that many bytes
            at += 2 + int.from_bytes(data[at : at + 2], "little")
        for flag in (0x08, 0x10):  # FNAME, FCOMMENT: zero-terminated
            if flags & flag:
                at = data.index(0, at) + 1
    except ValueError:
        return None
    at += 2 if flags & 0x02 else 0  # FHCRC
    return data[at:] if at < len(data) else None


def _blob_runs(text: str) -> list[str]:
    """Each run of `text` of at least 24 characters of the base64, base64url and hex alphabets, with
    the `=` (at most 6) after it. The last text's are kept: a text is searched for a configured secret's
    encodings, then for a credential's (`_searched`)."""
    last = _last_runs[0]
    if last[0] is text:
        return last[1]
    runs = _runs_of_alphabet(text)
    _last_runs[0] = (text, runs)
    return runs


_last_runs: list[tuple[str, list[str]]] = [("", [])]


def _runs_of_alphabet(text: str) -> list[str]:
    raw = text.encode("utf-8", "surrogatepass")
    marks = raw.translate(_BLOB_MARKS)
    at = marks.find(_BLOB_START)
    runs: list[str] = []
    while at >= 0:
        start = marks.rfind(b"0", 0, at) + 1
        end = marks.find(b"0", at)
        end = len(raw) if end < 0 else end
        after = raw[end : end + 6]
        runs.append(raw[start : end + len(after) - len(after.lstrip(b"="))].decode("ascii"))
        at = marks.find(_BLOB_START, end)
    return runs


def _decodings(blob: str) -> Iterable[bytes]:
    """The bytes `blob` may encode, at every alignment it may sit at inside a longer value: as hex, as
    base32 (either case) and as base64 or base64url."""
    body = blob.rstrip("=")
    if _HEX.fullmatch(body):
        for start in (0, 1):
            part = body[start:]
            yield bytes.fromhex(part[: len(part) // 2 * 2])
    if _BASE32.fullmatch(blob):
        for start in range(8):
            with contextlib.suppress(ValueError):
                yield base64.b32decode(_padded(body[start:].upper(), 8, (2, 4, 5, 7)))
    altchars = b"-_" if "-" in body or "_" in body else None
    for start in range(4):
        with contextlib.suppress(ValueError):
            yield base64.b64decode(_padded(body[start:], 4, (2, 3)), altchars=altchars)


# A run of base85 (Python's and git's alphabet) or ascii85 (`!` to `u`, `z` for four zero bytes) holding a
# character that neither base64 nor JSON's punctuation (braces and backslashes included) uses: base85 of 20
# bytes has one but for a chance in 300, of 36 bytes (a gzip'd key) in 20,000. So base64 (a data URL's
# megabytes) and a record's JSON text are not decoded again as base85. Found in two steps in C: the runs of
# printable characters without a space that hold such a character, then within each, the runs of each
# alphabet that do (each match starts where a run starts and never backtracks, so the scan is linear).
_PRINTABLE_RUN = re.compile(r"[!-~]{25,}")
_RARE = re.compile(r"[!#$%&'()*;<=>?@^`|~]")
_BASE85 = re.compile(
    r"(?<![0-9A-Za-z!#$%&()*+;<=>?@^`{|}~_-])[0-9A-Za-z+{}_-]*+[!#$%&()*;<=>?@^`|~][0-9A-Za-z!#$%&()*+;<=>?@^`{|}~_-]*+"
)
_ASCII85 = re.compile(r"(?<![!-uz])[\"+,\-./0-9:A-Z\[\\\]_a-uz]*+[!#$%&'()*;<=>?@^`][!-uz]*+")
_MIN_BASE85 = 25
_JSON_ESCAPE = re.compile(r'\\(["\\])')
# A printable run longer than this (a data URL's megabytes of base64, say) is not searched for base85: its
# runs of the alphabet would be decoded in Python, run by run (a stated limit, docs/records.md).
_MAX_BASE85 = 65_536
# Base85's decoder is Python's, and most runs of its alphabet are no base85 (compact JSON is ascii85's
# alphabet from end to end): a run is decoded whole only where its first 80 bytes look like what an
# encoding of a secret holds, text or a compressed stream.
_PROBE_CHARS = 100


def _base85_runs(text: str) -> Iterable[tuple[str, str, Callable[[], Iterable[bytes]]]]:
    """Each base85 or ascii85 run of `text`, its alphabet's name, and how to get the bytes it encodes: from
    each of the five places its encoding may start (5 characters are 4 bytes) whose first bytes are text or
    a compressed stream; a stream may start a few blocks in (`token=` or `key:` is of the same alphabet)."""
    for printable in _PRINTABLE_RUN.finditer(text):
        run = printable.group(0)
        if len(run) > _MAX_BASE85 or _RARE.search(run) is None:
            continue
        yield from _runs_of(run)
        for _ in range(2):  # ascii85 inside JSON text has its `"` and `\` escaped; in JSON inside JSON, twice
            if "\\" not in run:
                break
            run = _JSON_ESCAPE.sub(r"\1", run)
            yield from _runs_of(run)


def _runs_of(printable: str) -> Iterable[tuple[str, str, Callable[[], Iterable[bytes]]]]:
    for name, pattern, decode in (
        ("base85", _BASE85, base64.b85decode),
        ("ascii85", _ASCII85, base64.a85decode),
    ):
        for match in pattern.finditer(printable):
            run = match.group(0)
            if len(run) < _MIN_BASE85 or not _looks_random(run):
                continue
            yield run, name, functools.partial(_base85_data, run, decode)
            if name == "ascii85" and '"' in run:
                for part in _json_strings(run):
                    if _looks_random(part):
                        yield part, name, functools.partial(_base85_data, part, decode)


# A JSON string's quote: one after no backslash or after an even number of them (escaped backslashes).
_STRING_QUOTE = re.compile(r'(?<!\\)(?:\\\\)*"')


def _between_quotes(run: str) -> Iterator[str]:
    """The texts of `run` between its JSON string quotes (backslashes before a quote kept: they are text)."""
    start = 0
    for mark in _STRING_QUOTE.finditer(run):
        yield run[start : mark.end() - 1]
        start = mark.end()
    if start:
        yield run[start:]


def _json_strings(run: str) -> Iterator[str]:
    """The texts of the JSON strings an ascii85 run holds, long enough to be base85, escapes undone (JSON in
    JSON: twice). Ascii85's alphabet holds `"`, `,` and `:`, so a run in a record reads on into its
    neighbours (`"t":"<ascii85>","role":"bot"`), whose characters spoil its last group (the checksum of a
    compressed stream) or make a group no decoder takes; even a closing quote alone spoils 3 lengths in 4."""
    for part in _between_quotes(run):
        if len(part) < _MIN_BASE85:
            continue
        yield part
        for _ in range(2):
            if "\\" not in part:
                break
            part = _JSON_ESCAPE.sub(r"\1", part)
            yield part
            if '"' in part:
                yield from _json_strings(part)
                break


def _base85_data(run: str, decode: Callable[[str], bytes]) -> Iterable[bytes]:
    for start in range(5):
        try:
            starts = _worth_decoding(decode(run[start : start + _PROBE_CHARS]))
            data = decode(run[start:]) if starts else b""
        except ValueError:
            continue
        for skip in starts:
            yield data[skip:]


def _looks_random(run: str) -> bool:
    """Whether `run` uses as many different characters as base85 of compressed or encoded bytes does (85
    equally likely): at least 3/4 of what n such characters show on average. Words and JSON show far fewer
    (`"index":0,"role":"user"` 15 in 24, against 21 of random base85), and a run that is not random is not
    decoded at all: the probe below is Python, this check is not."""
    expected = 85 * (1 - (84 / 85) ** min(len(run), 400))
    return len(set(run[:400])) >= 0.75 * expected


def _worth_decoding(probe: bytes) -> list[int]:
    """Where in `probe` (a run's first bytes) the bytes are worth searching: 0 when they start as printable
    UTF-8 text, and each 4-byte block among the first 16 where a gzip or zlib stream starts that inflates
    without an error. Bytes decoded from what is no base85 are neither, but for a chance in millions."""
    found = [0] if _starts_as_text(probe) else []
    for block in range(0, min(len(probe) - 1, 64), 4):
        wbits = _stream_bits(probe[block:])
        if wbits is not None and _inflates(probe[block:], wbits) is not None:
            found.append(block)
    return found


_PRINTABLE_ASCII = re.compile(rb"[\x20-\x7e\t\n\r]+")


def _starts_as_text(probe: bytes) -> bool:
    """Whether the first 16 bytes of `probe` (what a run decodes to) are printable UTF-8 text (a character
    cut at their end aside): 16 random bytes are, but for a chance in millions."""
    head = probe[:16]
    if _PRINTABLE_ASCII.fullmatch(head):
        return True
    if not head or head.isascii():
        return False
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head)
    except UnicodeDecodeError:
        return False
    return bool(text) and all(c.isprintable() or c in "\t\n\r" for c in text)


def _padded(part: str, group: int, endings: tuple[int, ...]) -> str:
    """`part` as a whole number of `group`-character blocks: a last partial block that can end an
    encoding padded with '=', another cut off (its bits belong to no whole byte)."""
    extra = len(part) % group
    if extra == 0:
        return part
    if extra in endings:
        return part + "=" * (group - extra)
    return _padded(part[: len(part) - 1], group, endings)


def _as_text(data: bytes) -> str | None:
    """Decoded bytes as text to search: UTF-8 text, or bytes holding a printable run as long as the shortest
    secret; None for bytes that are no text (random ids decode so), where nothing can be found. UTF-16's byte
    order mark is dropped: its NULs are dropped by the normalised view."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        data = data[2:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace") if _TEXT_RUN[0].search(data) else None


def _encoded(text: str, depth: int = 0) -> list[str]:
    """The runs of `text` that decode (hex, base32, base64, base85, ascii85; then gzip or zlib when
    compressed) to text holding a secret, in any registered form or encoded again, up to _MAX_DEPTH
    encodings deep: a search for the secret through whatever a tool or bot combined, instead of a list of
    combinations. The whole run is the secret's encoding, and is replaced whole."""
    found: list[str] = []
    blobs: Iterable[tuple[str, str, Callable[[], Iterable[bytes]]]] = (
        (run, "blob", functools.partial(_decodings, run)) for run in _blob_runs(text)
    )
    # Decoded bytes that were no UTF-8 (U+FFFD where they failed) are searched as they are, but not for
    # base85 inside them: an encoding inside an encoding decodes to text.
    garbled = depth > 0 and "\ufffd" in text
    base85 = () if garbled else _base85_runs(text)
    for run, alphabet, decoded in itertools.chain(blobs, base85):
        if run not in found and _run_holds(run, alphabet, depth, decoded):
            found.append(run)
    return found


# What each run searched decoded to, while the secrets stay the same (cleared when they change): a run's
# records repeat the same hashes and ids on every line (a judge set's sha256 on each verdict, a scenario id
# in each record), and decoding each again at its every alignment was most of the search's cost.
_run_verdicts: dict[tuple[str, str, int], bool] = {}
_MAX_REMEMBERED = 16_384


def _run_holds(run: str, alphabet: str, depth: int, decoded: Callable[[], Iterable[bytes]]) -> bool:
    key = (run, alphabet, depth)
    verdict = _run_verdicts.get(key)
    if verdict is None:
        verdict = any(_data_holds(data, depth) for data in decoded())
        if len(_run_verdicts) >= _MAX_REMEMBERED:
            _run_verdicts.clear()
        _run_verdicts[key] = verdict
    return verdict


def _data_holds(data: bytes, depth: int) -> bool:
    inner = _as_text(_inflated(data))
    if inner is None:
        return False
    # UTF-16 (hex or base64 of it) decodes to text with NULs, which the normalised view drops.
    return _holds(inner, garbled="\ufffd" in inner) or (
        depth + 1 < _MAX_DEPTH and bool(_encoded(inner, depth + 1))
    )


# Credentials of a well-known format that the engine was never configured with, inside a run of base64,
# base64url or hex (a config, a header or a token pasted encoded: `Basic <base64 of "user:sk-...">`): a run
# of at most _MAX_CREDENTIAL_RUN characters is decoded when, at one of its alignments, its first bytes are
# printable text (`_starts_as_text`, tried on a probe of its first characters), and the text is searched as
# plain text is (`_holds_credential`), encodings inside it too. Hashes, ids and images decode to bytes that
# are no text: each costs a probe per alignment, once while it is remembered.
_MAX_CREDENTIAL_RUN = 65_536
_PROBE_HEX, _PROBE_BASE64 = 32, 24  # characters probed: 16 and 18 bytes
_BASE64URL = bytes.maketrans(b"-_", b"+/")  # base64url read as base64
# What each run searched held, at each depth: its credential's label and the text it decoded to, or None.
_credential_runs: list[dict[str, tuple[str, str] | None]] = [{} for _ in range(_MAX_DEPTH)]


def _encoded_credentials(text: str, depth: int = 0) -> Iterator[tuple[str, str, str]]:
    """The runs of `text` that decode (hex, base64, base64url) to text holding a credential: each run, the
    label of the first credential in it and the text it decoded to."""
    for run in _blob_runs(text):
        if len(run) <= _MAX_CREDENTIAL_RUN and (held := _run_credential(run, depth)) is not None:
            yield run, *held


def _run_credential(run: str, depth: int) -> tuple[str, str] | None:
    remembered = _credential_runs[depth]
    if run in remembered:
        return remembered[run]
    held = None
    for data in _text_decodings(run):
        text = data.decode("utf-8", "replace")
        label = _credential_label(text)
        if label is None and depth + 1 < _MAX_DEPTH:
            label = next((inner[1] for inner in _encoded_credentials(text, depth + 1)), None)
        if label is not None:
            held = (label, text)
            break
    if len(remembered) >= _MAX_REMEMBERED:
        remembered.clear()
    remembered[run] = held
    return held


def _text_decodings(run: str) -> Iterator[bytes]:
    """The bytes `run` encodes as hex, else as base64 or base64url, at each alignment whose first bytes are
    text (`_decodings` decodes every alignment whole, and base32 too: the search for a known secret). A run
    of hex digits alone (a digest) is read as hex only: base64 of text is hex digits alone but for a chance
    in millions."""
    body = run.rstrip("=")
    if _HEX.fullmatch(body):
        for start in (0, 1):
            part = body[start:]
            part = part[: len(part) // 2 * 2]
            if _starts_as_text(bytes.fromhex(part[:_PROBE_HEX])):
                yield bytes.fromhex(part)
        return
    data = body.encode("ascii").translate(_BASE64URL)
    for start in range(4):
        with contextlib.suppress(binascii.Error):
            if _starts_as_text(binascii.a2b_base64(data[start : start + _PROBE_BASE64])):
                yield binascii.a2b_base64(
                    _padded(body[start:], 4, (2, 3)).encode("ascii").translate(_BASE64URL)
                )


def _credential_label(text: str) -> str | None:
    """The label of the first credential `text` (plain or JSON) holds: of a well-known format, else a value
    under a credential's name; None when it holds none."""
    if not _holds_credential(text):
        return None
    for searched in (text, _JSON_SPACE.sub(" ", text)):
        found = next(_credentials_in(searched), None)
        if found is not None:
            return str(found.lastgroup)
    labels: list[str] = []
    without_secret_pairs(text, lambda label, _value: labels.append(label))
    return labels[0] if labels else None


def _without_encoded_credentials(text: str) -> str:
    """`text` with each run that encodes a credential (`_encoded_credentials`) replaced whole by its label's
    placeholder (`[API_KEY]`); each credential inside is counted as it would be written plainly."""
    for run, label, decoded in list(_encoded_credentials(text)):
        text = text.replace(run, f"[{label.upper()}]")
        if _without_credentials(decoded) == decoded:  # counts what it replaces; else found deeper
            _count(label, run)
    return text


def _without_variants(text: str) -> str:
    """`text` with each run of the normalised view that is a secret's variant replaced by `[redacted]`, in
    `text` from the first to the last character of the run."""
    if not _variants.found(normalised(text)):
        return text
    view, starts, ends = normalised_with_origins(text)
    runs = _variants.runs(view)
    if not runs:
        # Found in the view of the whole text but not in the one built character by character (NFKC joined
        # a letter and a combining mark): where the variant lies in `text` is not known, so all of it goes.
        return REDACTED
    for start, end in reversed(runs):
        text = text[: starts[start]] + REDACTED + text[ends[end - 1] :]
    return text


def redact_text(text: str) -> str:
    """`text` with every registered secret replaced (the response cache stores answers through this)."""
    return redact(text) if contains_secret(text) else text


def redact(value: Any) -> Any:
    """`value` with every registered secret replaced by `[redacted]` and every credential of a well-known
    format by its typed placeholder (`[API_KEY]`), recursively through dicts (keys too) and lists; anything
    that is not text is returned as it is."""
    if isinstance(value, str):
        # The known values first: a configured key keeps `[redacted]` (and its prefix), never a format's label.
        if _secrets:
            for blob in _encoded(value):
                value = value.replace(blob, REDACTED)
            for secret in _secrets:
                if secret in value:
                    value = value.replace(secret, REDACTED)
            value = _without_variants(value) if _variants else value
        return _without_encoded_credentials(_without_credentials(value))
    if isinstance(value, dict):  # a value under a credential's name is replaced whole (secret_keys.py)
        return redact_mapping(value, redact, _count)
    if isinstance(value, list | tuple):
        if _variants and len(value) >= MIN_VARIANT_CHARS and all(type(v) is int for v in value):
            # A list of byte values (a tool's argument, a state) is the digits the view of its JSON shows.
            return REDACTED if _holds(",".join(map(str, value))) else list(value)
        return [redact(v) for v in value]
    return value
