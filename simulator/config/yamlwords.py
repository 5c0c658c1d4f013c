"""Why a YAML parser refused a file, in words a person who writes scenarios reads, at the line to fix.

PyYAML and libyaml say `found character that cannot start any token`, `mapping values are not allowed in this
context` or `did not find expected key`: true, and of no help to someone who typed a tab, a colon inside a
sentence or an unclosed quote. Each common refusal is told here by what the parser said and the character it
stopped at, as what was written and how to write it; anything else keeps the parser's words with a general fix.
"""

from __future__ import annotations

__all__ = ["syntax_in_words"]

import re
from typing import Any

import yaml

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_KEY_AT_START = re.compile(r"\s*(?:-\s+)?([^\s:#'\"{}\[\],&*!|>%@`-][^:#]*?):(?:\s|$)")
_CURLY_QUOTES = "\u201c\u201d\u2018\u2019"
_QUOTE_FIX = "put the whole value in quotes"


def _line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


def _text_at(lines: list[str], mark: Any) -> tuple[str, str]:
    """The line a mark is on, and the character it points at ('' past the end)."""
    if mark is None or mark.line >= len(lines):
        return "", ""
    line = lines[mark.line]
    return line, line[mark.column] if mark.column < len(line) else ""


def _quoted_example(line: str, mark: Any) -> str:
    """`goal: "..."` for a line `goal: Find out: ...` whose value holds the ': ' the parser stopped at, so the
    fix names the key; only the key is shown (a value may hold a token)."""
    found = _KEY_AT_START.match(line)
    if found is None or found.end(1) >= mark.column:
        return ""
    dash = "- " if line.lstrip().startswith("-") else ""
    return f', e.g. {dash}{found.group(1).strip()}: "..."'


def _continues(line: str, mark: Any) -> bool:
    """Whether the ': ' the parser stopped at ends the line's own first key (`   max_turns: 12` indented past
    the keys above it reads as more of the value above), not a colon inside a value."""
    found = _KEY_AT_START.match(line)
    return found is not None and not line.lstrip().startswith("-") and found.end(1) == mark.column


def _curly(line: str) -> str:
    if any(quote in line for quote in _CURLY_QUOTES):
        return " (the curly quotes on this line are text to YAML: use straight quotes \" or ')"
    return ""


def _unexpected_character(char: str, line: str, mark: Any) -> str:
    if char == "\t":
        return "a tab indents this line; YAML indents with spaces only: replace the tab with spaces"
    if char in "@`%":
        return (
            f"a value cannot begin with '{char}' (YAML keeps it for itself); {_QUOTE_FIX}"
            f"{_quoted_example(line, mark) if _KEY_AT_START.match(line) else ''}"
        )
    shown = char if char.isprintable() and char.strip() else f"U+{ord(char):04X}" if char else "this"
    return f"'{shown}' cannot begin a value here; {_QUOTE_FIX}"


def _block_mapping(lines: list[str], exc: Any) -> tuple[str, int | None]:
    """`did not find expected key` (`expected <block end>`): a line out of step with the keys above it, a
    list item where a key should be, or text after a closing quote."""
    line, char = _text_at(lines, exc.problem_mark)
    before = line[: exc.problem_mark.column].rstrip() if exc.problem_mark is not None else ""
    if before.endswith(("'", '"')) and before.strip() not in ("'", '"'):
        return (
            "text follows the closing quote of a value; put the whole value in quotes, with other quotes "
            "inside it: 'a \"word\" in quotes'",
            _line(exc.problem_mark),
        )
    if char == "-":
        return (
            "a list item ('- ') where a key was expected; indent the list under the key it belongs to",
            _line(exc.problem_mark),
        )
    start = _line(exc.context_mark)
    above = (
        f" (the mapping starting on line {start})"
        if start is not None and start != _line(exc.problem_mark)
        else ""
    )
    return (
        f"this line is indented differently from the keys above it{above}; start every key of one mapping "
        "in the same column, indenting with spaces",
        _line(exc.problem_mark),
    )


