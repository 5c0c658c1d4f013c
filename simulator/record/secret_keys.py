"""Secrets held under a name that says so: the value of a key or field named as a credential
(`{"password": "hunter2"}`, `"apiKey": "..."`, `client_secret: ...`, `token=...&user=x`, `{'pin': 1234}`),
whatever its format. `record.redact` (every run-record line, `bot.log`, the reports) and the import and
collect redactor (traces/redact.py) replace each by its label's placeholder (`"password": "[PASSWORD]"`,
the scheme of an Authorization value kept: `Basic [TOKEN]`), in data (a dict's value under such a key:
`redact_mapping`) and in text (`secret_pairs`: JSON, JSON inside a JSON string at any of three depths of
escaping, a Python dict's repr, YAML, a form or a query string, a header line).

A name is a credential's when its last word, case and `-`/`_`/`.`/camelCase aside, is one (`secret_name`):
`password`, `client_secret`, `apiKey`, `X-Api-Key`, `access_token`, `Authorization`; not `max_tokens`,
`token_count`, `prompt_tokens` or `key`. A value is kept when it is empty, a boolean, null, already a
placeholder or a `${VAR}` template (it names a variable); a number only counts under a PIN's name (`pin`,
`passcode`, `otp`, `cvv`): under another one it is a count (the manifest's `redacted: {"password": 1}`).
"""

from __future__ import annotations

__all__ = [
    "NAMED_LABELS",
    "NAMED_VALUE",
    "holds_secret_pair",
    "redact_mapping",
    "secret_name",
    "without_secret_pairs",
]

import functools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

# What follows "password is" in ordinary talk about passwords: not a password.
_NOT_A_PASSWORD = (
    "not|incorrect|wrong|invalid|required|expired|too|correct|weak|strong|the|a|an|my|your|its|case|reset"
    "|changed|set|empty|missing|being|still|now|same|different|saved|stored|hidden|secret|needed|ok|fine"
)
_PLACEHOLDER = r"\[(?:redacted|[A-Z][A-Z_]*)\]"  # `[redacted]`, `[PASSWORD]`, `[EMAIL]` (traces/redact.py)
# A value said after a credential's name without quotes (`password: hunter2`, `passwd=x&user=y`): 4 to 128
# characters up to a space or a quote, and before the next field of a form (`&name=`) or a `,;)]}'` that
# ends it (`{password: hunter2}`, `hunter2, thanks`); inside, those characters are the value's. Not a
# placeholder already there (redacting twice changes nothing) nor a word of talk about passwords. A
# backslash is taken with the character it escapes, and never before a quote: replaced inside JSON text,
# it leaves no half an escape.
NAMED_VALUE = (
    rf"(?!{_PLACEHOLDER})(?i:(?!(?:{_NOT_A_PASSWORD})(?![^\s\"\\,;.!?)}}\]&']))"
    r"(?:[^\s\"\\&,;)}\]']|&(?![\w.%\[\]-]+=)|[,;)}\]'](?![\s\"\\,;)}\]&']|$)|\\[^\s\"]){4,128})"
)


class SecretName(NamedTuple):
    """What a credential's name holds: its label, and whether a number under it is one (a PIN)."""

    label: str
    numbers: bool = False


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s_.\-]+")
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.\- ]{1,64}")
# How a name's last word ends (`password`, `dbpassword`, `clientsecret`, `accesstoken`), by label; a name
# ending in `key` is a credential's after a word of one of _KEY_KINDS (`api_key`, `x-api-key`, `privateKey`).
_ENDINGS = {
    "password": ("password", "passwords", "passwd", "passphrase", "pwd"),
    "secret": ("secret", "secrets", "credential", "credentials"),
    "token": ("token", "authorization", "auth", "cookie", "cookies", "jwt"),
}
_PIN_WORDS = ("pin", "otp", "totp", "hotp", "cvv", "cvc")  # the whole last word: not `spin`
_PIN_ENDINGS = ("pincode", "passcode")
_KEY_KINDS = {
    "api": "api_key",
    "access": "api_key",
    "client": "api_key",
    "app": "api_key",
    "subscription": "api_key",
    "auth": "api_key",
    "private": "private_key",
    "signing": "private_key",
    "secret": "secret",
    "encryption": "secret",
    "master": "secret",
}
# Every label a value under a credential's name is replaced by (`[PASSWORD]` for a PIN too).
NAMED_LABELS = frozenset({*_ENDINGS, *_KEY_KINDS.values()})


