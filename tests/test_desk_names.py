"""Names from a request, and names recorded in a run, at the desk.

A name the file system cannot take (a part over 255 bytes, a path 3,000 folders deep, a lone surrogate)
reached an OS call and the desk answered 500 ("File name too long"); it is now refused by `config.inside`,
the one door from a request's name to a path, with the error page's one line. A conversation whose id holds
`/`, `?`, `#` or `%` could not be opened: its link kept the `/` and the server split it; every path part of
a link is now encoded (`names.part`) and decoded by the desk's routes (`names.Route`)."""

from __future__ import annotations

import errno
import json
import re
from html import unescape
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.testclient import TestClient

from simulator.serve import create_app
from simulator.serve.config import name_problem
from simulator.serve.names import Route, part, parts
from simulator.tau2.convert import scenario_id
from simulator.traces.records import record_ids
from tests.desk_support import BASE, DeskFolders, csrf, make_desk_folders
from tests.test_report_support import record, verdict, write_run

LONG = "a" * 300
DEEP = "d/" * 3000 + "x.yaml"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> DeskFolders:
    found = make_desk_folders(tmp_path_factory.mktemp("desk"))
    (found.runs / "loop").symlink_to("loop")  # a run folder that is a link to itself
    queue = found.runs.parent / "queue"
    queue.mkdir()
    return found


def _client(folders: DeskFolders) -> TestClient:
    queue = folders.runs.parent / "queue"
    config = folders.config(drafts_dir=queue, drafts_suite=folders.scenarios / "suite.yaml")
    return TestClient(create_app(config), base_url=BASE, raise_server_exceptions=False)


def _error(response: object) -> str:
    """The error page's one line."""
    found = re.search(r'<pre class="problems" id="error">(.*?)</pre>', response.text, re.S)  # type: ignore[attr-defined]
    assert found, response.text  # type: ignore[attr-defined]
    return unescape(found.group(1))


# (address, words of the one line): every one answered 500 before.
GETS = {
    "run": (f"/runs/{LONG}", "a part of 300 bytes"),
    "report": (f"/runs/{LONG}/report", "a part of 300 bytes"),
    "calibration": (f"/runs/{LONG}/calibration", "a part of 300 bytes"),
    "reader": (f"/runs/{LONG}/c/x%230", "a part of 300 bytes"),
    "proposals": (f"/runs/{LONG}/proposals", "a part of 300 bytes"),
    "matrix cell": (f"/runs/{LONG}:cell", "a part of 300 bytes"),
    "label": (f"/label?run={LONG}&labeller=x", "a part of 300 bytes"),
    "draft": (f"/drafts/{LONG}", "a part of 305 bytes"),
    "audio": (f"/runs/tiny/audio/{LONG}.wav", "a part of 304 bytes"),
    "edit file": (f"/edit/scenarios/{LONG}.yaml", "a part of 305 bytes"),
    "edit deep": (f"/edit/scenarios/{DEEP}", "3,001 folders deep"),
    "run link loop": ("/runs/loop", "symbolic link loop"),
}


@pytest.mark.parametrize("name", sorted(GETS))
def test_a_name_the_file_system_cannot_take_is_refused_in_one_line(folders: DeskFolders, name: str) -> None:
    url, words = GETS[name]
    response = _client(folders).get(url)
    assert response.status_code == 400, response.text[:300]
    line = _error(response)
    assert words in line and "\n" not in line and len(line) < 300, line


def _post(folders: DeskFolders, url: str, fields: dict[str, str]) -> object:
    client = _client(folders)
    token = csrf(client)
    body = json.dumps(fields).encode()  # ensure_ascii: a lone surrogate is sent as the escape `\ud800`
    headers = {"content-type": "application/json", "x-csrf-token": token}
    return client.post(url, content=body, headers=headers, follow_redirects=False)


POSTS = {
    "new file of 300 characters": ("/edit/new", LONG + ".yaml", "a part of 305 bytes"),
    "validate a 5000-character path": ("/edit/validate", "p" * 5000 + ".yaml", "5,005 bytes long"),
    "validate a lone surrogate in the path": ("/edit/validate", "scenarios/\ud800.yaml", "lone surrogate"),
    "save a lone surrogate in the path": (
        "/edit/scenarios/x.yaml",
        "scenarios/\ud800.yaml",
        "lone surrogate",
    ),
}


