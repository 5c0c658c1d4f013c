"""The desk as a reader meets it (issue 31, item 16): the failing verdict first and the simulated user's
own checks apart, the report page under the desk's header with the judge set chosen in the desk (no CLI
flag), labelling samples per criterion, matrix cells listed as runs, no server path on the calibration page."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from simulator.cli import main
from simulator.record.folder import RunFolder
from tests.desk_support import DeskFolders, csrf, desk_client, make_desk_folders
from tests.test_report_support import record, verdict, write_run

ROOT = Path(__file__).resolve().parent.parent
FIDELITY = ["drift", "early_reveal", "invented_facts", "premature_end", "role_confusion"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> DeskFolders:
    root = tmp_path_factory.mktemp("reading")
    folders = make_desk_folders(root)
    # One conversation whose one failing verdict sorts last by name, behind the simulated user's checks.
    rec = record("chest")
    verdicts = [verdict(rec, f"fidelity.{name}", "pass", kind="fidelity") for name in FIDELITY]
    verdicts += [verdict(rec, name, "pass", severity="major") for name in ("asks-age", "asks-duration")]
    verdicts += [verdict(rec, "stays-in-scope", "not_judged", reasoning="no judge model configured")]
    verdicts += [verdict(rec, "zz-calls-999", "fail", severity="critical", reasoning="it never said 999")]
    verdicts += [verdict(rec, "fidelity.leaked_goal", "fail", kind="fidelity", reasoning="said the goal")]
    write_run(folders.runs / "ordered", [rec], verdicts)
    # A run judged twice: two judge sets.
    rejudged = [verdict(rec, "asks-age", "pass", judge_set_hash="sha256:" + "a" * 64)]
    rejudged += [verdict(rec, "asks-age", "fail", judge_set_hash="sha256:" + "b" * 64)]
    write_run(folders.runs / "rejudged", [rec], rejudged)
    # A matrix run: its cells are runs too.
    matrix = folders.runs / "grid"
    assert main(["run", str(ROOT / "scenarios" / "triage-matrix" / "suite.yaml"), "--out", str(matrix),
                 "--runs", "1", "--no-progress"]) == 0  # fmt: skip
    return folders


@pytest.fixture
def client(folders: DeskFolders) -> TestClient:
    return desk_client(folders)


def _cards(page: str) -> list[str]:
    return re.findall(r'<div class="verdict r-\w+" data-criterion="([^"]+)"', page)


def test_the_reader_puts_failures_first_and_the_simulators_checks_apart(client: TestClient) -> None:
    page = client.get("/runs/ordered/c/" + quote("chest#0")).text
    cards = _cards(page)
    assert cards[0] == "zz-calls-999"  # the one failure on the bot, first although last by name
    bot, user = page.index('id="bot-verdicts"'), page.index('id="simulator-checks"')
    assert bot < user
    bot_cards = _cards(page[bot:user])
    user_cards = _cards(page[user:])
    assert bot_cards == ["zz-calls-999", "asks-age", "asks-duration", "stays-in-scope"]
    assert user_cards[0] == "fidelity.leaked_goal"  # the simulator's failure first in its own group
    assert sorted(user_cards[1:]) == [f"fidelity.{n}" for n in FIDELITY]
    assert "was the test fair?" in page


def test_a_conversation_without_simulator_checks_has_no_empty_group(client: TestClient) -> None:
    page = client.get("/runs/hostile/c/" + quote("hostile#0")).text
    assert 'id="bot-verdicts"' in page and 'id="simulator-checks"' not in page


def test_the_report_page_has_the_desks_header_and_no_cli_flag(client: TestClient) -> None:
    page = client.get("/runs/rejudged/report").text
    head = page[page.index("<body>") : page.index("<main>")]
    assert 'id="back-to-run" href="/runs/rejudged"' in head
    for link in ('href="/"', 'href="/label"', 'href="/edit"'):
        assert link in head
    assert "--judge-set" not in page  # the finding's advice names the desk's own choice instead
    assert "pick another in the header above" in page
    sets = head[head.index('id="judge-sets"') :]
    assert "bbbbbbbbbbbb (shown)" in sets  # the latest set, as `simulator report`
    assert 'href="/runs/rejudged/report?judge_set=sha256%3A' + "a" * 64 + '"' in sets
    other = client.get("/runs/rejudged/report", params={"judge_set": "sha256:" + "a" * 64}).text
    assert "aaaaaaaaaaaa (shown)" in other[: other.index("<main>")]
    wrong = client.get("/runs/rejudged/report", params={"judge_set": "nope"})
    assert wrong.status_code == 400 and "is not one of run rejudged" in wrong.text
    assert "Traceback" not in wrong.text


def test_matrix_cells_are_listed_and_open_like_runs(folders: DeskFolders, client: TestClient) -> None:
    page = client.get("/").text
    listed = re.findall(r'data-run="([^"]+)"', page)
    assert {"grid:fixed", "grid:original"} <= set(listed)
    assert listed.index("grid:original") + 1 == listed.index("grid:fixed") or listed.index(
        "grid:fixed"
    ) + 1 == listed.index("grid:original")  # a matrix's cells stay together
    assert "a cell of the matrix run grid" in page
    cell = quote("grid:fixed")
    run = client.get(f"/runs/{cell}")
    assert run.status_code == 200
    first = re.findall(r'class="conv-link" href="([^"?]+)', run.text)[0]
    assert client.get(first).status_code == 200
    for url in (f"/runs/{cell}/report", f"/runs/{cell}/calibration", f"/label?run={cell}"):
        assert client.get(url).status_code == 200, url
    assert (folders.runs / "grid" / "fixed" / "manifest.json").is_file()


@pytest.mark.parametrize("name", ["grid:nope", "grid:..", "..:fixed", "grid:fixed:x", "tiny:fixed", ":fixed"])
def test_a_cell_name_cannot_leave_its_matrix(client: TestClient, name: str) -> None:
    assert client.get(f"/runs/{quote(name)}").status_code in (400, 404)


def test_the_calibration_page_shows_no_server_path(folders: DeskFolders, client: TestClient) -> None:
    token = csrf(client)
    queue = "run=tiny&labeller=Ann&criterion=asks-danger-signs&sampling=all"
    form = {"csrf": token, "queue": queue, "conversation": "chest-pain#0", "criterion_id": "asks-danger-signs",
            "label": "fail"}  # fmt: skip
    assert client.post("/label", data=form).status_code == 200
    page = client.get("/runs/tiny/calibration").text
    assert "Ann" in page and "labels.jsonl" in page
    for path in (folders.runs, folders.runs.resolve(), Path.cwd()):
        assert str(path) not in page
    assert "simulator calibrate</code>" in page


def test_labelling_says_n_is_per_criterion_and_names_every_criterion(client: TestClient) -> None:
    start = client.get("/label?run=tiny").text
    assert "n per criterion" in start and "random: n of each criterion" in start
    query = "run=tiny&labeller=Bo&criterion=asks-danger-signs&criterion=asks-pregnancy&sampling=random&n=2"
    item = client.get(f"/label/next?{query}")  # follows the redirect to the first item
    assert item.status_code == 200
    what = re.search(r'<span id="queue-what">(.*?)</span>', item.text)
    assert what and what.group(1) == "random 2 of each of asks-danger-signs, asks-pregnancy"
    assert "item 1 of 4" in item.text


def test_reading_writes_nothing_into_a_matrix_cell(
    folders: DeskFolders, client: TestClient, tmp_path: Path
) -> None:
    cell = folders.runs / "grid" / "original"
    before = {p.name: p.read_bytes() for p in cell.iterdir() if p.is_file()}
    for url in ("/", f"/runs/{quote('grid:original')}", f"/runs/{quote('grid:original')}/report"):
        assert client.get(url).status_code == 200
    assert {p.name: p.read_bytes() for p in cell.iterdir() if p.is_file()} == before
    assert RunFolder.open(cell).read_manifest().status == "complete"


def test_a_confirmed_failure_points_into_the_desk_not_at_a_command(
    folders: DeskFolders, client: TestClient
) -> None:
    queue = "run=ordered&labeller=Cy&criterion=zz-calls-999&sampling=all&n=20&seed=0"
    form = {"csrf": csrf(client), "queue": queue, "conversation": "chest#0", "criterion_id": "zz-calls-999",
            "label": "fail"}  # fmt: skip
    saved = client.post("/label", data=form)
    assert saved.status_code == 200 and 'id="confirmed"' in saved.text
    confirmed = saved.text[saved.text.index('id="confirmed"') :].split("</p>")[0]
    assert "simulator " not in confirmed and "--" not in confirmed
    assert str(folders.runs) not in saved.text and str(folders.runs.resolve()) not in saved.text
    assert f'href="/runs/ordered/c/{quote("chest#0")}"' in confirmed
