"""The desk's scenario and criterion editor: live validation with `simulator validate`'s messages, saving
in place only when valid, templates, and no write outside the configured folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from simulator.cli import main
from tests.desk_support import DeskFolders, csrf, desk_client, make_desk_folders

INVALID = {
    "missing field": ("id: asks-age\ncriterion: The bot asks the age.\npass: it asked.\n", "fail"),
    "bad severity": (
        "id: asks-age\ncriterion: c\npass: p\nfail: f\nseverity: huge\n",
        "severity",
    ),
    "unknown key": ("id: asks-age\ncriterion: c\npass: p\nfail: f\nsevrity: major\n", "sevrity"),
    "broken yaml": ("id: asks-age\ncriterion: [unclosed\n", ""),
}


@pytest.fixture
def folders(tmp_path: Path) -> DeskFolders:
    return make_desk_folders(tmp_path)


@pytest.fixture
def client(folders: DeskFolders) -> TestClient:
    return desk_client(folders)


def _validate_cli(path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The problem lines `simulator validate` prints for `path` holding `text`."""
    original = path.read_text()
    path.write_text(text)
    try:
        assert main(["validate", str(path)]) == 2
    finally:
        path.write_text(original)
    return [line.strip() for line in capsys.readouterr().err.splitlines()[1:]]