@functools.lru_cache(maxsize=4096)
def secret_name(key: str) -> SecretName | None:
    """The credential `key` names (`password`, `clientSecret`, `X-Api-Key`, `access_token`,
    `Authorization`), or None (`max_tokens`, `token_count`, `key`, `author`): by its last word, digits
    after it aside (`token2`), so that a name the search of a text finds (`_NAME_ENDS`) is judged the same."""
    if not _NAME_CHARS.fullmatch(key):
        return None
    words = _SEPARATORS.split(_CAMEL.sub(" ", key).lower().strip(" _.-"))
    last = words[-1].rstrip("0123456789")
    if last in _PIN_WORDS or last.endswith(_PIN_ENDINGS):
        return SecretName("password", numbers=True)
    for label, endings in _ENDINGS.items():
        if last.endswith(endings):
            return SecretName(label)
    if last.endswith("key"):
        kind = last[:-3] or (words[-2] if len(words) > 1 else "")
        return next((SecretName(label) for word, label in _KEY_KINDS.items() if kind.endswith(word)), None)
    return None


# A value left as it is: empty, a placeholder (the scheme or a key's prefix before it kept: `Bearer [TOKEN]`,
# `sk-proj-[redacted]`), or a text naming a `${VAR}` (a template the manifest keeps: config/secrets.py).
_KEPT = re.compile(
    rf"\s*|(?:[A-Za-z]+\s+)?(?:[A-Za-z0-9]+[-_])*{_PLACEHOLDER}|.*\$\{{[A-Za-z_]\w*\}}.*", re.S
)
_SCHEME = re.compile(r"(?i:basic|bearer|digest|token|negotiate|ntlm) +(?=\S)")


def _placeholder(name: SecretName, value: str) -> tuple[str, str] | None:
    """The placeholder for a text `value` under a credential's name, and the secret it replaces (None when
    the value is kept)."""
    if _KEPT.fullmatch(value):
        return None
    scheme = _SCHEME.match(value)
    kept = scheme.group(0) if scheme else ""
    return f"{kept}[{name.label.upper()}]", value[len(kept) :]


def redact_mapping(
    mapping: dict[Any, Any], inner: Callable[[Any], Any], count: Callable[[str, str], None]
) -> dict[Any, Any]:
    """`mapping` as a redactor writes it: its keys and values through `inner` (the redactor's own search),
    and under a key that names a credential, each text (a list's items too) and each number under a PIN's
    name replaced by the placeholder and counted (`count(label, secret)`)."""
    return {
        inner(key): inner(value)
        if type(key) is not str or secret_name(key) is None
        else _named(key, value, inner, count)
        for key, value in mapping.items()
    }


def _named(key: str, value: Any, inner: Callable[[Any], Any], count: Callable[[str, str], None]) -> Any:
    name = secret_name(key)
    assert name is not None
    if isinstance(value, list | tuple):  # a list of texts and numbers: each item, as in text
        if all(isinstance(item, str | int | float) and not isinstance(item, bool) for item in value):
            return [_named(key, item, inner, count) for item in value]
        return inner(value)
    value = inner(value)
    if isinstance(value, str):
        found = _placeholder(name, value)
    elif isinstance(value, int | float) and not isinstance(value, bool) and name.numbers:
        found = (f"[{name.label.upper()}]", str(value))
    else:
        return value
    if found is None:
        return value
    count(name.label, found[1])
    return found[0]


class Found(NamedTuple):
    """A value under a credential's name in a text: where it is, its label, the secret and what replaces it."""

    start: int
    end: int
    label: str
    secret: str
    replacement: str


def _bodies() -> dict[str, re.Pattern[str]]:
    """A quoted text for each quote a key may have: `"` (JSON), `\\"` (JSON inside a JSON string), `\\\\\\"`
    (one level deeper) and `'` (a Python repr), its body a group. Each escape of the body's level is taken
    whole, so the quote that closes it is the first one of its level."""
    found = {}
    quote, slash, char = '"', r"\\", r'[^"\\]'
    for level in ('"', '\\"', '\\\\\\"'):
        found[level] = re.compile(rf"{quote}((?:{char}|{slash}(?:{char}|{quote}|{slash}))*+){quote}")
        quote, slash, char = f"{slash}{quote}", f"{slash}{slash}", rf"(?:{char}|{slash}{char})"
    found["'"] = re.compile(r"'((?:[^'\\]|\\[\s\S])*+)'")
    return found


_QUOTED = _bodies()


