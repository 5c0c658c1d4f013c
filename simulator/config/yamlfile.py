"""Read YAML with line numbers and turn pydantic errors into Problems that name file, line and field."""

from __future__ import annotations

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "LocatedYAML",
    "YAMLProblem",
    "load_model_file",
    "load_yaml",
    "parse_yaml",
    "problems_from_validation",
    "read_as_mapping",
    "read_text_file",
    "validate_model",
]

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from simulator.config.yamlwords import syntax_in_words
from simulator.errors import (
    Problem,
    UserError,
    choices_of,
    did_you_mean,
    error_loc,
    field_path,
    pattern_or_message,
    shown_input,
)
from simulator.jsonbounds import MAX_INT_DIGITS  # one cap on numbers, JSON and YAML alike
from simulator.readers import InputRefused, read_text

Path_ = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass
class LocatedYAML:
    """A parsed YAML file plus the line where each value starts, keyed by its path of keys/indexes."""

    path: Path
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    # Keys written twice in one mapping (YAML keeps the last silently): each is a problem to report.
    duplicates: list[Problem] = field(default_factory=list)

    def line_of(self, loc: Path_) -> int | None:
        """The line of `loc`, or of its nearest ancestor that has one."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(loc[:end])
            if line is not None:
                return line
        return None


# Limits on what one YAML file may ask of the validator, so a hostile or mistaken file fails fast with one
# clear line instead of taking minutes and gigabytes (an "alias bomb" is a few hundred bytes).
MAX_FILE_BYTES = 5_000_000
MAX_ALIAS_VALUES = 10_000  # values that aliases may add beyond the file's own
MAX_EXPANDED_BYTES = 2 * MAX_FILE_BYTES  # characters of text once every alias is expanded
MAX_DEPTH = 50  # levels of nesting

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed


# YAML's tags for values that are not text, a number, a list or a mapping as a person writes them: pydantic
# would take a set for a list in no particular order (`facts: !!set {a, b}`), bytes for text, pairs for a
# list. Each is refused where it is written, with what to write instead.
_REFUSED_TAGS = {
    "tag:yaml.org,2002:set": "YAML's !!set has no order and is not read here; write a list: [a, b]",
    "tag:yaml.org,2002:binary": "YAML's !!binary is not read here; write the text itself",
    "tag:yaml.org,2002:omap": "YAML's !!omap is not read here; write a mapping: {a: 1, b: 2}",
    "tag:yaml.org,2002:pairs": "YAML's !!pairs is not read here; write a mapping or a list",
}


# The number forms of YAML 1.1 (which PyYAML reads) that a person does not mean as that number: `012` is
# octal 10, `0x10` is 16, `0b11` is 3, `1_000` is 1000 (harmless, but `1_0` is 10), `1:30` is 90 (base 60).
# A number is read only when written plainly (decimal, an optional sign, a fraction, an exponent); any other
# form is refused where it is written, saying what YAML made of it and how to write it.
_PLAIN_NUMBER = re.compile(
    r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9]+(?:[eE][-+]?[0-9]+)?"
)
_SPECIAL_FLOATS = frozenset({".inf", ".Inf", ".INF", "-.inf", "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF",
                             ".nan", ".NaN", ".NAN"})  # fmt: skip


def _odd_number(text: str, value: Any) -> str | None:
    """Why `text`, read by YAML as the number `value`, is refused; None when it is written plainly."""
    if _PLAIN_NUMBER.fullmatch(text) or text in _SPECIAL_FLOATS:
        return None
    body = text.lstrip("+-")
    if ":" in body:
        form = "a base-60 number"
    elif body[:2].lower() == "0x":
        form = "a hexadecimal number"
    elif body[:2].lower() == "0b":
        form = "a binary number"
    elif body[:2].lower() == "0o" or (body[:1] == "0" and body[1:2].isdigit()):
        form = "an octal number"
    elif "_" in body:
        form = "a number with its digits grouped by '_'"
    else:
        form = "a number"
    return f"YAML reads {text} as {form}, {value!r}; write {value!r} if you mean that number, or quote it for text"


class _Refused(yaml.constructor.ConstructorError):
    """A value that is valid YAML and refused here (a tag or a number form): its reason is the whole message."""


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """The safe loader, with every value it cannot construct (a number of thousands of digits, a date of
    month 99, a tag's value of the wrong shape) turned into a YAML error at that value's line: Python's own
    ValueError or OverflowError never escapes a YAML reader."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        tag = str(node.tag).rsplit(":", 1)[-1]
        if str(node.tag) in _REFUSED_TAGS:
            raise _Refused(None, None, _REFUSED_TAGS[str(node.tag)], node.start_mark)
        if tag in ("int", "float") and isinstance(node.value, str) and len(node.value) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(node.value):,} characters; write it as text", node.start_mark
            )
        try:
            value = super().construct_object(node, deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception:  # ValueError, OverflowError, IndexError (`!!int ` with no digits), TypeError ...
            shown = node.value[:40] if isinstance(node.value, str) else ""
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"cannot read '{shown}' as a {tag} value; fix it or quote it as text",
                node.start_mark,
            ) from None
        if tag in ("int", "float") and isinstance(node, yaml.ScalarNode) and not isinstance(value, bool):
            why = _odd_number(str(node.value).strip(), value)
            if why is not None:
                raise _Refused(None, None, why, node.start_mark)
        return value


