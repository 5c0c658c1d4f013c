"""Settings that name files, by declaration: a config field whose text is a path says so in its type, and one
walk over a suite finds each such setting and the file it reaches.

    vocabulary: Annotated[str | None, NamesFile()] = None              # a file, relative to the suite's folder
    command: Annotated[list[str], NamesFile(within="cwd")]            # items that are files, relative to `cwd`
    paths: Annotated[list[str], NamesFolder()] = ["."]                # what it holds is compared by its own hashes
    path: Annotated[str, NamesPlace()] = ".simulator-cache.sqlite"     # a file runs write: compared by where it is

Two runs are one experiment when such a setting reaches the same content, however its path is spelled (two
checkouts, `vocab.yaml` or `/home/me/suite/vocab.yaml`): a run records each file's content hash in its
manifest (record/recorded.py), and `merge` and `run --resume` compare those (engine/operational.py). A
file the runs themselves write (the response cache) has no content to compare: its place is recorded
instead (`place`), relative to the suite's folder, so `./c.sqlite`, `c.sqlite` and `/home/me/suite/c.sqlite`
are one place, in any checkout.
"""

from __future__ import annotations

__all__ = [
    "PLACE",
    "NamesFile",
    "NamesFolder",
    "NamesPlace",
    "SettingLoc",
    "dotted",
    "named_files",
    "named_folders",
    "named_places",
    "place",
]

import os
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
class NamesPlace:
    """The field names a file relative to the suite's folder that runs write (the response cache): two runs
    compare where it is (`place`), since its content changes as they write it."""

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


def named_files(config: BaseModel, base: Path) -> Iterator[tuple[SettingLoc, str, Path]]:
    """(where, the text as written, the path it reaches from `base`) of every setting of `config` (and of the
    models inside it) that names a file compared by its content; the path may not exist."""
    return _declared(config, base, NamesFile)


def named_places(config: BaseModel, base: Path) -> Iterator[tuple[SettingLoc, str, Path]]:
    """As `named_files`, for the settings naming a file compared by where it is (NamesPlace: the cache)."""
    return _declared(config, base, NamesPlace)


def _declared(
    config: BaseModel, base: Path, kind: type[NamesFile | NamesPlace], loc: SettingLoc = ()
) -> Iterator[tuple[SettingLoc, str, Path]]:
    for name in type(config).model_fields:
        value = getattr(config, name)
        marker = _marker(config, name, kind)
        if marker is not None:
            folder = getattr(config, marker.within, None) if marker.within else None
            start = base / folder if isinstance(folder, str) else base
            for where, text in _texts(value, (*loc, name)):
                if "{" not in text:  # a placeholder (`{python}`, `{port}`) is filled in at run time
                    yield where, text, start / text
        for inner, where in _inner(value, (*loc, name)):
            yield from _declared(inner, base, kind, where)


# A manifest's `setting_files` value that says where a file is (`place:c.sqlite`), not what it holds.
PLACE = "place:"


def place(path: Path, base: Path) -> str:
    """Where a file is, as two runs compare it (`place:c.sqlite`, `place:../shared/c.sqlite`): relative to
    the suite's folder `base`, `..` and links resolved, so every spelling of one path, and two checkouts of
    one suite, agree."""
    return PLACE + Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()


def named_folders(config: BaseModel, loc: SettingLoc = ()) -> Iterator[SettingLoc]:
    """Where every setting of `config` (and of the models inside it) that names compared-elsewhere folders sits."""
    for name in type(config).model_fields:
        if _marker(config, name, NamesFolder) is not None and getattr(config, name) is not None:
            yield (*loc, name)
        for inner, where in _inner(getattr(config, name), (*loc, name)):
            yield from named_folders(inner, where)
