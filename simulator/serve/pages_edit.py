"""The scenario and criterion editor: YAML files in the configured folders, validated as you type with the
validator of `simulator validate`, saved in place only when valid (git stays the source of truth)."""

from __future__ import annotations

__all__ = ["routes"]

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from simulator.errors import UserError
from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.readers import missing, read_or_refuse
from simulator.record.transcript import repair_text
from simulator.safefiles import write_atomic
from simulator.serve.bodylimit import read_form
from simulator.serve.config import inside
from simulator.serve.drafts import TEMPLATES, validate_draft
from simulator.serve.names import Route, part, parts
from simulator.serve.render import page

MAX_BYTES = 1_000_000  # a YAML file larger than this is not something a person edits in a text area


def _desk(request: Request) -> Any:
    return request.app.state.desk


def _root(request: Request, area: str) -> Path:
    roots = _desk(request).config.folders()
    if area not in roots:
        raise UserError(f"'{area}': no such folder to edit; the desk edits {', '.join(roots) or 'nothing'}")
    return Path(roots[area])


def _kind(area: str) -> str:
    return "criterion" if area == "judges" else "scenario"


def _file(request: Request, area: str, relative: str) -> tuple[Path, Path, str]:
    """The folder, the file (refusing paths that leave the folder) and the path as shown to the user."""
    root = _root(request, area)
    if not relative.endswith((".yaml", ".yml")):
        raise UserError(f"'{relative}': the editor edits .yaml files only")
    target = inside(root, relative)
    return root, target, str(root / relative)


def _listing(root: Path) -> list[str]:
    base = root.resolve()
    found = [p for p in base.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()]
    return sorted(str(p.relative_to(base)) for p in found)


async def list_page(request: Request) -> Response:
    roots = _desk(request).config.folders()
    areas = {name: _listing(Path(root)) for name, root in roots.items() if Path(root).is_dir()}
    return page(request, "edit_list.html", title="Edit", areas=areas, roots=roots, kinds=sorted(TEMPLATES))


async def file_page(request: Request) -> Response:
    area, relative = request.path_params["area"], request.path_params["path"]
    root, target, shown = _file(request, area, relative)
    if missing(target):
        raise UserError(f"{shown}: no such file")
    text = read_or_refuse(target, MAX_BYTES)
    kind, problems = validate_draft(root, target, text, shown, _kind(area))
    return page(
        request,
        "edit_file.html",
        title=relative,
        area=area,
        path=relative,
        shown=shown,
        kind=kind,
        text=text,
        problems=[str(p) for p in problems],
        saved=request.query_params.get("saved") == "1",
    )


async def _text(request: Request) -> tuple[str, str, str]:
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data = loads_bounded(await request.body(), "the request", max_bytes=2 * MAX_BYTES + 4096)
        except JSONRefused as exc:
            raise UserError(str(exc)) from None
        fields = data if isinstance(data, dict) else {}
    else:
        fields = dict(await read_form(request))
    values = [fields.get(k, "") for k in ("area", "path", "text")]
    if not all(isinstance(v, str) for v in values):
        raise UserError("area, path and text must be text")
    area, relative = values[0], values[1]
    # JSON can carry a lone surrogate (`"\ud800"`), which UTF-8 cannot store: U+FFFD, as a browser's form
    # post and every recorded turn have it. A name keeps it, and `config.inside` refuses it in words.
    text = repair_text(values[2])
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise UserError(f"the file is over {MAX_BYTES} bytes; edit it in your editor")
    return area, relative, text.replace("\r\n", "\n")


async def validate_api(request: Request) -> Response:
    """Live validation: the problems `simulator validate` would report for the text being edited."""
    area, relative, text = await _text(request)
    root, target, shown = _file(request, area, relative)
    kind, problems = validate_draft(root, target, text, shown, _kind(area))
    return JSONResponse({"kind": kind, "problems": [str(p) for p in problems]})


async def save_file(request: Request) -> Response:
    area, relative, text = await _text(request)
    root, target, shown = _file(request, area, relative)
    if not target.is_file():
        raise UserError(f"{shown}: no such file; create it from a template first")
    kind, problems = validate_draft(root, target, text, shown, _kind(area))
    if problems:
        context = {"area": area, "path": relative, "shown": shown, "kind": kind, "text": text}
        listed = [str(p) for p in problems]
        return page(request, "edit_file.html", 422, title=relative, problems=listed, saved=False, **context)
    write_atomic(target, text, sync=False)  # a crash leaves the old file or the new, never half
    return RedirectResponse(f"/edit/{part(area)}/{parts(relative)}?saved=1", 303)


async def new_file(request: Request) -> Response:
    """Create a file from the scenario or criterion template (never over an existing file)."""
    form = await read_form(request)
    area, relative, kind = (str(form.get(k, "")) for k in ("area", "path", "kind"))
    if kind not in TEMPLATES:
        raise UserError(f"kind '{kind}': choose one of {', '.join(sorted(TEMPLATES))}")
    _, target, shown = _file(request, area, relative)
    if target.exists():
        raise UserError(f"{shown} already exists; open it from the list instead")
    target.parent.mkdir(parents=True, exist_ok=True)
    stem = target.stem.replace(" ", "-")
    text = TEMPLATES[kind].replace("new-scenario", stem).replace("new-criterion", stem)
    write_atomic(target, text, sync=False)
    return RedirectResponse(f"/edit/{part(area)}/{parts(relative)}", 303)


def routes() -> list[Route]:
    return [
        Route("/edit", list_page),
        Route("/edit/new", new_file, methods=["POST"]),
        Route("/edit/validate", validate_api, methods=["POST"]),
        Route("/edit/{area}/{path:path}", file_page),
        Route("/edit/{area}/{path:path}", save_file, methods=["POST"]),
    ]
