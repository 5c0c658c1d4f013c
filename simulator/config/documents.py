"""Load id-keyed documents (scenarios, criteria, golden items): YAML (one per file or a list) or, for golden
items, CSV rows; validated, located by file and line, ids unique across every file."""

from __future__ import annotations

__all__ = [
    "FileDocument",
    "FileDocumentKind",
    "collect_documents",
    "file_identity",
    "load_documents",
    "text_problems",
    "yaml_files",
]

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import PrivateAttr

from simulator.config.yamlfile import LocatedYAML, YAMLProblem, load_yaml, parse_yaml, validate_model
from simulator.errors import Problem, UserError, did_you_mean
from simulator.models import StrictModel
from simulator.readers import missing


class FileDocument(StrictModel):
    """A model read from a YAML file, remembering where: errors and reports can point people to it."""

    id: str
    _source: str = PrivateAttr(default="")
    _line: int | None = PrivateAttr(default=None)
    # The line of each of its values in the file, by its path inside the document (copies share it).
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> str:
        """`file:line` where this document was defined."""
        return self._source if self._line is None else f"{self._source}:{self._line}"

    def line_of(self, *loc: str | int) -> int | None:
        """The file's line of a field of this document (or of its nearest ancestor that has one), else the
        document's own line: a problem found after loading (an expected level the suite does not declare)
        names the line to fix, not the document's first."""
        for end in range(len(loc), 0, -1):
            line = self._lines.get(loc[:end])
            if line is not None:
                return line
        return self._line


D = TypeVar("D", bound=FileDocument)


@dataclass(frozen=True)
class FileDocumentKind:
    """How one kind of document is written: its model, its name in messages, its list key and shape."""

    model: type[FileDocument]
    noun: str  # "scenario"
    list_key: str  # a file may hold `scenarios: [...]`
    marker_key: str  # a key only a single document has ("persona"), so `list_key` is not mistaken
    shape: str  # "id, persona, goal, ..." for the not-a-mapping message
    error_title: str  # "invalid scenario files"
    id_field: str = "id"  # how the id is spelled in the file ("item_id" for golden items)
    # Keys allowed beside `list_key` in a file's top-level mapping; None: not checked.
    top_keys: tuple[str, ...] | None = None
    # Whether a parsed YAML file holds this kind (when several kinds share a folder); None: any file.
    claims: Callable[[LocatedYAML], bool] | None = None
    # Reads a .csv file of this kind as rows located by line, with the header's problems.
    read_csv: Callable[[Path], tuple[LocatedYAML, list[Problem]]] | None = None
    # Files of another kind that may sit in the same folders (a suite next to its scenarios), by content.
    is_other: Callable[[Any], bool] | None = None


def yaml_files(
    paths: list[Path],
    skip_names: tuple[str, ...] = (),
    what: str = "files",
    suffixes: tuple[str, ...] = (".yaml", ".yml"),
) -> list[Path]:
    """Every file with one of `suffixes` under the given files and folders, recursively, in a stable order,
    each once: a file reached twice (a folder and a file in it, `sc` and `./sc/`, a link to the folder) is
    one file, read once, so its documents are never run twice under one id."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in suffixes)
            files.extend(p for p in found if p.name not in skip_names)
        elif not missing(path):  # a FIFO, device or link loop is read, and refused saying what it is
            files.append(path)
        else:
            raise UserError(f"{path}: no such file or folder; check the path to your {what}")
    seen: set[Path] = set()
    once = []
    for file in files:
        if file_identity(file) not in seen:
            seen.add(file_identity(file))
            once.append(file)
    return once


def file_identity(path: Path) -> Path:
    """The file a path reaches, links followed (a link loop keeps its path: it is refused when read): two
    paths to one file are one file, and a path that loops never raises here."""
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        return path


def _items(source: LocatedYAML, kind: FileDocumentKind) -> list[tuple[Any, tuple[str | int, ...]]]:
    data = source.data
    if isinstance(data, list):
        return [(item, (index,)) for index, item in enumerate(data)]
    if isinstance(data, dict) and isinstance(data.get(kind.list_key), list) and kind.marker_key not in data:
        return [(item, (kind.list_key, index)) for index, item in enumerate(data[kind.list_key])]
    return [(data, ())]


def _top_level_problems(source: LocatedYAML, kind: FileDocumentKind) -> list[Problem]:
    """Unknown keys beside `list_key` in a file's top-level mapping, with a did-you-mean."""
    data = source.data
    if kind.top_keys is None or not isinstance(data, dict) or kind.marker_key in data:
        return []
    allowed = [kind.list_key, *kind.top_keys]
    problems = []
    for key in data:
        if str(key) not in allowed:
            guess = did_you_mean(key, allowed)
            hint = f"; {guess}" if guess else f"; allowed keys: {', '.join(allowed)}"
            line = source.line_of((str(key),))
            problems.append(Problem(str(source.path), f"unknown top-level key '{key}'{hint}", line, str(key)))
    if problems and kind.list_key not in data:
        message = f"missing '{kind.list_key}:' (a list of {kind.noun}s)"
        problems.append(Problem(str(source.path), message, 1, kind.list_key))
    return problems


RawId = tuple[str, str, int | None]  # (id as written, file, line)
Loc = tuple[str | int, ...]


