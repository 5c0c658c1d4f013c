"""Talk to the bot: a person plays a scenario's user against the bot under test; the talk is saved and
judged as a run folder like any other."""

from __future__ import annotations

__all__ = ["routes"]

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from simulator.errors import UserError
from simulator.record.models import conversation_key
from simulator.serve.bodylimit import read_form
from simulator.serve.config import inside
from simulator.serve.names import Route, part
from simulator.serve.render import page
from simulator.serve.talks import load_suite_scenarios, suite_files

MAX_MESSAGE = 20_000


def _desk(request: Request) -> Any:
    return request.app.state.desk


def _suites(request: Request) -> tuple[Path | None, list[str]]:
    root = _desk(request).config.scenarios_dir
    if root is None:
        return None, []
    return root, [str(p.relative_to(root)) for p in suite_files(root)]


def _suite_file(request: Request, relative: str) -> Path:
    root, known = _suites(request)
    if root is None or relative not in known:
        raise UserError(f"'{relative}': not a suite under the scenarios folder")
    return inside(root, relative)


async def start_page(request: Request) -> Response:
    _, suites = _suites(request)
    suite = request.query_params.get("suite") or (suites[0] if suites else "")
    scenarios: list[Any] = []
    chosen = None
    if suite:
        _, scenarios = load_suite_scenarios(_suite_file(request, suite))
        wanted = request.query_params.get("scenario", "")
        chosen = next((s for s in scenarios if s.id == wanted), None)
    return page(
        request,
        "talk_start.html",
        title="Talk to the bot",
        suites=suites,
        suite=suite,
        scenarios=scenarios,
        chosen=chosen,
    )


async def start_talk(request: Request) -> Response:
    form = await read_form(request)
    suite, scenario, name = (" ".join(str(form.get(k, "")).split()) for k in ("suite", "scenario", "name"))
    if not name:
        raise UserError("give your name: the run records the user as human:<name>")
    talk = await _desk(request).talks.start(_suite_file(request, suite), scenario, name)
    return RedirectResponse(f"/talk/{part(talk.id)}", 303)


async def talk_page(request: Request) -> Response:
    talk = _desk(request).talks.get(request.path_params["talk"])
    return page(request, "talk.html", title="Talk to the bot", talk=talk, failure=talk.failure())


async def say(request: Request) -> Response:
    desk = _desk(request)
    talk = desk.talks.get(request.path_params["talk"])
    text = str((await read_form(request)).get("text", "")).strip()
    if not text:
        raise UserError("write a message first")
    if len(text) > MAX_MESSAGE:
        raise UserError(f"a message is at most {MAX_MESSAGE} characters")
    await desk.talks.say(talk, text)
    return RedirectResponse(f"/talk/{part(talk.id)}", 303)


async def tap(request: Request) -> Response:
    """The person tapped one of the bot's buttons or list rows."""
    desk = _desk(request)
    talk = desk.talks.get(request.path_params["talk"])
    option = str((await read_form(request)).get("option", "")).strip()
    if not option:
        raise UserError("choose one of the bot's options")
    await desk.talks.tap(talk, option)
    return RedirectResponse(f"/talk/{part(talk.id)}", 303)


async def end(request: Request) -> Response:
    desk = _desk(request)
    talk = desk.talks.get(request.path_params["talk"])
    result = await desk.talks.end(talk)
    if result is None:
        return page(request, "talk.html", 500, title="Talk to the bot", talk=talk, failure=talk.failure())
    key = conversation_key(talk.scenario.id, 0)
    return RedirectResponse(f"/runs/{part(talk.folder.name)}/c/{part(key)}", 303)


def routes() -> list[Route]:
    return [
        Route("/talk", start_page),
        Route("/talk", start_talk, methods=["POST"]),
        Route("/talk/{talk}", talk_page),
        Route("/talk/{talk}/say", say, methods=["POST"]),
        Route("/talk/{talk}/tap", tap, methods=["POST"]),
        Route("/talk/{talk}/end", end, methods=["POST"]),
    ]