# What YAML makes of a plain key that is not text: every key of these files is a name, so `yes:`, `null:`,
# `1:` or `2026-01-01:` as a key is a mistake (it was shown as the field `[1]` or `[None]`).
_KEY_KINDS = {
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:null": "null (no value)",
    "tag:yaml.org,2002:int": "a number",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:timestamp": "a date",
}


def _odd_key(node: yaml.Node) -> str | None:
    """Why a mapping's key is refused: a scalar YAML reads as other than text."""
    if not isinstance(node, yaml.ScalarNode):
        return None  # a list or a mapping as a key: refused when the file is read (and an alias loop first)
    kind = _KEY_KINDS.get(str(node.tag))
    if kind is None:
        return None
    shown = node.value or "~"
    return f"the key {shown} is read by YAML as {kind}, not as a name; quote it if it is one: '{shown}':"


def _walk(node: yaml.Node, path: Path, lines: dict[Path_, int]) -> bool:
    """Record the line of every value, refuse duplicate keys and over-deep nesting, iteratively; True when a
    node is met twice (an alias refers to it), so the file's values may expand beyond its own text.

    Walks the node graph once per distinct node (an alias is not followed again), so it is linear in the
    file's size whatever its aliases."""
    stack: list[tuple[yaml.Node, Path_]] = [(node, ())]
    seen: set[int] = set()
    shared = False
    while stack:
        current, loc = stack.pop()
        lines.setdefault(loc, current.start_mark.line + 1)
        if id(current) in seen:
            shared = True
            continue
        seen.add(id(current))
        if len(loc) > MAX_DEPTH:
            raise YAMLProblem(
                Problem(
                    str(path),
                    f"nested more than {MAX_DEPTH} levels deep; flatten the file",
                    line=current.start_mark.line + 1,
                )
            )
        if isinstance(current, yaml.MappingNode):
            keys: dict[Any, int] = {}
            for key_node, value_node in current.value:
                # Keys are not walked: one met before, or one that is no scalar (it may contain its own
                # mapping), counts as shared, so the expansion is counted.
                if id(key_node) in seen or not isinstance(key_node, yaml.ScalarNode):
                    shared = True
                seen.add(id(key_node))
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.start_mark)
                line = key_node.start_mark.line + 1
                odd = _odd_key(key_node)
                if odd is not None:
                    raise YAMLProblem(Problem(str(path), odd, line=line, field=field_path(loc) or None))
                if key in keys and key != "<<":
                    raise YAMLProblem(
                        Problem(
                            str(path),
                            f"duplicate key '{key}' (first on line {keys[key]}); keep one of them",
                            line=line,
                            field=field_path((*loc, key)),
                        )
                    )
                keys[key] = line
                # A key's own line is more useful than its value's for "unknown key" errors.
                lines[(*loc, key)] = line
                stack.append((value_node, (*loc, key)))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(((item, (*loc, index)) for index, item in enumerate(current.value)))
    return shared