def _lines_by_document(source: LocatedYAML, depth: int) -> dict[Loc, dict[Loc, int]]:
    """The file's lines grouped by document (the first `depth` parts of a path: `()`, `(3,)` or
    `("scenarios", 3)`), each keyed by its path inside the document: one pass over the file's lines."""
    grouped: dict[Loc, dict[Loc, int]] = {}
    for loc, line in source.lines.items():
        if len(loc) > depth:
            grouped.setdefault(loc[:depth], {})[loc[depth:]] = line
    return grouped


def _parse_file(
    source: LocatedYAML, kind: FileDocumentKind
) -> tuple[list[FileDocument], list[Problem], list[RawId]]:
    if source.data is None:
        return (
            [],
            [Problem(str(source.path), f"the file is empty; write a {kind.noun} mapping or a list of them")],
            [],
        )
    documents: list[FileDocument] = []
    problems: list[Problem] = list(source.duplicates)
    top = _top_level_problems(source, kind)
    if top:
        return [], problems + top, []
    ids: list[RawId] = []
    items = _items(source, kind)
    lines = _lines_by_document(source, len(items[0][1]) if items else 0)
    for item, base in items:
        if not isinstance(item, dict):
            message = f"a {kind.noun} must be a mapping with {kind.shape}"
            problems.append(Problem(str(source.path), message, line=source.line_of(base)))
            continue
        if item.get(kind.id_field) not in (None, ""):
            ids.append((str(item[kind.id_field]), str(source.path), source.line_of(base)))
        document, found = validate_model(kind.model, item, source, base)
        problems.extend(found)
        if document is not None:
            document._source = str(source.path)
            document._line = source.line_of(base)
            document._lines = lines.get(base, {})
            documents.append(document)
    return documents, problems, ids


def _read(
    file: Path, kinds: list[FileDocumentKind]
) -> tuple[LocatedYAML | None, FileDocumentKind, list[Problem]]:
    """Parse one file and pick its kind: a .csv goes to the kind that reads CSV, a YAML file to the first
    kind that claims it (the last kind takes the rest)."""
    if file.suffix.lower() == ".csv":
        kind = next((k for k in kinds if k.read_csv is not None), None)
        if kind is None or kind.read_csv is None:
            return None, kinds[-1], [Problem(str(file), "a .csv file here must hold golden items")]
        source, problems = kind.read_csv(file)
        return source, kind, problems
    try:
        source = load_yaml(file)
    except YAMLProblem as exc:
        return None, kinds[-1], [exc.problem]
    kind = next((k for k in kinds if k.claims is not None and k.claims(source)), kinds[-1])
    return source, kind, []


def _unique(ids: list[tuple[RawId, FileDocumentKind]]) -> list[Problem]:
    """Every id written twice, checked on the ids as written (an invalid document's id counts too). Two ids
    that differ only in case are one id twice: a scenario's id names its file, and a file system that
    ignores case (macOS, Windows) keeps one of the two files; a reader cannot tell them apart either."""
    problems: list[Problem] = []
    seen: dict[str, RawId] = {}
    for (name, file, line), kind in ids:
        first = seen.setdefault(str(name).casefold(), (name, file, line))
        if first != (name, file, line):
            at = first[1] if first[2] is None else f"{first[1]}:{first[2]}"
            said = (
                f"duplicate {kind.noun} id '{name}'"
                if first[0] == name
                else f"{kind.noun} id '{name}' differs only in case from '{first[0]}'"
            )
            problems.append(
                Problem(
                    file,
                    f"{said} (first defined at {at}); give each {kind.noun} a unique {kind.id_field}",
                    line=line,
                    field=kind.id_field,
                )
            )
    return problems


def collect_documents(files: list[Path], kinds: list[FileDocumentKind]) -> tuple[list[Any], list[Problem]]:
    """Every document of every file, each file read as the kind it holds, ids unique across all of them;
    the problems are returned, not raised, so a caller can report them with its own."""
    problems: list[Problem] = []
    documents: list[FileDocument] = []
    ids: list[tuple[RawId, FileDocumentKind]] = []
    for file in files:
        source, kind, read_problems = _read(file, kinds)
        problems.extend(read_problems)
        if source is None:
            continue
        if kind.is_other is not None and kind.is_other(source.data):
            continue  # a file of another kind in the same folder (a suite next to its scenarios)
        found, file_problems, file_ids = _parse_file(source, kind)
        documents.extend(found)
        problems.extend(file_problems)
        ids.extend((raw_id, kind) for raw_id in file_ids)
    problems.extend(_unique(ids))
    return documents, problems


def text_problems(text: str, path: Path, kind: FileDocumentKind) -> list[Problem]:
    """What the loader would refuse in `text` written as the file `path`, before anything is written (`new`
    checks the file it would write with the checks `validate` makes)."""
    try:
        source = parse_yaml(text, path)
    except YAMLProblem as exc:
        return [exc.problem]
    return _parse_file(source, kind)[1]


def load_documents(files: list[Path], kind: FileDocumentKind) -> list[Any]:
    """Load and validate every document; raise one UserError listing every problem in every file."""
    documents, problems = collect_documents(files, [kind])
    if problems:
        raise UserError(kind.error_title, problems)
    return documents
