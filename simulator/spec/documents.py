"""Load id-keyed YAML documents (scenarios, criteria): one per file or a list, validated, located, unique."""

from __future__ import annotations

__all__ = ["DocumentKind", "FileDocument", "load_documents", "yaml_files"]

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, PrivateAttr

from simulator.errors import Problem, UserError
from simulator.spec.yamlfile import LocatedYAML, YAMLProblem, load_yaml, validate_model


class FileDocument(BaseModel):
    """A model read from a YAML file, remembering where: errors and reports can point people to it."""

    id: str
    _source: str = PrivateAttr(default="")
    _line: int | None = PrivateAttr(default=None)

    @property
    def source(self) -> str:
        """`file:line` where this document was defined."""
        return self._source if self._line is None else f"{self._source}:{self._line}"


D = TypeVar("D", bound=FileDocument)


@dataclass(frozen=True)
class DocumentKind:
    """How one kind of document is written: its model, its name in messages, its list key and shape."""

    model: type[FileDocument]
    noun: str  # "scenario"
    list_key: str  # a file may hold `scenarios: [...]`
    marker_key: str  # a key only a single document has ("persona"), so `list_key` is not mistaken
    shape: str  # "id, persona, goal, ..." for the not-a-mapping message
    error_title: str  # "invalid scenario files"
    # Files of another kind that may sit in the same folders (a suite next to its scenarios), by content.
    is_other: Callable[[Any], bool] | None = None


def yaml_files(paths: list[Path], skip_names: tuple[str, ...] = (), what: str = "files") -> list[Path]:
    """Every .yaml/.yml file under the given files and folders, recursively, in a stable order."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
            files.extend(p for p in found if p.name not in skip_names)
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"{path}: no such file or folder; check the path to your {what}")
    return files


def _items(source: LocatedYAML, kind: DocumentKind) -> list[tuple[Any, tuple[str | int, ...]]]:
    data = source.data
    if isinstance(data, list):
        return [(item, (index,)) for index, item in enumerate(data)]
    if isinstance(data, dict) and isinstance(data.get(kind.list_key), list) and kind.marker_key not in data:
        return [(item, (kind.list_key, index)) for index, item in enumerate(data[kind.list_key])]
    return [(data, ())]


def _parse_file(source: LocatedYAML, kind: DocumentKind) -> tuple[list[FileDocument], list[Problem]]:
    if source.data is None:
        return [], [
            Problem(str(source.path), f"the file is empty; write a {kind.noun} mapping or a list of them")
        ]
    documents: list[FileDocument] = []
    problems: list[Problem] = []
    for item, base in _items(source, kind):
        if not isinstance(item, dict):
            message = f"a {kind.noun} must be a mapping with {kind.shape}"
            problems.append(Problem(str(source.path), message, line=source.line_of(base)))
            continue
        document, found = validate_model(kind.model, item, source, base)
        problems.extend(found)
        if document is not None:
            document._source = str(source.path)
            document._line = source.line_of(base)
            documents.append(document)
    return documents, problems


def load_documents(files: list[Path], kind: DocumentKind) -> list[Any]:
    """Load and validate every document; raise one UserError listing every problem in every file."""
    problems: list[Problem] = []
    documents: list[FileDocument] = []
    for file in files:
        try:
            source = load_yaml(file)
        except YAMLProblem as exc:
            problems.append(exc.problem)
            continue
        if kind.is_other is not None and kind.is_other(source.data):
            continue
        found, file_problems = _parse_file(source, kind)
        documents.extend(found)
        problems.extend(file_problems)
    seen: dict[str, FileDocument] = {}
    for document in documents:
        first = seen.setdefault(document.id, document)
        if first is not document:
            problems.append(
                Problem(
                    document._source,
                    f"duplicate {kind.noun} id '{document.id}' (first defined at {first.source}); "
                    f"give each {kind.noun} a unique id",
                    line=document._line,
                    field="id",
                )
            )
    if problems:
        raise UserError(kind.error_title, problems)
    return documents