def syntax_in_words(exc: yaml.YAMLError, text: str) -> tuple[str, int | None]:
    """What is wrong, with its fix, and the line to fix, for a YAML parser's refusal of `text`; the message
    starts `not valid YAML: `."""
    # long because it is a table: one branch per kind of refusal, tried in this order (the first that fits)
    problem = str(getattr(exc, "problem", None) or "")
    context = str(getattr(exc, "context", None) or "")
    problem_mark = getattr(exc, "problem_mark", None)
    context_mark = getattr(exc, "context_mark", None)
    lines = _LINE_BREAK.split(text)
    line, char = _text_at(lines, problem_mark)
    at = _line(problem_mark)
    said: str | None = None
    if isinstance(exc, yaml.reader.ReaderError):
        at = text.count("\n", 0, exc.position) + 1 if isinstance(exc.position, int) else None
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
        said = (
            f"a control character (U+{code:04X}) YAML does not allow; delete it (an editor may not show it)"
        )
    elif "cannot start any token" in problem or "tab character that violates indentation" in problem:
        said = _unexpected_character("\t" if "tab" in problem else char, line, problem_mark)
    elif "mapping values are not allowed" in problem and _continues(line, problem_mark):
        said = (
            "this line is indented deeper than the key above it, so YAML reads it as more of the value "
            "above; start it in the same column as the keys above it"
        )
    elif "mapping values are not allowed" in problem:
        said = (
            f"a ': ' inside a value (YAML reads it as the start of a key); {_QUOTE_FIX}"
            f"{_quoted_example(line, problem_mark)}{_curly(line)}"
        )
    elif "quoted scalar" in context and "end of stream" in problem:
        said = (
            "a quote opened here is never closed; end the value with the same quote (inside '...' a ' is "
            "written '')"
        )
        at = _line(context_mark)
    elif "unknown escape character" in problem:
        said = (
            "a '\\' inside \"...\" starts an escape YAML does not know; use single quotes '...' "
            "for text with a backslash, or write it twice (\\\\)"
        )
    elif "flow sequence" in context or "flow mapping" in context:
        opened, closed = ("[", "]") if "sequence" in context else ("{", "}")
        said = (
            f"the '{opened}' opened here is not closed by '{closed}' (or a ',' is missing between two "
            f"items); close it, and put an item that holds a ',', ':' or '{closed}' in quotes"
        )
        at = _line(context_mark)
    elif "block mapping" in context and ("expected key" in problem or "block end" in problem):
        said, at = _block_mapping(lines, exc)
    elif "block collection" in context or "expected '-' indicator" in problem:
        said = (
            "a key among the items of a list; start it with '- ' if it is an item, or indent it under the "
            "item it belongs to"
        )
    elif "could not find expected ':'" in problem and "simple key" in context:
        said = (
            "this line is neither 'key: value' nor a list item '- text' (a '-' needs a space after it, a "
            "key a ': ' after it); fix it, or indent it to continue the text above"
        )
        at = _line(context_mark)
    elif "found another document" in problem:
        said = (
            "a second YAML document starts here (a '---' line); a file holds one: remove the '---' line, "
            "or move what follows to a file of its own (several scenarios or criteria go in one file as a "
            "list)"
        )
    elif "undefined alias" in problem or "scanning an alias" in context or "scanning an anchor" in context:
        said = (
            "a value that begins with '*' (or '&') is read as a reference to an '&' anchor, and there is "
            f"none of that name; {_QUOTE_FIX} if the '*' or '&' is text"
        )
    elif "duplicate anchor" in context:
        said = (
            f"an anchor '&' of this name is defined twice (first on line {_line(context_mark)}); rename one"
        )
    elif "could not determine a constructor for the tag" in problem:
        said = f"a value that begins with '!' is read as a YAML tag, which is not read here; {_QUOTE_FIX}"
    elif "maximum nesting depth" in problem:
        said = "nested too deeply to read (more brackets or indented levels than any file needs); flatten it"
    elif "directive" in context:
        said = f"a line that begins with '%' is read as a YAML directive; {_QUOTE_FIX} if the '%' is text"
    if said is None:
        reason = problem or str(exc)
        fix = "" if "; " in reason else "; check indentation and quoting"  # a reason of ours says its own fix
        said = f"{reason}{fix}"
    return f"not valid YAML: {said}", at
