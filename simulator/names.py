"""A person's name as given on the command line or at the desk (`unseal --by`, `labels import --labeller`,
a reviewer): recorded in the run folder and printed back on terminals, so it must be text a person reads.

`person_name` collapses whitespace and refuses, with one line naming the flag, a name holding a control or
format character (an escape sequence `\\x1b]52;...` that would write the reader's clipboard, a bidi
override that reorders what they see) or longer than a name can be; it never stores the raw bytes.
"""

from __future__ import annotations

__all__ = ["person_name"]

import unicodedata

from simulator.errors import UserError

MAX_NAME_CHARS = 200


def person_name(value: str, flag: str) -> str:
    """`value` with its whitespace collapsed; UserError naming `flag` when it is empty, too long or holds a
    control or format character."""
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cf") and char not in " \t":
            code = ord(char)
            shown = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
            raise UserError(
                f"{flag}: the name holds a control character ({shown}); give a plain name, e.g. {flag} dr-smith"
            )
    name = " ".join(value.split())
    if not name:
        raise UserError(f"{flag} needs a name, e.g. {flag} dr-smith")
    if len(name) > MAX_NAME_CHARS:
        raise UserError(f"{flag}: a name of {len(name):,} characters; give at most {MAX_NAME_CHARS}")
    return name