@pytest.mark.parametrize("name", sorted(POSTS))
def test_a_posted_name_the_file_system_cannot_take_is_refused(folders: DeskFolders, name: str) -> None:
    url, path, words = POSTS[name]
    client = _client(folders)
    token = csrf(client)
    if url == "/edit/new":
        form = {"area": "scenarios", "path": path, "kind": "scenario", "csrf": token}
        response = client.post(url, data=form, follow_redirects=False)
    else:
        response = _post(folders, url, {"area": "scenarios", "path": path, "text": "id: x\n"})  # type: ignore[assignment]
    assert response.status_code == 400, response.text[:300]
    assert words in _error(response)


def test_text_with_a_lone_surrogate_is_validated_and_saved_as_u_fffd(tmp_path: Path) -> None:
    """JSON `"\\ud800"` in the edited text answered 500 (UTF-8 cannot write it); as a browser's form post
    does, and as every recorded turn is, it becomes U+FFFD."""
    folders = make_desk_folders(tmp_path)
    target = folders.scenarios / "scenarios" / "ankle-sprain.yaml"  # named as its id, so it saves
    (folders.scenarios / "scenarios" / "ankle.yaml").rename(target)
    text = target.read_text(encoding="utf-8") + "notes: half a pair \ud800 here\n"
    fields = {"area": "scenarios", "path": "scenarios/ankle-sprain.yaml", "text": text}
    checked = _post(folders, "/edit/validate", fields)
    assert checked.status_code == 200 and checked.json()["problems"] == [], checked.text  # type: ignore[attr-defined]
    saved = _post(folders, "/edit/scenarios/scenarios/ankle-sprain.yaml", fields)
    assert saved.status_code == 303, saved.text  # type: ignore[attr-defined]
    assert "half a pair \ufffd here" in target.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "name, words",
    [
        ("a\x00b", "NUL"),
        ("a\udc80b", "lone surrogate"),
        ("é" * 128 + ".yaml", "a part of 261 bytes"),  # 133 characters, 261 bytes
        ("d/" * 32 + "x.yaml", "33 folders deep"),
        ("/".join(["p" * 200] * 6), "1,205 bytes long"),
    ],
)
def test_name_problem_names_what_the_file_system_refuses(name: str, words: str) -> None:
    assert words in (name_problem(name) or "")


@pytest.mark.parametrize("name", ["a.yaml", "é" * 120 + ".yaml", "d/" * 31 + "x.yaml", "p" * 255])
def test_name_problem_takes_what_the_file_system_takes(name: str) -> None:
    assert name_problem(name) is None


def test_an_os_error_of_a_requests_name_is_a_400_any_other_a_500(folders: DeskFolders) -> None:
    """The last line of defence: a name that slipped past `inside` and made the OS say "too long"."""

    def raising(code: int) -> object:
        async def endpoint(request: Request) -> Response:
            raise OSError(code, "from the OS")

        return endpoint

    client = _client(folders)
    app = client.app
    app.router.routes[:0] = [  # type: ignore[attr-defined]
        Route(f"/boom/{code}", raising(code)) for code in (errno.ENAMETOOLONG, errno.ELOOP, errno.EACCES)
    ]
    assert "too long for the file system" in _error(client.get(f"/boom/{errno.ENAMETOOLONG}"))
    assert "symbolic link loop" in _error(client.get(f"/boom/{errno.ELOOP}"))
    assert client.get(f"/boom/{errno.EACCES}").status_code == 500


# Ids an older run may hold (the pattern took them), each a conversation the desk must open.
ODD_IDS = ["x/../../y", "a?b=c&d", "hash#in", "50%off", "%2F", "two words", "café-☕", "..", "back\\slash"]


@pytest.fixture(scope="module")
def odd_run(folders: DeskFolders) -> str:
    records = [record(sid) for sid in ODD_IDS]
    write_run(folders.runs / "odd#run", records, [verdict(r, "asks-age", "fail") for r in records])
    return "odd#run"


