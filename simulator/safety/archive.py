"""The signed document kept, and a document checked against its evidence.

A sign-off names an evidence hash; if the run is later re-judged or deleted, the hash alone cannot rebuild
what was signed. So signing archives the document itself, content-addressed, in the desk's data folder
beside `signoffs.jsonl`: `documents/<sha256>.json` (the safety case as JSON) and `.html` (the printable
page as read). A file is never rewritten (same content, same name).

Signing also keeps the sign-off's own record (`documents/signoffs/<sha256>.json`: who, the decision, the
comment, the justification and the hashes), so an edited `signoffs.jsonl` line is found too.

`verify` trusts neither the line nor the names: a sign-off is checked only when its archived document is
there and re-hashes to the line's `document_sha256`, and its record re-hashes to `record_sha256` and says
what the line says (the decision included). It is a sign-off of these runs when its hazard log has the same
sha256 (or the same name: an edited log is reported as changed) and its archived document read a run of the
same identity (id, creation time and suite hash), not merely a folder of the same name. Then the case is
rebuilt from the runs and the log now and compared with the archived one, naming what changed
(`hazards[HAZ-01].controls[CTL-01a].failed: 3 -> 2`). A hash is tamper-evidence against an edit of one
file, not a signature: whoever can rewrite the line, the document and the record together can forge all three.
"""

from __future__ import annotations

__all__ = ["FOLDER", "archive_document", "archive_record", "changes", "read_archived", "verify_signoffs"]

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simulator.errors import UserError, field_path, pattern_or_message
from simulator.models import ResultModel
from simulator.readers import missing, read_json, read_text
from simulator.safefiles import FileRefused, read_capped, write_atomic
from simulator.safety.case import SafetyCase
from simulator.safety.signoffs import SignOff, SignOffBook

MAX_CASE_BYTES = 64_000_000  # a signed safety case document: far above any real one

FOLDER = "documents"
RECORDS = "signoffs"  # under FOLDER: each sign-off's own record, content-addressed
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
        field = field_path(first["loc"]) or "(document)"
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


def _record_bytes(signoff: SignOff) -> bytes:
    return (signoff.model_dump_json(exclude={"record_sha256"}) + "\n").encode("utf-8")


def archive_record(folder: Path, signoff: SignOff) -> SignOff:
    """Keep the sign-off's own record beside its document; the sign-off, naming the record's sha256."""
    data = _record_bytes(signoff)
    digest = hashlib.sha256(data).hexdigest()
    _write_once(folder / FOLDER / RECORDS / f"{digest}.json", data)
    return signoff.model_copy(update={"record_sha256": f"sha256:{digest}"})


def _kept(folder: Path, relative: str, sha256: str | None, what: str) -> tuple[bytes | None, str | None]:
    """The bytes of an archived file that re-hash to `sha256`, or why not (missing, unreadable, edited)."""
    path = folder / relative
    if missing(path):
        return None, f"the archived {what} {path} is missing: this sign-off cannot be checked; sign again"
    try:
        data = read_capped(path, MAX_CASE_BYTES, "this is not an archived file")
    except FileRefused as exc:
        return None, f"the archived {what} {path} cannot be read ({exc}); sign again"
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if digest != sha256:
        return None, f"the archived {what} {path} was edited since signing (now {digest}, signed {sha256})"
    return data, None


def _record_changes(folder: Path, signoff: SignOff) -> list[str]:
    """What the sign-off line says differently from its archived record (empty: the line is as signed)."""
    if signoff.record_sha256 is None:
        return [
            "the sign-off line names no archived record of itself (signed before records were kept): "
            "its name, role and decision cannot be checked; sign again"
        ]
    digest = signoff.record_sha256.removeprefix("sha256:")
    data, problem = _kept(
        folder, f"{FOLDER}/{RECORDS}/{digest}.json", signoff.record_sha256, "sign-off record"
    )
    if data is None:
        return [problem or "the sign-off record"]
    kept = json.loads(data)
    line = json.loads(_record_bytes(signoff))
    out: list[str] = []
    _walk(kept, line, "", out)
    return [f"the sign-off line was edited since signing: {change}" for change in out]


def _archived_case(folder: Path, signoff: SignOff) -> tuple[SafetyCase | None, str | None]:
    """The signed document, only when it is archived and re-hashes to the line's `document_sha256`."""
    if signoff.document is None or signoff.document_sha256 is None:
        return None, "no document was archived with this sign-off: nothing to check it against; sign again"
    data, problem = _kept(folder, signoff.document, signoff.document_sha256, "document")
    if data is None:
        return None, problem
    signed = read_archived(folder / signoff.document)
    if signed.evidence_hash != signoff.evidence_hash:
        return signed, (
            f"the sign-off line names the evidence {signoff.evidence_hash}, its archived document "
            f"{signed.evidence_hash}: the line was edited"
        )
    return signed, None


def _run_key(run: Any) -> tuple[str, str, str | None]:
    """A run's identity: its id, creation time and suite hash (a folder of the same name is another run)."""
    return run.run_id, run.created_at, run.suite_hash


def _of_these(signoff: SignOff, signed: SafetyCase | None, case: SafetyCase) -> bool:
    """A sign-off of this hazard log (same sha256, or same name) and of these runs (by identity when its
    document is there to say; by name only when it is not, so that a missing archive is still reported)."""
    trace = case.traceability
    if signoff.hazard_log_sha256 != trace.hazard_log_sha256 and signoff.hazard_log != trace.hazard_log:
        return False
    if signed is None:
        return bool({r.run_id for r in trace.runs} & set(signoff.runs))
    return bool({_run_key(r) for r in signed.traceability.runs} & {_run_key(r) for r in trace.runs})


def _renamed_only(signoff: SignOff, case: SafetyCase, found: list[str]) -> list[str]:
    """Drop the hazard log's new name when its content is the one signed (a rename changes no evidence)."""
    if signoff.hazard_log_sha256 != case.traceability.hazard_log_sha256:
        return found
    return [line for line in found if not line.startswith("traceability.hazard_log: ")]


def verify_signoffs(folder: Path, case: SafetyCase) -> list[tuple[SignOff, list[str]]]:
    """Every sign-off of this hazard log and these runs with what changed since (empty list: verified): the
    archived document and record must be intact, and the document must match the case built now."""
    out: list[tuple[SignOff, list[str]]] = []
    for signoff in SignOffBook(folder).all():
        signed, problem = _archived_case(folder, signoff)
        if not _of_these(signoff, signed, case):
            continue
        found = [problem] if problem else []
        found += _record_changes(folder, signoff)
        if signed is not None and problem is None:
            found += _renamed_only(signoff, case, changes(signed, case))
        out.append((signoff, found))
    return out