def _expanded_size(root: yaml.Node, path: Path) -> tuple[int, int, int]:
    """(distinct values, values once every alias is expanded, characters of text once expanded), memoised:
    linear in the distinct nodes. The text counts too: 9,000 aliases of one 500 KB string are few values
    but 4.5 GB. A node that contains itself through an alias (`facts: &f [*f]`) expands for ever: it is
    refused, found by the set of nodes on the current path (a node met again while its children are still
    being counted)."""
    sizes: dict[int, tuple[int, int]] = {}
    open_nodes: set[int] = set()  # nodes whose children are still being counted: the current path
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if children_done or not children:
            own = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
            sizes[id(node)] = (
                1 + sum(sizes[id(child)][0] for child in children),
                own + sum(sizes[id(child)][1] for child in children),
            )
            open_nodes.discard(id(node))
            continue
        if id(node) in open_nodes:
            raise YAMLProblem(
                Problem(
                    str(path),
                    "an alias (*name) refers to a value that contains it, so it never ends; "
                    "write the value out instead of the alias",
                    line=node.start_mark.line + 1,
                )
            )
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise YAMLProblem(
                    Problem(
                        str(path),
                        "an alias (*name) refers to a value that contains it, so it never ends; "
                        "write the value out instead of the alias",
                        line=child.start_mark.line + 1,
                    )
                )
            if id(child) not in sizes:
                stack.append((child, False))
    return len(sizes), *sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def read_text_file(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """A text file a suite names (YAML, a prompt, a vocabulary), read by the one bounded reader
    (`simulator.readers.read_text`: a regular file of at most `limit` bytes, UTF-8, not binary);
    YAMLProblem naming the file otherwise."""
    try:
        return read_text(path, limit, "split it into several files in a folder")
    except InputRefused as exc:
        raise YAMLProblem(exc.problem) from None


def _yaml_error(path: Path, exc: yaml.YAMLError, text: str) -> YAMLProblem:
    if isinstance(exc, _Refused):
        mark = exc.problem_mark
        return YAMLProblem(Problem(str(path), str(exc.problem), line=mark.line + 1 if mark else None))
    message, line = syntax_in_words(exc, text)
    return YAMLProblem(Problem(str(path), message, line=line))


def load_yaml(path: Path) -> LocatedYAML:
    """Parse one YAML file once, with every value's line; refuse (YAMLProblem) what cannot be read, is not
    YAML, is too large, repeats a key, nests too deep or expands aliases beyond a small bound."""
    return parse_yaml(read_text_file(path), path)


def parse_yaml(text: str, path: Path) -> LocatedYAML:
    """`text` parsed as the YAML file `path` with the bounds of `load_yaml` (size, depth, duplicate keys,
    alias expansion, self-containing aliases): the one YAML parser every reader calls, files and the desk's
    drafts alike; YAMLProblem naming `path` otherwise."""
    if len(text) > MAX_FILE_BYTES:
        raise YAMLProblem(
            Problem(str(path), f"larger than {MAX_FILE_BYTES / 1e6:g} MB; split it into several files")
        )
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        located = LocatedYAML(path=path, data=None)
        if node is None:
            return located
        # Without an alias every value is the file's own text, already within MAX_FILE_BYTES: the expansion
        # is counted (a quarter of a file's parsing) only for a file whose nodes are shared.
        shared = _walk(node, path, located.lines)
        distinct, expanded, characters = _expanded_size(node, path) if shared else (0, 0, 0)
        if characters > MAX_EXPANDED_BYTES:
            raise YAMLProblem(
                Problem(
                    str(path),
                    f"its aliases (*name) expand to more than {MAX_EXPANDED_BYTES / 1e6:.0f} MB of text "
                    f"({characters / 1e6:,.0f} MB); write the values out, or use fewer aliases",
                )
            )
        if expanded - distinct > MAX_ALIAS_VALUES:
            raise YAMLProblem(
                Problem(
                    str(path),
                    f"its aliases (*name) expand to more than {MAX_ALIAS_VALUES:,} extra values; "
                    "write the values out, or use fewer nested aliases",
                )
            )
        located.data = loader.construct_document(node)
        return located
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc, text) from None
    except RecursionError:
        raise YAMLProblem(
            Problem(str(path), f"nested too deeply to read; keep nesting under {MAX_DEPTH} levels")
        ) from None
    finally:
        loader.dispose()


