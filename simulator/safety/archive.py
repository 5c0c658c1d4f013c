"""The signed document kept, and a document checked against its evidence.

A sign-off names an evidence hash; if the run is later re-judged or deleted, the hash alone cannot rebuild
what was signed. So signing archives the document itself, content-addressed, in the desk's data folder
beside `signoffs.jsonl`: `documents/<sha256>.json` (the safety case as JSON) and `.html` (the printable
page as read). A file is never rewritten (same content, same name).

`verify` rebuilds the safety case from the runs and the hazard log now and compares it with the archived
one: equal evidence hashes prove the document still matches its evidence; otherwise it names what changed
(`hazards[HAZ-01].controls[CTL-01a].failed: 3 -> 2`), so an edited verdict line is found, not just flagged.
"""

from __future__ import annotations

__all__ = ["FOLDER", "archive_document", "changes", "read_archived", "verify_signoffs"]

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simulator.errors import UserError, pattern_or_message
from simulator.models import ResultModel
from simulator.readers import missing, read_json, read_text
from simulator.safefiles import write_atomic
from simulator.safety.case import SafetyCase
from simulator.safety.signoffs import SignOff, SignOffBook

MAX_CASE_BYTES = 64_000_000  # a signed safety case document: far above any real one

FOLDER = "documents"
HIDDEN = ("generated_at", "evidence_hash")


class Archived(ResultModel):
    """Where a signed document was kept: paths relative to the desk's data folder, and the JSON's sha256."""

    json_path: str
    html_path: str
    sha256: str
    pdf_path: str | None = None


def _write_once(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, sync=False)


def archive_document(folder: Path, case: SafetyCase, html: str, pdf: bytes | None = None) -> Archived:
    """Keep the document as JSON and HTML (and the PDF, when printed) under `folder/documents/`, named by
    the JSON's sha256."""
    data = (case.model_dump_json(indent=2) + "\n").encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    json_path, html_path = Path(FOLDER) / f"{digest}.json", Path(FOLDER) / f"{digest}.html"
    _write_once(folder / json_path, data)
    _write_once(folder / html_path, html.encode("utf-8"))
    pdf_path = Path(FOLDER) / f"{digest}.pdf" if pdf is not None else None
    if pdf is not None and pdf_path is not None:
        _write_once(folder / pdf_path, pdf)
    return Archived(
        json_path=str(json_path),
        html_path=str(html_path),
        sha256=f"sha256:{digest}",
        pdf_path=str(pdf_path) if pdf_path else None,
    )


def read_archived(path: Path) -> SafetyCase:
    """An archived (or exported) safety case JSON; one clear error when it is missing or not one."""
    if missing(path):
        raise UserError(f"{path}: no such document; the desk keeps signed ones under <desk>/{FOLDER}/")
    data = read_json(read_text(path, MAX_CASE_BYTES, "this is not a safety case document"), str(path))
    try:
        return SafetyCase.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise UserError(
            f"{path} [{field}]: not a safety case document ({pattern_or_message(first)}); export it again from the desk"
        ) from None


def _key(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for name in ("id", "run_id", "criterion", "conversation_id"):
            if isinstance(item.get(name), str):
                return item[name]
    return str(index)


def _walk(old: Any, new: Any, path: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            if path == "" and k in HIDDEN:
                continue
            _walk(old.get(k), new.get(k), f"{path}.{k}" if path else k, out)
    elif isinstance(old, list) and isinstance(new, list):
        olds = {_key(x, i): x for i, x in enumerate(old)}
        news = {_key(x, i): x for i, x in enumerate(new)}
        for k in list(olds) + [k for k in news if k not in olds]:
            _walk(olds.get(k), news.get(k), f"{path}[{k}]", out)
    elif old != new:
        shown = lambda v: "absent" if v is None else json.dumps(v, ensure_ascii=False)[:80]  # noqa: E731
        out.append(f"{path}: {shown(old)} -> {shown(new)}")


def changes(signed: SafetyCase, now: SafetyCase) -> list[str]:
    """What differs between a signed document and the same case built now (empty: same evidence)."""
    out: list[str] = []
    _walk(signed.model_dump(mode="json"), now.model_dump(mode="json"), "", out)
    return out


def verify_signoffs(folder: Path, case: SafetyCase) -> list[tuple[SignOff, list[str]]]:
    """Every sign-off of this hazard log and these runs with what changed since (empty list: verified)."""
    runs = {r.run_id for r in case.traceability.runs}
    out: list[tuple[SignOff, list[str]]] = []
    for signoff in SignOffBook(folder).all():
        if signoff.hazard_log != case.traceability.hazard_log or not runs & set(signoff.runs):
            continue
        if signoff.evidence_hash == case.evidence_hash:
            out.append((signoff, []))
        elif signoff.document is None:
            out.append(
                (signoff, ["the evidence hash differs and no document was archived to say what changed"])
            )
        else:
            out.append(
                (signoff, changes(read_archived(folder / signoff.document), case) or ["evidence hash"])
            )
    return out