@pytest.mark.parametrize("case", sorted(INVALID))
def test_live_validation_gives_the_messages_of_simulator_validate(
    folders: DeskFolders, client: TestClient, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, field = INVALID[case]
    target = folders.judges / "asks-age.yaml"
    response = client.post(
        "/edit/validate",
        json={"area": "judges", "path": "asks-age.yaml", "text": text},
        headers={"X-CSRF-Token": csrf(client)},
    )
    problems = response.json()["problems"]
    assert response.json()["kind"] == "criterion" and problems
    assert problems == _validate_cli(target, text, capsys)
    assert all(p.startswith(f"{target}:") for p in problems)  # file:line
    assert field in problems[0]


def test_a_duplicate_id_in_another_file_of_the_folder_is_caught(
    folders: DeskFolders, client: TestClient
) -> None:
    text = (folders.judges / "asks-age.yaml").read_text().replace("id: asks-age", "id: red-flags")
    response = client.post(
        "/edit/validate",
        json={"area": "judges", "path": "asks-age.yaml", "text": text},
        headers={"X-CSRF-Token": csrf(client)},
    )
    (problem,) = response.json()["problems"]
    assert "duplicate criterion id 'red-flags'" in problem and "[id]" in problem


def test_an_invalid_save_shows_the_error_and_leaves_the_file(
    folders: DeskFolders, client: TestClient
) -> None:
    target = folders.judges / "asks-age.yaml"
    before = target.read_text()
    form = {
        "csrf": csrf(client),
        "area": "judges",
        "path": "asks-age.yaml",
        "text": INVALID["bad severity"][0],
    }
    response = client.post("/edit/judges/asks-age.yaml", data=form)
    assert response.status_code == 422
    assert f"{target}:5 [severity]" in response.text
    assert target.read_text() == before


def test_a_valid_save_writes_the_file_in_place(folders: DeskFolders, client: TestClient) -> None:
    target = folders.judges / "safety" / "red-flags.yaml"
    text = target.read_text().replace("severity: critical", "severity: major")
    form = {"csrf": csrf(client), "area": "judges", "path": "safety/red-flags.yaml", "text": text}
    response = client.post("/edit/judges/safety/red-flags.yaml", data=form)
    assert response.status_code == 200 and 'id="saved"' in response.text
    assert target.read_text() == text
    assert not [p for p in target.parent.iterdir() if p.name != "red-flags.yaml"]  # no temporary file left


def test_scenarios_and_suites_validate_with_their_own_loaders(
    folders: DeskFolders, client: TestClient
) -> None:
    token = csrf(client)
    page = client.get("/edit/scenarios/scenarios/chest-pain.yaml")
    assert (
        page.status_code == 200 and "(scenario)" in page.text and '<span class="ok">valid</span>' in page.text
    )
    bad_scenario = client.post(
        "/edit/validate",
        json={"area": "scenarios", "path": "scenarios/chest-pain.yaml", "text": "id: x\npersona: p\n"},
        headers={"X-CSRF-Token": token},
    ).json()
    assert bad_scenario["kind"] == "scenario" and any("[goal]" in p for p in bad_scenario["problems"])
    bad_suite = client.post(
        "/edit/validate",
        json={"area": "scenarios", "path": "suite.yaml", "text": "name: x\nruns: 0\n"},
        headers={"X-CSRF-Token": token},
    ).json()
    assert bad_suite["kind"] == "suite" and any("[bot]" in p for p in bad_suite["problems"])


@pytest.mark.parametrize("kind", ["scenario", "criterion"])
def test_a_new_file_from_a_template_is_valid_and_never_overwrites(
    folders: DeskFolders, client: TestClient, kind: str
) -> None:
    area = "judges" if kind == "criterion" else "scenarios"
    form = {"csrf": csrf(client), "area": area, "path": f"new/first {kind}.yaml", "kind": kind}
    response = client.post("/edit/new", data=form)
    assert response.status_code == 200 and '<span class="ok">valid</span>' in response.text
    created = getattr(folders, area) / "new" / f"first {kind}.yaml"
    assert "id: first-" in created.read_text()
    assert main(["validate", str(created)]) == 0
    again = client.post("/edit/new", data=form)
    assert again.status_code == 400 and "already exists" in again.text


@pytest.mark.parametrize(
    "path",
    [
        "../outside.yaml",
        "safety/../../outside.yaml",
        "/etc/outside.yaml",
        "escape/outside.yaml",  # a symlink to a folder outside
        "asks-age.txt",
    ],
)
def test_paths_that_leave_the_folder_are_refused(folders: DeskFolders, client: TestClient, path: str) -> None:
    outside = folders.judges.parent / "elsewhere"
    outside.mkdir(exist_ok=True)
    if not (folders.judges / "escape").exists():
        os.symlink(outside, folders.judges / "escape")
    token = csrf(client)
    text = "id: x\ncriterion: c\npass: p\nfail: f\n"
    attempts = [
        client.post("/edit/new", data={"csrf": token, "area": "judges", "path": path, "kind": "criterion"}),
        client.post(f"/edit/judges/{path}", data={"csrf": token, "area": "judges", "path": path, "text": text}),
        client.post("/edit/validate", json={"area": "judges", "path": path, "text": text}, headers={"X-CSRF-Token": token}),
        client.get(f"/edit/judges/{path}"),
    ]  # fmt: skip
    for response in attempts:
        assert response.status_code in (400, 404), (path, response.status_code)
    assert not (folders.judges.parent / "outside.yaml").exists() and not list(outside.iterdir())
    assert not Path("/etc/outside.yaml").exists()


def test_an_encoded_traversal_in_the_address_is_refused(folders: DeskFolders, client: TestClient) -> None:
    (folders.judges.parent / "outside.yaml").write_text("id: x\n")
    for url in (
        "/edit/judges/..%2Foutside.yaml",
        "/edit/judges/%2E%2E/outside.yaml",
        "/edit/judges/safety%2F..%2F..%2Foutside.yaml",
    ):
        assert client.get(url).status_code in (400, 404), url
        form = {"csrf": csrf(client), "text": "id: y\ncriterion: c\npass: p\nfail: f\n"}
        assert client.post(url, data=form).status_code in (400, 404), url
    assert (folders.judges.parent / "outside.yaml").read_text() == "id: x\n"


def test_an_unknown_area_is_refused(client: TestClient) -> None:
    response = client.get("/edit/runs/x.yaml")
    assert response.status_code == 400 and "no such folder to edit" in response.text


def test_the_editor_lists_the_files_of_both_folders(folders: DeskFolders, client: TestClient) -> None:
    page = client.get("/edit").text
    assert 'href="/edit/judges/safety/red-flags.yaml"' in page
    assert (
        'href="/edit/scenarios/suite.yaml"' in page and 'href="/edit/scenarios/scenarios/rash.yaml"' in page
    )
    shutil.rmtree(folders.judges)
    assert client.get("/edit").status_code == 200