class YAMLProblem(Exception):
    """A file that could not be parsed at all."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def read_as_mapping(got: Any) -> str | None:
    """What a line was when YAML read it as a one-key mapping (`- Pain: sharp` is `{Pain: sharp}`), or None."""
    if not isinstance(got, dict) or len(got) != 1:
        return None
    key, value = next(iter(got.items()))
    if isinstance(value, (dict, list)):
        return None
    return f"{key}:" if value is None else f"{key}: {value}"


def problems_from_validation(  # long because it is a table: a branch per kind of pydantic error, in words
    error: ValidationError,
    source: LocatedYAML,
    model: type[BaseModel],
    base: Path_ = (),
    given: Collection[str] = (),
) -> list[Problem]:
    """One Problem per pydantic error, with the YAML line, the field path and how to fix it. A value under
    a top-level key in `given` came from Python or the command line, not from YAML: it is shown as Python
    writes it (`True`, not YAML's words for a boolean)."""
    problems: list[Problem] = []
    for item in error.errors():
        # A union's tag (`bot.http.url`) is not a key of the file: the field is `bot.url`.
        loc = _resolve(model, error_loc(item))[1]
        from_yaml = not (loc and loc[0] in given)
        full = (*base, *loc)
        kind = item["type"]
        name = field_path(loc)
        value = item.get("input")
        if kind == "extra_forbidden":
            allowed = _allowed_fields(_resolve(model, tuple(item["loc"])[:-1])[0])
            guess = did_you_mean(loc[-1], allowed)
            if guess:
                hint = f"; {guess}"
            elif allowed:
                hint = f"; allowed keys: {', '.join(allowed)}"
            else:
                hint = "; remove it"
            message = f"unknown key '{loc[-1]}'{hint}"
        elif kind == "missing":
            message = f"missing required field '{loc[-1]}'; add it"
        elif kind == "value_error":
            # A validator's own message already says what is wrong and how to fix it.
            message = str(item["msg"]).removeprefix("Value error, ")
        elif kind == "dict_type" and loc:
            # text is not echoed: a header written as one line may hold a token
            got = "text" if isinstance(value, str) else shown_input(value, yaml=from_yaml)
            message = f"{pattern_or_message(item)} (got {got}); {_mapping_fix(str(loc[-1]), value)}"
        elif kind in ("model_type", "model_attributes_type") and loc:
            got = "text" if isinstance(value, str) else shown_input(value, yaml=from_yaml)
            keys = _allowed_fields(_resolve(model, tuple(item["loc"]))[0])
            message = (
                f"{pattern_or_message(item)} (got {got}); write its keys indented under '{loc[-1]}:', one a "
                f"line ({', '.join(keys)})"
            )
        elif kind == "string_type" and loc and isinstance(loc[-1], int) and read_as_mapping(value):
            text = read_as_mapping(value)
            message = (
                f"'{text}' was read as a key and a value, not as text (YAML reads ': ' that way); "
                f'put it in quotes: - "{text}"'
            )
        elif kind == "string_type" and value is None and from_yaml:
            message = (
                "is empty; write its text after the colon (put text that begins with '#' in quotes: YAML "
                "reads a '#' after a space as the start of a comment)"
            )
        elif (
            kind == "string_type"
            and from_yaml
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            message = f"should be text (got {value!r}: YAML reads it as a number; put it in quotes for text)"
        elif kind in ("too_short", "string_too_short"):
            message = pattern_or_message(item)  # what was given is empty: nothing to show
        else:
            message = f"{pattern_or_message(item)} (got {shown_input(value, yaml=from_yaml)})"
            guess = did_you_mean(value, choices_of(item)) if isinstance(value, str) else None
            message += f"; {guess}" if guess else ""
        problems.append(Problem(str(source.path), message, line=source.line_of(full), field=name or None))
    return problems


def _mapping_fix(key: str, got: Any) -> str:
    """How to write `key` as the mapping it must be, with an example named from what was given (a list of
    `Name: value`, `NAME=value` or bare names, or one such line): its first name, never its value (a header
    may hold a token)."""
    name = "name"
    first = got[0] if isinstance(got, list) and got else got
    if isinstance(first, str):
        found = re.match(r"\s*([^\s:=]+)", first)
        name = found.group(1) if found else name
    elif isinstance(first, dict) and len(first) == 1:
        name = str(next(iter(first)))  # `- Authorization: x` is a list of one-key mappings
    return (
        f"write it as a mapping of name to value: '{key}:' with '  {name}: ...' indented on the next line, "
        f"one name a line (or on one line: {key}: {{{name}: ...}})"
    )


def _resolve(model: type[BaseModel], loc: Path_) -> tuple[list[type[BaseModel]], Path_]:
    """The models that may be found at `loc`, and `loc` without the tags of unions in it. A part of `loc`
    that is not a field is a list index, a free mapping's key (`providers.openai`) or a union's tag
    (`bot.http`); a base model stands for its subclasses, told apart by their `type` (a registry's kinds)."""
    candidates: list[type[BaseModel]] = [model]
    kept: list[str | int] = []
    for part in loc:
        if isinstance(part, int):
            kept.append(part)
            continue
        owner = next((m for m in candidates if str(part) in m.model_fields), None)
        if owner is not None:
            candidates = _models_in(owner.model_fields[str(part)].annotation)
            kept.append(part)
            continue
        tagged = [m for m in _with_subclasses(candidates) if _tag_of(m) == part]
        if tagged:
            candidates = tagged
        else:
            kept.append(part)
    return candidates, tuple(kept)


def _allowed_fields(candidates: list[type[BaseModel]]) -> list[str]:
    """Field names (and aliases) of the model found, for did-you-mean hints."""
    if not candidates:
        return []
    return sorted(info.alias or name for name, info in candidates[0].model_fields.items())


def _with_subclasses(models: list[type[BaseModel]]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    stack = list(models)
    while stack:
        current = stack.pop(0)
        if current not in found:
            found.append(current)
            stack.extend(current.__subclasses__())
    return found


def _tag_of(model: type[BaseModel]) -> Any:
    info = model.model_fields.get("type")
    return info.default if info is not None else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Every pydantic model inside an annotation (`X | None`, `dict[str, X]`, `Annotated[A | B, ...]`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()) or ():
        found.extend(_models_in(arg))
    return found


def validate_model(
    model: type[M], data: Any, source: LocatedYAML, base: Path_ = (), given: Collection[str] = ()
) -> tuple[M | None, list[Problem]]:
    """Validate `data` as `model`; return the instance or the problems, never raise for bad input (`given`:
    see problems_from_validation)."""
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, problems_from_validation(exc, source, model, base, given)


def load_model_file(path: Path, model: type[M], *, title: str, missing: str, shape: str | None = None) -> M:
    """Read one YAML file as `model`; every mistake is one UserError naming file, line and field.

    `missing` is the message when the file is not there; `shape`, when given, is the message for a file
    that is not a mapping (without it an empty file counts as an empty mapping: every default)."""
    if not path.exists() and not path.is_symlink():  # a folder, FIFO or link loop is read, and refused so
        raise UserError(missing)
    try:
        source = load_yaml(path)
    except YAMLProblem as exc:
        raise UserError(title, [exc.problem]) from exc
    data = source.data
    if shape is not None and not isinstance(data, dict):
        raise UserError(title, [Problem(str(path), shape)])
    found, problems = validate_model(model, data if shape is not None else data or {}, source)
    if found is None:
        raise UserError(title, problems)
    return found