def test_every_conversation_opens_from_its_link_whatever_its_id(folders: DeskFolders, odd_run: str) -> None:
    """The run page's links to `x/../../y#0` and the rest answered 404 (`/` split the part, `#` cut the
    address, `%2F` was decoded before routing); each now opens its own conversation, and so do the
    reader's links back to the run and on to the next."""
    client = _client(folders)
    page = client.get(f"/runs/{part(odd_run)}")
    assert page.status_code == 200, page.text[:300]
    links = [unescape(h) for h in re.findall(r'class="conv-link" href="([^"]+)"', page.text)]
    assert len(links) == len(ODD_IDS)
    opened = set()
    for link in links:
        reader = client.get(link)
        assert reader.status_code == 200, (link, reader.text[:300])
        title = unescape(re.search(r"<title>(.*?)</title>", reader.text, re.S).group(1))  # type: ignore[union-attr]
        opened.add(next(f"{sid}#0" for sid in ODD_IDS if title.startswith(f"{sid}#0")))
        for href in re.findall(r'id="(?:next|prev)" href="([^"]+)"', reader.text):
            assert client.get(unescape(href)).status_code == 200, href
    assert opened == {f"{sid}#0" for sid in ODD_IDS}


def test_each_conversation_opens_from_its_encoded_address(folders: DeskFolders, odd_run: str) -> None:
    """`/runs/RUN/c/x%2F..%2F..%2Fy%230`: the server decoded `%2F` before routing, and no route matched."""
    client = _client(folders)
    for sid in ODD_IDS:
        response = client.get(f"/runs/{part(odd_run)}/c/{part(sid + '#0')}")
        assert response.status_code == 200, (sid, response.text[:300])


def test_a_file_with_odd_characters_opens_and_saves_from_the_editor(tmp_path: Path) -> None:
    """The editor's links put the file's path raw in the address: `50% #1?.yaml` was cut at the `#`."""
    folders = make_desk_folders(tmp_path)
    source = folders.scenarios / "scenarios" / "ankle.yaml"
    odd = folders.scenarios / "scenarios" / "50% #1?.yaml"
    odd.write_text(source.read_text(encoding="utf-8").replace("id: ankle", "id: 50%"), encoding="utf-8")
    client = _client(folders)
    listing = client.get("/edit")
    href = next(unescape(h) for h in re.findall(r'href="(/edit/scenarios/[^"]+)"', listing.text) if "50" in h)
    assert href == f"/edit/scenarios/{parts('scenarios/50% #1?.yaml')}"
    opened = client.get(href)
    assert opened.status_code == 200 and "id: 50%" in opened.text, opened.text[:300]
    form = re.search(r'<form method="post" action="([^"]+)" id="editor"', opened.text).group(1)  # type: ignore[union-attr]
    fields = {"area": "scenarios", "path": "scenarios/50% #1?.yaml", "text": odd.read_text(encoding="utf-8")}
    saved = client.post(unescape(form), data={**fields, "csrf": csrf(client)}, follow_redirects=False)
    assert saved.status_code in (303, 422), saved.text[:300]
    assert client.get(saved.headers.get("location", href)).status_code == 200


IMPORTED = {
    "../../etc/passwd#0": ("..-..-etc-passwd-0", 0),
    "a\\b#2": ("a-b-2", 0),
    "\x1b[31mred#1": ("[31mred-1", 0),
    "x" * 300 + "#0": ("x" * 190, 0),
    "chest-pain#3": ("chest-pain", 3),  # a record id, as `export-otel` writes it: kept
}


def test_an_imported_conversation_gets_an_id_a_scenario_takes() -> None:
    """An imported key became a scenario id with its `/` and control characters, and the desk's draft of
    it a file path out of the scenarios folder (`drafts/draft-../../x.yaml`)."""
    assert {key: record_ids(key, set(), set()) for key in IMPORTED} == IMPORTED


def test_a_tau2_task_id_becomes_a_scenario_id() -> None:
    assert scenario_id("retail", "a/b\\c d#e\x07") == "tau2-retail-a_b_c_d_e"
