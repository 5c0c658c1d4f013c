"""The review desk's routes through Starlette's test client: pages, escaping, security, read-only runs."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from urllib.parse import quote

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from simulator.report.html import render_html
from simulator.serve import create_app
from tests.desk_support import (
    SCRIPT,
    DeskFolders,
    csrf,
    desk_client,
    make_desk_folders,
)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> DeskFolders:
    return make_desk_folders(tmp_path_factory.mktemp("desk"))


@pytest.fixture
def client(folders: DeskFolders) -> TestClient:
    return desk_client(folders)


def _ids(page: str) -> list[str]:
    return re.findall(r'class="conv-link" href="[^"]+">([^<]+)</a>', page)


def test_runs_page_lists_each_run_with_status_suite_models_and_headline_figures(client: TestClient) -> None:
    page = client.get("/").text
    assert 'data-run="tiny"' in page and 'data-run="hostile"' in page
    row = page[page.index('data-run="tiny"') :].split("</tr>")[0]
    assert "complete" in row and "tiny-triage" in row and "user offline" in row
    assert "21 / 21" in row  # conversations / planned
    assert "4/17 23.5%" in row  # conversations passing, with errors and no-decisions left out
    assert 'href="/runs/tiny/report"' in row


def test_the_report_page_is_the_html_report_of_the_same_model(client: TestClient) -> None:
    response = client.get("/runs/tiny/report")
    _, report = client.app.state.desk.index.load("tiny")  # type: ignore[attr-defined]
    assert response.status_code == 200
    # The same report, under the desk's header (the way back to the run and the desk).
    alone = render_html(report)
    body = alone[alone.index("<main>") :]
    assert response.text.endswith(body)
    header = response.text[response.text.index("<body>") : response.text.index("<main>")]
    assert 'href="/runs/tiny"' in header and 'href="/label"' in header and 'id="desk-header"' in header


def test_run_page_filters_conversations(client: TestClient) -> None:
    fails = _ids(client.get("/runs/tiny", params={"criterion": "asks-danger-signs", "result": "fail"}).text)
    assert fails == [
        "chest-pain#1",
        "thunderclap-headache#0",
        "thunderclap-headache#1",
        "thunderclap-headache#2",
    ]
    tagged = _ids(client.get("/runs/tiny", params={"tag": "skin"}).text)
    assert tagged == ["rash-script#0", "rash-script#1", "rash-script#2"]
    under = _ids(client.get("/runs/tiny", params={"outcome": "under"}).text)
    assert under and all(i.startswith(("chest-pain", "thunderclap", "ankle")) for i in under)
    to_read = set(_ids(client.get("/runs/tiny", params={"to_read": "1"}).text))
    assert set(under) <= to_read and {"bot-crash#0", "thunderclap-headache#0"} <= to_read
    assert "dizzy-spells#1" not in to_read  # decided correctly, passed every criterion
    assert len(_ids(client.get("/runs/tiny").text)) == 21


def test_reader_pages_through_the_filter_and_shows_stop_reason_state_and_evidence(client: TestClient) -> None:
    query = "criterion=asks-danger-signs&result=fail"
    page = client.get(f"/runs/tiny/c/{quote('thunderclap-headache#0')}?{query}").text
    assert "conversation 2 of 4 in this filter" in page
    attr = query.replace("&", "&amp;")
    assert f'href="/runs/tiny/c/chest-pain%231?{attr}"' in page  # previous
    assert f'href="/runs/tiny/c/thunderclap-headache%231?{attr}"' in page  # next
    assert re.search(r'id="stop">bot_closed<', page)
    assert "&#34;triage_level&#34;: &#34;urgent&#34;" in page
    assert '<mark class="ev-fail"' in page  # the failing verdict's quote is highlighted in the transcript
    last = client.get(f"/runs/tiny/c/{quote('thunderclap-headache#2')}?{query}").text
    assert 'id="next"' not in last and "4 of 4" in last


def test_reader_marks_quoted_markup_as_escaped_text(client: TestClient) -> None:
    page = client.get(f"/runs/tiny/c/{quote('rash-script#0')}").text
    # The quoted evidence is highlighted, and the markup inside the highlight is text.
    assert re.search(r"<mark[^>]*>[^<]*&lt;script&gt;window.__pwned = 1&lt;/script&gt;[^<]*</mark>", page)
    assert SCRIPT not in page


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/runs/hostile",
        "/runs/hostile/c/hostile%230",
        "/runs/hostile/calibration",
        "/label?run=hostile",
    ],
)
def test_hostile_text_is_escaped_on_every_page(client: TestClient, url: str) -> None:
    page = client.get(url).text
    assert page.count("<script") == 1 and '<script src="/static/desk.js" defer>' in page  # only our own
    assert "<img" not in page and 'onerror="' not in page  # the markup is text: its quotes are escaped
    assert "\x1b" not in page and "\x07" not in page and "\x9b" not in page  # terminal escapes made visible
    assert not {"\u202e", "\u202c", "\u2067", "\u2069", "\u200f"} & set(page)  # reordering shown, not obeyed
    if "c/hostile" in url:
        assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page and "\\x1b[31mRED" in page
        assert "\\u202eevil\\u202c" in page  # the override as its escape, the words in the order sent
        assert "broke character 1 time(s)" in page  # the fidelity flag


def test_labelling_item_is_blind_and_the_verdict_shows_after_saving(
    folders: DeskFolders, client: TestClient
) -> None:
    queue = {"run": "hostile", "labeller": "Ann", "criterion": "asks-age", "sampling": "all"}
    item = client.get("/label/next", params=queue)
    assert item.status_code == 200 and "/label/item?" in str(item.url)
    assert "fail" not in item.text.split('id="transcript"')[1].split("<form")[0]  # no verdict in view
    assert "&lt;script&gt;" in item.text and "triage_level" not in item.text  # no final state either
    form = {
        "csrf": csrf(client),
        "queue": "run=hostile&labeller=Ann&criterion=asks-age&sampling=all&n=20&seed=0",
        "conversation": "hostile#0",
        "criterion_id": "asks-age",
        "label": "pass",
        "note": "looks fine <b>to me</b>",
    }
    saved = client.post("/label", data=form)
    assert saved.status_code == 200 and "/label/reveal?" in str(saved.url)
    assert 'id="judge"' in saved.text and "you disagree with the judge" in saved.text
    assert "&lt;b&gt;to me&lt;/b&gt;" in saved.text
    line = (folders.runs / "hostile" / "labels.jsonl").read_text().splitlines()[-1]
    assert '"labeller":"Ann"' in line and '"label":"pass"' in line and '"criterion_id":"asks-age"' in line
    done = client.get("/label/next", params=queue)
    assert 'id="done"' in done.text


def test_reveal_refuses_before_a_label_is_saved(client: TestClient) -> None:
    response = client.get(
        "/label/reveal",
        params={"run": "tiny", "labeller": "Nobody", "criterion": "asks-danger-signs", "conversation": "ankle-sprain#0",
                "criterion_id": "asks-danger-signs"},
    )  # fmt: skip
    assert response.status_code == 400 and "label this item first" in response.text


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"label": "maybe"}, "choose pass, fail or not applicable"),
        ({"criterion_id": "asks-pregnancy"}, "is not in this labelling queue"),
        ({"queue": "run=tiny&labeller=&criterion=asks-age"}, "give your name"),
        ({"queue": "run=../etc&labeller=x&criterion=asks-age"}, "not a run folder name"),
    ],
)
def test_bad_label_posts_get_one_clear_error_and_write_nothing(
    folders: DeskFolders, client: TestClient, fields: dict[str, str], message: str
) -> None:
    labels = folders.runs / "tiny" / "labels.jsonl"
    before = labels.read_bytes() if labels.exists() else b""
    form = {
        "csrf": csrf(client),
        "queue": "run=tiny&labeller=Ann&criterion=asks-danger-signs",
        "conversation": "ankle-sprain#0",
        "criterion_id": "asks-danger-signs",
        "label": "pass",
        **fields,
    }
    response = client.post("/label", data=form)
    assert response.status_code == 400 and message in response.text
    assert (labels.read_bytes() if labels.exists() else b"") == before


def test_every_state_changing_route_refuses_a_request_without_the_csrf_value(
    client: TestClient, folders: DeskFolders
) -> None:
    routes = [r for r in client.app.routes if isinstance(r, Route) and "POST" in (r.methods or ())]  # type: ignore[attr-defined]
    assert len(routes) >= 7
    token = csrf(client)
    for route in routes:
        url = route.path.replace("{area}", "judges").replace("{path:path}", "asks-age.yaml")
        url = url.replace("{talk}", "x")
        for data, headers in (
            ({}, {}),
            ({"csrf": "forged"}, {}),
            ({"csrf": token}, {"Origin": "http://evil.example"}),
        ):
            response = client.post(url, data=data, headers=headers)
            assert response.status_code == 403, (url, data, headers)
        response = client.post(url, json={}, headers={"X-CSRF-Token": "forged"})
        assert response.status_code == 403, url
    assert (folders.judges / "asks-age.yaml").read_text().startswith("id: asks-age")


def test_pages_send_a_content_security_policy_and_static_files_work(client: TestClient) -> None:
    response = client.get("/")
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert client.get("/static/desk.js").status_code == 200
    assert client.get("/static/../config.py").status_code == 404


def test_an_unknown_host_is_refused_on_loopback(folders: DeskFolders) -> None:
    client = TestClient(create_app(folders.config()), base_url="http://evil.example")
    assert client.get("/").status_code == 400


def test_another_host_needs_the_access_token(folders: DeskFolders) -> None:
    client = TestClient(
        create_app(folders.config(token="s3cret", allowed_hosts=["*"])), base_url="http://10.0.0.5:8000"
    )
    assert client.get("/").status_code == 403
    assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 403
    assert client.get("/", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    first = client.get("/runs/tiny?token=s3cret", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "http://10.0.0.5:8000/runs/tiny"
    assert client.get("/runs/tiny").status_code == 200  # the cookie now carries it


@pytest.mark.parametrize(
    "name", ["..", ".hidden", "tiny%2F..%2F..", "no-such-run", "%2E%2E"]
)  # fmt: skip
def test_run_names_cannot_leave_the_runs_folder(client: TestClient, name: str) -> None:
    response = client.get(f"/runs/{name}/calibration")
    assert response.status_code in (400, 404)


def test_a_run_being_written_is_shown_and_never_modified(folders: DeskFolders, client: TestClient) -> None:
    run = folders.runs / "tiny"
    live = folders.runs / "live"
    live.mkdir()
    for name in ("manifest.json", "conversations.jsonl", "verdicts.jsonl"):
        (live / name).write_bytes((run / name).read_bytes())
    half = (run / "conversations.jsonl").read_text().splitlines()[0][:200]
    with (live / "conversations.jsonl").open("a") as handle:
        handle.write(half)  # the writer is in the middle of a line
    manifest = (live / "manifest.json").read_text().replace('"status": "complete"', '"status": "running"')
    (live / "manifest.json").write_text(manifest)

    def digest() -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(live.iterdir())}

    before = digest()
    for url in ("/", "/runs/live", "/runs/live/report", "/runs/live/c/chest-pain%230", "/runs/live/calibration",
                "/label?run=live"):  # fmt: skip
        assert client.get(url).status_code == 200, url
    assert "running" in client.get("/runs/live").text
    assert digest() == before


def test_the_calibration_page_shows_the_numbers_calibrate_prints(
    folders: DeskFolders,
    client: TestClient,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from simulator.analysis.calibrate import calibrate_labels
    from simulator.analysis.rundata import load_run
    from simulator.cli import main

    token = csrf(client)
    queue = "run=tiny&labeller={who}&criterion=asks-danger-signs&sampling=all"
    conversations = [
        "chest-pain#0",
        "chest-pain#1",
        "thunderclap-headache#0",
        "ankle-sprain#0",
        "rash-script#0",
    ]
    answers = {
        "Ann": ["pass", "fail", "fail", "pass", "pass"],
        "Bob": ["pass", "pass", "fail", "fail", "pass"],
    }
    for who, labels in answers.items():
        for conversation, label in zip(conversations, labels, strict=True):
            form = {"csrf": token, "queue": queue.format(who=who), "conversation": conversation,
                    "criterion_id": "asks-danger-signs", "label": label}  # fmt: skip
            assert client.post("/label", data=form).status_code == 200
    page = client.get("/runs/tiny/calibration").text
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["calibrate", str(folders.runs / "tiny")]) == 0
    printed = capsys.readouterr().out
    panel = calibrate_labels(load_run(folders.runs / "tiny"))
    (criterion,) = panel.criteria
    assert [p.reference for p in criterion.judge] == ["Ann", "Bob"] and len(criterion.between_labellers) == 1
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page)]
    for pair in criterion.judge + criterion.between_labellers:
        assert list(pair.cells().values()) in rows  # the cells `calibrate` prints, one table row
        for value in pair.cells().values():
            assert value in printed
    ann = criterion.judge[0]
    assert (ann.false_pass.k, ann.false_pass.n) == (0, 2)  # the judge failed both items Ann failed


def test_labelling_queues_sample_all_random_n_or_stratified_by_the_judge(folders: DeskFolders) -> None:
    from simulator.analysis.rundata import load_run
    from simulator.serve.queue import QueueSpec, build_queue

    run = load_run(folders.runs / "tiny")
    judged = {
        (v.conversation_id, v.criterion_id): v.result
        for v in run.verdicts
        if v.criterion_id in ("asks-danger-signs", "asks-pregnancy")
        and v.result in ("pass", "fail", "not_applicable")
    }
    criteria = ("asks-danger-signs", "asks-pregnancy")
    everything = build_queue(run, QueueSpec("tiny", "x", criteria, "all"))
    assert sorted(everything) == sorted(judged) and everything != sorted(judged)  # all of them, shuffled
    assert build_queue(run, QueueSpec("tiny", "x", criteria, "all", seed=0)) == everything  # seeded
    assert build_queue(run, QueueSpec("tiny", "x", criteria, "all", seed=1)) != everything
    # n is per criterion (issue 31): "random 5" over two criteria is 5 of each, never 5 of one of them.
    sample = build_queue(run, QueueSpec("tiny", "x", criteria, "random", n=5))
    assert len(sample) == 10 and set(sample) <= set(judged)
    assert Counter(c for _, c in sample) == {"asks-danger-signs": 5, "asks-pregnancy": 5}
    # Stratified, per criterion: asks-danger-signs has 14 passes and 4 fails, asks-pregnancy 3 fails and
    # 15 n.a.; each criterion's rarer verdict gets its share of that criterion's 9.
    strata = build_queue(run, QueueSpec("tiny", "x", criteria, "stratified", n=9))
    assert Counter((c, judged[(i, c)]) for i, c in strata) == {
        ("asks-danger-signs", "fail"): 4,
        ("asks-danger-signs", "pass"): 5,
        ("asks-pregnancy", "fail"): 3,
        ("asks-pregnancy", "not_applicable"): 6,
    }
    assert QueueSpec("tiny", "x", criteria, "random", n=5).describe() == (
        "random 5 of each of asks-danger-signs, asks-pregnancy"
    )
    small = build_queue(run, QueueSpec("tiny", "x", ("asks-pregnancy",), "stratified", n=50))
    assert len(small) == len([k for k in judged if k[1] == "asks-pregnancy"])  # n larger than the pool
