"""The desk's proposal pages: read, edit, accept or reject; decisions appended to the desk's own data
folder (never the run folder or the proposal file), honoured by `simulator try`."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from simulator.cli import main
from simulator.loop.reviews import REVIEWS_FILE, read_reviews
from simulator.serve import DeskConfig, create_app
from tests.desk_support import BASE, csrf
from tests.loop_support import chat_suite


@pytest.fixture
def desk(tmp_path: Path) -> tuple[TestClient, Path, Path, Path]:
    """A desk over one run of the chat triage suite (cardiac scenarios, five repeats: enough flips for `try`
    to call a fix FIXED at 5%) and its offline proposal."""
    suite = chat_suite(tmp_path / "suite", runs=5)
    runs = tmp_path / "runs"
    assert main(["run", str(suite), "--out", str(runs / "base"), "--tags", "cardiac", "--no-progress"]) == 0
    proposals = tmp_path / "proposals"
    assert main(["propose", str(runs / "base"), "--out", str(proposals / "base")]) == 0
    [path] = sorted((proposals / "base").glob("*.yaml"))
    config = DeskConfig(runs, proposals_dir=proposals, data_dir=tmp_path / "desk-data")
    return TestClient(create_app(config), base_url=BASE), runs / "base", path, tmp_path / "desk-data"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_the_run_page_links_its_proposals_and_the_page_shows_change_and_evidence(desk) -> None:  # type: ignore[no-untyped-def]
    client, _, path, _ = desk
    assert "/runs/base/proposals" in client.get("/runs/base").text
    listing = client.get("/runs/base/proposals")
    assert (
        listing.status_code == 200
        and "outcome.triage_level" in listing.text
        and "not reviewed" in listing.text
    )
    page = client.get(f"/runs/base/proposals/{path.stem}")
    assert page.status_code == 200
    assert "+- chest: Can I check" in page.text  # the diff of the prompt
    assert "Are you short of breath" in page.text and "verified" in page.text  # the evidence


def test_accept_with_an_edit_is_recorded_append_only_and_try_applies_the_edit(desk, capsys) -> None:  # type: ignore[no-untyped-def]
    client, run, path, data = desk
    run_before, proposal_before = _snapshot(run), path.read_bytes()
    edited = path.read_text().replace(
        "- chest: Can I check", "- chest: Does the pain spread to your arm? Can I check"
    )
    response = client.post(
        f"/runs/base/proposals/{path.stem}",
        data={"csrf": csrf(client), "yaml": edited, "reviewer": "Dr Ada", "decision": "accepted"},
    )
    assert (
        response.status_code == 200
        and "accepted by Dr Ada" in response.text
        and "(with edits)" in response.text
    )
    response = client.post(
        f"/runs/base/proposals/{path.stem}",
        data={
            "csrf": csrf(client),
            "yaml": path.read_text(),
            "reviewer": "Dr Bo",
            "decision": "rejected",
            "note": "too long",
        },
    )
    assert "rejected by Dr Bo" in response.text
    reviews = read_reviews(data)
    assert [(r.decision, r.reviewer, bool(r.edited_yaml)) for r in reviews] == [
        ("accepted", "Dr Ada", True),
        ("rejected", "Dr Bo", False),
    ]
    assert len((data / REVIEWS_FILE).read_text().splitlines()) == 2
    assert _snapshot(run) == run_before and path.read_bytes() == proposal_before
    # The latest decision is a rejection: try refuses it.
    assert main(["try", str(path), "--desk-data", str(data), "--out", str(run.parent / "never")]) == 2
    assert "rejected this proposal" in capsys.readouterr().err
    # Accepted again with the edit: try applies the edited version.
    client.post(
        f"/runs/base/proposals/{path.stem}",
        data={"csrf": csrf(client), "yaml": edited, "reviewer": "Dr Ada", "decision": "accepted"},
    )
    assert (
        main(
            ["try", str(path), "--desk-data", str(data), "--out", str(run.parent / "after"), "--no-progress"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "accepted with edits by Dr Ada" in out and "verdict: FIXED" in out
    assert "Does the pain spread to your arm?" in path.with_name(f"{path.stem}.prompt.md").read_text()


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("id: [unclosed", "not valid YAML"),
        ("id: x\n", "is missing; add it"),
        ("id: &i [*i]\n", "refers to a value that contains it"),
    ],
)
def test_a_broken_edit_is_shown_with_its_problems_and_nothing_is_recorded(
    desk, yaml_text: str, message: str
) -> None:  # type: ignore[no-untyped-def]
    client, _, path, data = desk
    response = client.post(
        f"/runs/base/proposals/{path.stem}",
        data={"csrf": csrf(client), "yaml": yaml_text, "reviewer": "Dr Ada", "decision": "accepted"},
    )
    assert (
        response.status_code == 400 and message in response.text and "Nothing was recorded" in response.text
    )
    assert read_reviews(data) == []


def test_a_decision_needs_the_csrf_value_a_reviewer_and_a_decision(desk) -> None:  # type: ignore[no-untyped-def]
    client, _, path, data = desk
    url = f"/runs/base/proposals/{path.stem}"
    assert client.post(url, data={"reviewer": "x", "decision": "accepted"}).status_code == 403
    token = csrf(client)
    assert (
        client.post(
            url,
            data={"csrf": token, "reviewer": "x", "decision": "accepted"},
            headers={"Origin": "http://evil.example"},
        ).status_code
        == 403
    )
    assert client.post(url, data={"csrf": token, "reviewer": "", "decision": "accepted"}).status_code == 400
    assert client.post(url, data={"csrf": token, "reviewer": "x", "decision": "maybe"}).status_code == 400
    assert client.get("/runs/base/proposals/..%2Fsecret").status_code in (400, 404)
    assert read_reviews(data) == []


def test_a_confirmed_real_failure_becomes_a_draft_scenario_queued_for_a_clinician(tmp_path: Path) -> None:
    import json

    import yaml

    from simulator.serve.pages_confirm import QUEUE_FILE

    runs, scenarios, data = tmp_path / "runs", tmp_path / "scenarios", tmp_path / "desk-data"
    assert main(["import", "examples/traces/transcripts.jsonl", "--out", str(runs / "real")]) == 0
    scenarios.mkdir()
    client = TestClient(create_app(DeskConfig(runs, scenarios, data_dir=data)), base_url=BASE)
    record = json.loads((runs / "real" / "conversations.jsonl").read_text().splitlines()[0])
    conversation = record["id"].replace("#", "%23")
    before = _snapshot(runs / "real")
    reader = client.get(f"/runs/real/c/{conversation}")
    assert 'id="confirm-form"' in reader.text
    url = f"/runs/real/c/{conversation}/confirm"
    assert client.post(url, data={"reviewer": "Dr Ada"}).status_code == 403  # no CSRF value
    response = client.post(url, data={"csrf": csrf(client), "reviewer": "Dr Ada", "note": "missed the arm"})
    assert response.status_code == 200 and "queued for a clinician" in response.text
    [draft] = (scenarios / "drafts").glob("*.yaml")
    scenario = yaml.safe_load(draft.read_text())
    assert scenario["draft"] is True and scenario["expected"] == {}
    trace = record.get("bot_conversation_id") or record["id"]
    assert f"trace {trace}" in scenario["notes"] and record["started_at"][:10] in scenario["notes"]
    assert "Dr Ada" in scenario["notes"] and "missed the arm" in scenario["notes"]
    [queued] = [json.loads(line) for line in (data / QUEUE_FILE).read_text().splitlines()]
    assert queued["draft"] == str(draft) and queued["confirmed_by"] == "Dr Ada"
    # A second confirmation never overwrites the draft; the run folder is never written.
    again = client.post(url, data={"csrf": csrf(client), "reviewer": "Dr Bo"})
    assert again.status_code == 400 and "never overwrite" in again.text
    assert _snapshot(runs / "real") == before
    assert main(["validate", str(draft)]) == 0


def test_a_simulated_conversation_has_no_confirm_form(desk) -> None:  # type: ignore[no-untyped-def]
    client, _, _, _ = desk
    page = client.get("/runs/base/c/chest-pain-vague-01%230")
    assert page.status_code == 200 and 'id="confirm-form"' not in page.text
    response = client.post(
        "/runs/base/c/chest-pain-vague-01%230/confirm", data={"csrf": csrf(client), "reviewer": "x"}
    )
    assert response.status_code == 400 and "only imported" in response.text
