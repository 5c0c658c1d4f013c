"""The desk's safety-case pages: the document, append-only sign-offs that name their evidence, the history."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from simulator.record.folder import RunFolder
from simulator.record.models import Label
from simulator.safety.signoffs import SignOffBook
from simulator.serve import DeskConfig, create_app
from tests.desk_support import BASE, csrf
from tests.support.hazard_logs import one_control_log
from tests.synthetic import synthetic_outcome_run

HAZARDS = one_control_log(
    ["outcome.triage_level"],
    "Desk test log",
    threshold="under_triage <= 5%",
    hazard="Missed emergency <script>alert(1)</script>",
)


@pytest.fixture
def desk(tmp_path: Path) -> tuple[TestClient, Path, Path]:
    runs = tmp_path / "runs"
    synthetic_outcome_run(runs / "run-a", {f"s{i}": [True, i != 0] for i in range(4)})
    log = tmp_path / "hazards.yaml"
    log.write_text(HAZARDS, encoding="utf-8")
    data = tmp_path / "desk-data"
    app = create_app(DeskConfig(runs, hazards=log, data_dir=data))
    return TestClient(app, base_url=BASE), runs, data


def _evidence(page: str) -> str:
    match = re.search(r'name="evidence_hash" value="([^"]+)"', page)
    assert match is not None
    return match.group(1)


def _sign(
    client: TestClient, run: str, evidence: str, name: str, decision: str, comment: str = "", why: str = ""
) -> int:
    form = {
        "csrf": csrf(client),
        "evidence_hash": evidence,
        "name": name,
        "role": "Clinical Safety Officer",
        "decision": decision,
        "comment": comment,
        "justification": why,
    }
    return client.post(f"/safety/{run}/sign", data=form, follow_redirects=False).status_code


def test_the_safety_page_shows_the_case_and_escapes_the_hazard_log(
    desk: tuple[TestClient, Path, Path],
) -> None:
    client, _, _ = desk
    page = client.get("/safety/run-a").text
    assert "not met" in page and "C-1" in page and "Nobody has signed" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)" in page
    # The failing conversation links to its transcript in the desk, and the link opens it.
    assert '<a href="/runs/run-a/c/s0%231">s0#1</a>' in page
    assert client.get("/runs/run-a/c/s0%231").status_code == 200
    document = client.get("/safety/run-a/document")
    assert document.status_code == 200 and "@page { size: A4" in document.text
    assert "script-src" not in document.headers["content-security-policy"]
    assert "<script>alert" not in document.text


def test_sign_offs_are_appended_with_their_evidence_and_several_reviewers_listed(
    desk: tuple[TestClient, Path, Path],
) -> None:
    client, runs, data = desk
    before = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in (runs / "run-a").iterdir())
    evidence = _evidence(client.get("/safety/run-a").text)
    assert _sign(client, "run-a", evidence, "Dr Ada", "reject", "under-triage of s0") == 303
    first = (data / "signoffs.jsonl").read_bytes()
    conditions = ("only with a nurse", "a nurse reads every transcript")
    assert _sign(client, "run-a", evidence, "Dr Bea", "approve with conditions", *conditions) == 303
    after = (data / "signoffs.jsonl").read_bytes()
    assert after.startswith(first) and after.count(b"\n") == 2  # append-only: the first line is untouched
    page = client.get("/safety/run-a").text
    assert page.index("Dr Bea") < page.index("Dr Ada")  # newest first
    assert page.count("signed for run run-a on this evidence") == 2
    assert [s.evidence_hash for s in SignOffBook(data).all()] == [evidence, evidence]
    # Nothing was written into the run folder.
    assert (
        sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in (runs / "run-a").iterdir()) == before
    )


def test_a_sign_off_is_shown_invalid_once_the_evidence_changes(desk: tuple[TestClient, Path, Path]) -> None:
    client, runs, _ = desk
    evidence = _evidence(client.get("/safety/run-a").text)
    assert _sign(client, "run-a", evidence, "Dr Ada", "approve", "", "pilot with 10 users") == 303
    # New clinician labels on the run change the evidence (the labels file is one of its hashes).
    label = Label(
        labeller="dr-c",
        labelled_at=datetime.now(UTC),
        conversation_id="s1#0",
        criterion_id="outcome.triage_level",
        label="pass",
    )
    RunFolder.open(runs / "run-a").append_labels([label])
    page = client.get("/safety/run-a").text
    assert _evidence(page) != evidence
    assert "signed for run run-a; the evidence has changed since" in page
    # A later run of the same hazard log shows the earlier sign-off against its own evidence.
    synthetic_outcome_run(runs / "run-b", {f"s{i}": [True] for i in range(4)})
    assert "signed for run run-a; the evidence has changed since" in client.get("/safety/run-b").text


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": ""}, "give your name and your role"),
        ({"decision": "maybe"}, "choose a decision"),
        ({"decision": "approve with conditions", "comment": ""}, "write the conditions"),
        ({"decision": "approve", "justification": " "}, "HAZ-1); write a justification"),
        ({"evidence_hash": "sha256:stale"}, "the evidence changed while you were reading it"),
    ],
)
def test_bad_sign_offs_get_one_clear_error_and_write_nothing(
    desk: tuple[TestClient, Path, Path], fields: dict[str, str], message: str
) -> None:
    client, _, data = desk
    evidence = _evidence(client.get("/safety/run-a").text)
    form = {
        "csrf": csrf(client),
        "evidence_hash": evidence,
        "name": "Dr Ada",
        "role": "CSO",
        "decision": "approve",
        "comment": "",
        "justification": "accepted for a supervised pilot",
        **fields,
    }
    response = client.post("/safety/run-a/sign", data=form)
    assert response.status_code == 400 and message in response.text
    assert not (data / "signoffs.jsonl").exists()


def test_signing_needs_the_csrf_value_and_this_origin(desk: tuple[TestClient, Path, Path]) -> None:
    client, _, data = desk
    evidence = _evidence(client.get("/safety/run-a").text)
    form = {"evidence_hash": evidence, "name": "x", "role": "y", "decision": "approve"}
    assert client.post("/safety/run-a/sign", data=form).status_code == 403
    forged = {**form, "csrf": csrf(client)}
    assert (
        client.post("/safety/run-a/sign", data=forged, headers={"Origin": "http://evil.example"}).status_code
        == 403
    )
    assert not (data / "signoffs.jsonl").exists()


def test_the_history_page_charts_the_runs_of_a_suite(desk: tuple[TestClient, Path, Path]) -> None:
    client, runs, _ = desk
    synthetic_outcome_run(runs / "run-b", {f"s{i}": [True, True] for i in range(4)})
    listing = client.get("/history").text
    assert 'href="/history?suite=synthetic"' in listing
    page = client.get("/history?suite=synthetic")
    assert page.status_code == 200 and page.text.count("<svg") >= 2 and "HAZ-1" in page.text
    assert "run-a → run-b" in page.text
    # The axis names the runs and their dates, and marks the signed ones.
    assert ">2 run-b</text>" in page.text and "✓ signed" not in page.text
    evidence = _evidence(client.get("/safety/run-b").text)
    assert _sign(client, "run-b", evidence, "Dr Ada", "reject") == 303
    page = client.get("/history?suite=synthetic")
    assert "✓ signed" in page.text and "signed: Dr Ada: reject" in page.text


def test_without_a_hazard_log_the_page_says_how_to_start_the_desk(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    synthetic_outcome_run(runs / "run-a", {"s1": [True]})
    client = TestClient(create_app(DeskConfig(runs)), base_url=BASE)
    response = client.get("/safety/run-a")
    assert response.status_code == 400 and "simulator serve --hazards" in response.text
    assert DeskConfig(runs).data_folder == runs / ".desk"


def test_the_safety_page_has_the_matrix_and_traceability_of_the_printable_one(
    desk: tuple[TestClient, Path, Path],
) -> None:
    client, _, _ = desk
    page = client.get("/safety/run-a").text
    for anchor in ('id="matrix"', 'id="hazards"', 'id="trace-matrix"', 'id="traceability"', 'id="system"'):
        assert anchor in page, anchor
    assert "required to approve: HAZ-1 not shown controlled" in page
    # The failing conversation the control cites is a link to its transcript, and the link works.
    assert '<a href="/runs/run-a/c/s0%231">s0#1</a>' in page
    assert client.get("/runs/run-a/c/s0%231").status_code == 200


def test_the_signed_document_is_archived_and_outlives_its_run(desk: tuple[TestClient, Path, Path]) -> None:
    import shutil

    client, runs, data = desk
    evidence = _evidence(client.get("/safety/run-a").text)
    assert _sign(client, "run-a", evidence, "Dr Ada", "approve", "", "supervised pilot only") == 303
    (signoff,) = SignOffBook(data).all()
    assert signoff.justification == "supervised pilot only" and signoff.document is not None
    archived = data / signoff.document
    assert (
        archived.is_file()
        and signoff.document_sha256
        == "sha256:" + __import__("hashlib").sha256(archived.read_bytes()).hexdigest()
    )
    # The printable document now shows who signed.
    assert "Dr Ada" in client.get("/safety/run-a/document").text
    shutil.rmtree(runs / "run-a")
    page = client.get(f"/signed/{signoff.document_sha256.split(':')[1]}")
    assert page.status_code == 200 and "Desk test log" in page.text and evidence[:19] in page.text
    assert client.get("/signed/not-a-hash").status_code == 400