def _trie(words: list[str]) -> str:
    """A regular expression for any of `words`, as a tree of their letters: each branch starts with its
    own letter, so a position where none starts costs one look at a letter each."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for letter in word:
            node = node.setdefault(letter, {})
        node[""] = {}

    def branches(node: dict[str, Any]) -> str:
        alternatives = [
            re.escape(letter) + branches(child) for letter, child in sorted(node.items()) if letter
        ]
        if not alternatives:
            return ""
        either = "(?:" + "|".join(alternatives) + ")"
        return either + "?" if "" in node else either if len(alternatives) > 1 else alternatives[0]

    return branches(tree)


# Where a name ending as a credential's (_ENDINGS, _PIN_*, `key`) is followed by a separator, searched in
# the lowercased text reversed: each search starts with a literal (`:`, `=`), which `re` finds quickly,
# then reads what may close a name (digits, a quote, backslashes, spaces: `"name":`, `\"name\":` at any
# depth of escaping, `'name':`, `name: `, `name:`) and the name's ending backwards, as a tree (a search for
# the names forwards tries each at every position, several times slower; a lookbehind must have a fixed
# width). `name=` and `name = ` only in a text holding `=`. The whole name and its value are read
# forwards (_values).
_REVERSED_NAMES = _trie(
    sorted(
        {e[::-1] for e in (*(e for es in _ENDINGS.values() for e in es), *_PIN_WORDS, *_PIN_ENDINGS, "key")}
    )
)
_NAME_ENDS = (
    (":", re.compile(f""":[0-9\\\\"' ]*+{_REVERSED_NAMES}""")),
    ("=", re.compile(f"= ?[0-9]*+{_REVERSED_NAMES}")),
)
_NAME_END = re.compile(r"[a-z0-9]*")  # the rest of a name, forwards from its ending
_KEY_CHAR = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_SPACE = re.compile(r"(?:[ \t\r\n]|\\{1,7}[nrt])*+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
_BARE = re.compile(NAMED_VALUE)
_OPEN = re.compile(r"""\\{0,7}["']""")


def _skip(text: str, pos: int, run: re.Pattern[str] = _SPACE) -> int:
    """Where the `run` at `pos` ends (whitespace, escaped whitespace of JSON text too)."""
    found = run.match(text, pos)
    return found.end() if found else pos


def _lowered(text: str, low: str | None = None) -> str:
    """`text` in lower case (`low`, when given), one character for each of its own (U+0130 alone lowers
    to two)."""
    low = text.lower() if low is None else low
    return low if len(low) == len(text) else text.replace("\u0130", "I").lower()


def secret_pairs(text: str, low: str | None = None) -> Iterator[Found]:
    """Each value under a credential's name in `text`, in order, none inside another (`low`: the text in
    lower case, when the caller has it)."""
    low = _lowered(text, low)
    done = 0
    for at, pos in _name_ends(text, low):
        if at >= done:
            for found in _values(text, low, at, pos):
                done = found.end
                yield found


def holds_secret_pair(text: str, low: str | None = None) -> bool:
    """Whether `text` holds a value under a credential's name (`secret_pairs`, without starting one when
    no name ends before a separator: the common case allocates nothing the garbage collector tracks)."""
    if ":" not in text and "=" not in text:  # no separator, no name before a value (found at C speed)
        return False
    low = _lowered(text, low)
    return bool(_name_ends(text, low)) and next(secret_pairs(text, low), None) is not None


def without_secret_pairs(text: str, count: Callable[[str, str], None]) -> str:
    """`text` with each value under a credential's name replaced (`count(label, secret)` for each)."""
    if (":" not in text and "=" not in text) or not holds_secret_pair(text):  # most texts: one look
        return text
    pieces, end = [], 0
    for found in secret_pairs(text):
        count(found.label, found.secret)
        pieces += [text[end : found.start], found.replacement]
        end = found.end
    return "".join([*pieces, text[end:]])


def _name_ends(text: str, low: str) -> Sequence[tuple[int, int]]:
    """Where each name ending as a credential's starts and where the separator after it ends, in order."""
    if ":" not in text and "=" not in text:
        return ()
    back = low[::-1]
    for sep, names in _NAME_ENDS:
        if sep in low and names.search(back) is not None:
            break
    else:
        return ()
    # Backwards, a match runs from the separator to the start of the name's ending.
    size = len(text)
    return sorted(
        (size - m.end(), size - m.start())
        for sep, names in _NAME_ENDS
        if sep in low
        for m in names.finditer(back)
    )


def _values(text: str, low: str, at: int, pos: int) -> Iterator[Found]:
    """The values after the separator that ends at `pos`, under the name whose ending starts at `at`, if
    the whole name is a credential's and a value follows it."""
    key_end = _skip(low, at, _NAME_END)
    quote = text[key_end : pos - 1].strip(" ")  # `"`, `\"`, `'` or nothing
    start = at
    while start > 0 and (low[start - 1] in _KEY_CHAR or (quote and low[start - 1] == " ")):
        start -= 1
        if at - start > 64:  # no name is this long: a run of text, not a key
            return
    if quote:
        if quote not in _QUOTED or text[pos - 1] != ":" or not _opens(text, start, quote):
            return
    elif start > 0 and text[start - 1] == "\\":  # a name after an escape (`\npassword: x`)
        if low[start] not in "nrt":
            return
        start += 1
    else:
        start = _with_kind(low, start)
    name = secret_name(text[start:key_end])
    if name is None or text.startswith(("=", ">", ":", "//"), pos):  # `token == x`, `auth://`
        return
    pos = _skip(text, pos)
    if quote:
        yield from _quoted_values(text, pos, quote, name)
    else:
        yield from _said_value(text, pos, name)


def _opens(text: str, start: int, quote: str) -> bool:
    """Whether `quote` opens the key that starts at `start` (and is not itself escaped)."""
    before = start - len(quote)
    return before >= 0 and text.startswith(quote, before) and (before == 0 or text[before - 1] != "\\")


def _with_kind(low: str, start: int) -> int:
    """Where an unquoted name starts when a word of a key's kind goes before it (`API key:`, `access key=`)."""
    if start >= 2 and low[start - 1] == " ":
        word = start - 1
        while word > 0 and low[word - 1].isalpha():
            word -= 1
        if low[word : start - 1] in _KEY_KINDS and (word == 0 or low[word - 1] not in _KEY_CHAR):
            return word
    return start


def _quoted_values(text: str, pos: int, quote: str, name: SecretName) -> Iterator[Found]:
    """The value after a quoted name: a text in the same quotes, a number (a PIN's), or a list of them."""
    if not text.startswith("[", pos):
        value = _quoted_value(text, pos, quote, name)
        if value is not None and value[0].replacement:
            yield value[0]
        return
    found, pos = [], _skip(text, pos + 1)
    while (value := _quoted_value(text, pos, quote, name)) is not None:
        found.append(value[0])
        pos = _skip(text, value[1])
        if text.startswith("]", pos):  # a list of texts and numbers, each item replaced
            yield from (item for item in found if item.replacement)
            return
        if not text.startswith(",", pos):
            return
        pos = _skip(text, pos + 1)


def _quoted_value(text: str, pos: int, quote: str, name: SecretName) -> tuple[Found, int] | None:
    """The text or number at `pos` (with no replacement when it is kept) and where it ends, or None."""
    body = _QUOTED[quote].match(text, pos)
    if body is not None:
        replaced = _placeholder(name, body.group(1))
        if replaced is None:
            return Found(body.start(1), body.end(1), name.label, "", ""), body.end()
        found = Found(body.start(1), body.end(1), name.label, _secret(replaced[1], quote), replaced[0])
        return found, body.end()
    number = _NUMBER.match(text, pos)
    if number is None:
        return None
    if not name.numbers:
        return Found(number.start(), number.end(), name.label, "", ""), number.end()
    # A number becomes text in the same quotes: the JSON stays JSON.
    placeholder = f"{quote}[{name.label.upper()}]{quote}"
    return Found(number.start(), number.end(), name.label, number.group(0), placeholder), number.end()


def _secret(secret: str, quote: str) -> str:
    """The secret as data holds it (a JSON string's escapes undone), so that the same one counts once."""
    if quote == '"' and "\\" in secret:
        try:
            return str(json.loads(f'"{secret}"'))
        except ValueError:
            pass
    return secret


def _said_value(text: str, pos: int, name: SecretName) -> Iterator[Found]:
    """The value after an unquoted name (`password: x`, `token=x&`, `Authorization: Basic x`): a quoted
    text, or a scheme kept and a value of NAMED_VALUE."""
    opened = _OPEN.match(text, pos)
    if opened is not None and opened.group(0) in _QUOTED:
        value = _quoted_value(text, pos, opened.group(0), name)
        if value is not None and value[0].replacement:
            yield value[0]
        return
    scheme = _SCHEME.match(text, pos)
    start = scheme.end() if scheme else pos
    said = _BARE.match(text, start)
    if said is not None:
        yield Found(start, said.end(), name.label, said.group(0), f"[{name.label.upper()}]")
