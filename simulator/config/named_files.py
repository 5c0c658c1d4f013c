"""Settings that name files, by declaration: a config field whose text is a path says so in its type, and one
walk over a suite finds each such setting and the file it reaches.

    vocabulary: Annotated[str | None, NamesFile()] = None              # a file, relative to the suite's folder
    command: Annotated[list[str], NamesFile(within="cwd")]            # items that are files, relative to `cwd`
    paths: Annotated[list[str], NamesFolder()] = ["."]                # what it holds is compared by its own hashes

Two runs are one experiment when such a setting reaches the same content, however its path is spelled (two
checkouts, `vocab.yaml` or `/home/me/suite/vocab.yaml`): a run records each file's content hash in its
manifest (record/recorded.py), and `merge` and `run --resume` compare those (engine/operational.py).
"""

from __future__ import annotations

__all__ = ["NamesFile", "NamesFolder", "SettingLoc", "dotted", "named_files", "named_folders"]

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

# Where a setting sits in the suite: field names, mapping keys and list indexes (`("bot", "start", "command", 1)`).
SettingLoc = tuple[str | int, ...]


@dataclass(frozen=True)
class NamesFile:
    """The field (a text, or each item of a list) names a file, relative to the suite's folder or to the
    folder the sibling field `within` names; a value that reaches no file (`{python}`, `--port`) is text."""

    within: str | None = None


@dataclass(frozen=True)
class NamesFolder:
    """The field names folders (or files) whose files a run compares by their own hashes (scenario files,
    criteria, the files a started bot's command names): its text is never compared."""


def dotted(loc: SettingLoc) -> str:
    """A setting's location as the manifest keys its file's hash: `bot.start.command.1` (a message shows it
    with errors.field_path)."""
    return ".".join(map(str, loc))


def _marker(model: BaseModel, name: str, kind: type[Any]) -> Any:
    info = type(model).model_fields[name]
    return next((m for m in info.metadata if isinstance(m, kind)), None)


def _inner(value: Any, loc: SettingLoc) -> Iterator[tuple[BaseModel, SettingLoc]]:
    """The models inside a field's value, with where they sit."""
    if isinstance(value, BaseModel):
        yield value, loc
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _inner(item, (*loc, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _inner(item, (*loc, index))


def _texts(value: Any, loc: SettingLoc) -> Iterator[tuple[SettingLoc, str]]:
    if isinstance(value, str):
        yield loc, value
    elif isinstance(value, list | tuple):
        yield from (((*loc, i), item) for i, item in enumerate(value) if isinstance(item, str))


def named_files(
    config: BaseModel, base: Path, loc: SettingLoc = ()
) -> Iterator[tuple[SettingLoc, str, Path]]:
    """(where, the text as written, the path it reaches from `base`) of every setting of `config` (and of the
    models inside it) that names a file; the path may not exist."""
    for name in type(config).model_fields:
        value = getattr(config, name)
        marker = _marker(config, name, NamesFile)
        if marker is not None:
            folder = getattr(config, marker.within, None) if marker.within else None
            start = base / folder if isinstance(folder, str) else base
            for where, text in _texts(value, (*loc, name)):
                if "{" not in text:  # a placeholder (`{python}`, `{port}`) is filled in at run time
                    yield where, text, start / text
        for inner, where in _inner(value, (*loc, name)):
            yield from named_files(inner, base, where)


def named_folders(config: BaseModel, loc: SettingLoc = ()) -> Iterator[SettingLoc]:
    """Where every setting of `config` (and of the models inside it) that names compared-elsewhere folders sits."""
    for name in type(config).model_fields:
        if _marker(config, name, NamesFolder) is not None and getattr(config, name) is not None:
            yield (*loc, name)
        for inner, where in _inner(getattr(config, name), (*loc, name)):
            yield from named_folders(inner, where)
