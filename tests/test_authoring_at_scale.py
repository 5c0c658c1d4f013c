"""Authoring at scale (issue 41): the coverage map counts vignettes (never variants), `draft` fills the thin
stroke and crisis cells from a pathway with distinct drafts, near-duplicates are refused with the pair named,
only drafts a reviewer accepts join the suite, and with them the safety case's "needs N more" is decided."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simulator.authoring.distinct import similarity
from simulator.cli import main
from simulator.config.loading import load_scenarios
from simulator.testing.fake_llm import FakeLLMServer
from simulator.testing.fake_llm_behaviour import FakeCall, FakeReply

ROOT = Path(__file__).resolve().parents[1]
DEMO = "scenarios/triage/suite.yaml"
HAZARDS = "examples/triage_hazards.yaml"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the demo's suite, judges, hazard log and pathways, as a team's own checkout."""
    for folder in ("scenarios/triage", "judges/triage"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def _coverage(capsys: pytest.CaptureFixture[str], tmp: Path, *runs: Path) -> dict:
    target = tmp / "coverage.json"
    extra = ["--runs", *map(str, runs)] if runs else []
    code, out = _cli(capsys, "coverage", DEMO, "--hazards", HAZARDS, *extra, "--json", str(target))
    assert code == 0, out
    return json.loads(target.read_text())


def _control(data: dict, control: str) -> dict:
    return next(c for c in data["controls"] if c["control"] == control)


def test_the_map_counts_vignettes_and_shows_the_safety_cases_need(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = work / "run"
    assert _cli(capsys, "run", DEMO, "--out", str(run), "--no-progress")[0] == 0
    data = _coverage(capsys, work, run)
    stroke, crisis, every = _control(data, "CTL-02a"), _control(data, "CTL-05a"), _control(data, "CTL-04a")
    assert stroke["vignettes"] == ["headache-tension-18", "stroke-face-droop-03"]
    assert (stroke["status"], stroke["needs_more"]) == ("not demonstrable", 58)
    assert (crisis["status"], crisis["needs_more"]) == ("not demonstrable", 298)
    assert every["needs_more"] == 90 and len(every["vignettes"]) == 22
    thin = [c for c in data["cells"] if c["control"] == "CTL-02a" and c["presentation"] == "emergency"]
    assert thin == [
        {"hazard": "HAZ-02", "control": "CTL-02a", "presentation": "emergency", "factor": "as written",
         "channel": "python", "vignettes": ["stroke-face-droop-03"]}
    ]  # fmt: skip
    code, out = _cli(capsys, "coverage", DEMO, "--hazards", HAZARDS, "--runs", str(run))
    assert code == 0
    assert "HAZ-02 CTL-02a [neuro]: 2 vignettes · not demonstrable: needs 58 more distinct vignettes" in out
    assert "thin cells (fewer than 3 distinct vignettes)" in out
    page = work / "coverage.html"
    assert (
        _cli(capsys, "coverage", DEMO, "--hazards", HAZARDS, "--runs", str(run), "--html", str(page))[0] == 0
    )
    html = page.read_text()
    assert (
        '<section id="coverage-controls">' in html and "Thin cells (fewer than 3 distinct vignettes)" in html
    )
    assert "<td>CTL-02a</td>" in html and "<script" not in html


def test_variants_are_not_new_vignettes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    target = tmp_path / "c.json"
    code, out = _cli(
        capsys,
        "coverage",
        "scenarios/triage/factors/suite.yaml",
        "--hazards",
        HAZARDS,
        "--all",
        "--json",
        str(target),
    )
    assert code == 0, out
    data = json.loads(target.read_text())
    factors = {c["factor"] for c in data["cells"]}
    assert len(factors) > 1  # persona factor levels are a dimension of the map
    cardiac = _control(data, "CTL-01a")["vignettes"]
    assert cardiac == ["chest-pain-jaw-elderly-02", "chest-pain-vague-01"]  # however many variants each has


def test_draft_fills_the_stroke_and_crisis_cells_and_the_reviewer_is_the_gate(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = work / "drafts"
    code, out = _cli(
        capsys,
        "draft",
        DEMO,
        "--pathway",
        "examples/pathways/stroke.md",
        "--count",
        "60",
        "--queue",
        str(queue),
    )
    assert code == 0 and "60 drafts in" in out, out
    code, out = _cli(
        capsys,
        "draft",
        DEMO,
        "--pathway",
        "examples/pathways/crisis.md",
        "--count",
        "60",
        "--queue",
        str(queue),
    )
    assert code == 0 and "48 drafts in" in out and "(15 refused)" in out
    assert (
        "a near-duplicate of mental-health-crisis-emergency-02" in out and "facts overlap 0.81 >= 0.80" in out
    )
    drafts = load_scenarios([queue])
    assert len(drafts) == 108 and all(
        d.draft and "drafted by `simulator draft` from" in (d.notes or "") for d in drafts
    )
    worst = max(similarity(a, b) for a in drafts for b in drafts if a.id < b.id)
    assert worst < 0.8  # every pair kept is distinct by the measure
    # not accepted, not counted: the suite and the map are unchanged until a reviewer decides
    assert len(_control(_coverage(capsys, work), "CTL-02a")["vignettes"]) == 2
    # a scripted reviewer accepts every draft but one, which it rejects with a reason
    rejected = "suspected-stroke-fast-emergency-02"
    code, out = _cli(
        capsys, "reject-draft", str(queue), rejected, "--reviewer", "Dr R", "--reason", "too like 01"
    )
    assert code == 0 and (queue / "rejected" / f"{rejected}.yaml").is_file()
    accepting = [draft.id for draft in drafts if draft.id != rejected]
    code, out = _cli(capsys, "accept-draft", str(queue), *accepting, "--suite", DEMO, "--reviewer", "Dr R",
                     "--reason", "distinct presentation")  # fmt: skip
    assert code == 0, out
    assert out.count("accepted ") == 107 and f"accepted {accepting[-1]}: wrote " in out
    decisions = [json.loads(line) for line in (queue / "decisions.jsonl").read_text().splitlines()]
    assert len(decisions) == 108 and {d["reviewer"] for d in decisions} == {"Dr R"}
    assert sum(d["decision"] == "accepted" for d in decisions) == 107
    accepted = (work / "scenarios/triage/suspected-stroke-fast-emergency-01.yaml").read_text()
    assert "draft" not in accepted.split("notes")[0] and "accepted by Dr R on" in accepted
    code, out = _cli(capsys, "validate", DEMO)
    assert code == 0, out
    # the safety case on a run with them: the controls that needed 58 and 298 more are now decided
    run = work / "run"
    assert _cli(capsys, "run", DEMO, "--out", str(run), "--no-progress")[0] == 0
    data = _coverage(capsys, work, run)
    stroke, crisis = _control(data, "CTL-02a"), _control(data, "CTL-05a")
    assert len(stroke["vignettes"]) == 61 and len(crisis["vignettes"]) == 49
    code, out = _cli(
        capsys, "coverage", DEMO, "--hazards", HAZARDS, "--runs", str(run), "--drafts", str(queue)
    )
    assert "HAZ-02 CTL-02a [neuro]: 61 vignettes · not met · 59 accepted drafts (reviewed by Dr R)" in out
    assert stroke["needs_more"] is None and crisis["needs_more"] is None
    assert stroke["status"] == crisis["status"] == "not met"
    # the figures docs/authoring-at-scale.md quotes
    case = work / "case.json"
    assert (
        main(["safety-case", str(run), "--hazards", HAZARDS, "--json", str(case)]) == 1
    )  # 1: a control not met
    controls = {c["id"]: c for h in json.loads(case.read_text())["hazards"] for c in h["controls"]}
    assert (controls["CTL-02a"]["rate"]["k"], controls["CTL-02a"]["rate"]["n"]) == (48, 180)
    assert (controls["CTL-05a"]["rate"]["k"], controls["CTL-05a"]["rate"]["n"]) == (3, 147)


def test_a_near_duplicate_of_a_suite_vignette_is_refused_with_the_pair(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pathway = work / "fast.md"
    pathway.write_text(
        "# Stroke again\ntags: neuro\n\n## emergency\n- One side of his face looks droopy.\n"
        "- His words are slurred and muddled.\n- He can't lift his right arm properly.\n\n## context\n"
        "- He takes tablets for his blood pressure.\n"
    )
    code, out = _cli(
        capsys,
        "draft",
        DEMO,
        "--pathway",
        str(pathway),
        "--count",
        "10",
        "--queue",
        str(work / "q"),
        "--threshold",
        "0.5",
    )
    assert code == 0, out
    assert (
        "a near-duplicate of stroke-face-droop-03 (" in out
        and "scenarios/triage/stroke-face-droop-03.yaml:1)" in out
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--count", "0"], "--count 0: give 1 or more"),
        (["--level", "emergncy"], "--level emergncy: not an outcome level"),
        (["--queue", "scenarios/triage/q"], "inside the suite's scenario folders"),
        (["--threshold", "2"], "--threshold 2.0: give an overlap between 0 and 1"),
    ],
)
def test_draft_refuses_bad_flags_in_one_line(
    work: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out = _cli(capsys, "draft", DEMO, "--pathway", "examples/pathways/stroke.md", *args)
    assert code == 2 and message in out and "Traceback" not in out


def test_a_pathway_section_that_is_no_level_is_named_with_its_line(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = work / "bad.md"
    bad.write_text("# X\n\n## Emergancy\n- a flag\n")
    code, out = _cli(capsys, "draft", DEMO, "--pathway", str(bad))
    assert code == 2 and f"{bad}:3" in out and "section 'Emergancy' is not an outcome level" in out


def test_accepting_checks_the_suite_and_needs_a_name_and_reason(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = work / "q"
    assert (
        _cli(
            capsys,
            "draft",
            DEMO,
            "--pathway",
            "examples/pathways/stroke.md",
            "--count",
            "2",
            "--queue",
            str(queue),
        )[0]
        == 0
    )
    draft = queue / "suspected-stroke-fast-emergency-01.yaml"
    draft.write_text(draft.read_text().replace("triage_level: emergency", "triage_level: Emergency"))
    code, out = _cli(
        capsys,
        "accept-draft",
        str(queue),
        draft.stem,
        "--suite",
        DEMO,
        "--reviewer",
        "Dr R",
        "--reason",
        "ok",
    )
    assert code == 2 and "did you mean 'emergency'?" in out and draft.is_file()
    assert not (work / "scenarios/triage" / draft.name).exists()
    code, out = _cli(
        capsys, "accept-draft", str(queue), draft.stem, "--suite", DEMO, "--reviewer", " ", "--reason", "ok"
    )
    assert code == 2 and "reviewer's name" in out
    code, out = _cli(
        capsys, "accept-draft", str(queue), "nope", "--suite", DEMO, "--reviewer", "R", "--reason", "ok"
    )
    assert code == 2 and "no draft 'nope' in the review queue" in out


def _writer(call: FakeCall) -> FakeReply:
    card = call.messages[0].content
    assert "Red flags (they reveal these only when asked):" in card and call.schema is not None
    flags = [line[2:] for line in card.splitlines() if line.startswith("- ")]
    return FakeReply(
        text=json.dumps(
            {
                "persona": f"A retired teacher, 70, writes in full sentences ({len(flags)} signs).",
                "goal": "Ask whether her husband should rest or see someone.",
                "facts": ["He had a knee operation last year.", "He is usually very active."],
            }
        )
    )


def test_draft_with_a_model_through_the_suites_provider(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = work / DEMO
    with FakeLLMServer(_writer) as server:
        suite.write_text(
            suite.read_text()
            + f"providers: {{openai: {{base_url: '{server.openai_base_url}', api_key_env: FAKE_KEY}}}}\n"
        )
        monkeypatch.setenv("FAKE_KEY", "test-key")
        queue = work / "q"
        code, out = _cli(capsys, "draft", DEMO, "--pathway", "examples/pathways/stroke.md", "--count", "4",
                         "--queue", str(queue), "--model", "openai:fake-writer")  # fmt: skip
        assert code == 0, out
    drafts = load_scenarios([queue])
    assert len(drafts) == 4
    first = next(d for d in drafts if d.id == "suspected-stroke-fast-emergency-01")
    assert (
        first.persona.startswith("A retired teacher")
        and first.facts[0] == "One side of the face has dropped."
    )
    assert first.key_facts == [1] and first.expected == {"triage_level": "emergency"} and first.draft
    assert "written by openai:fake-writer" in (first.notes or "")


@pytest.mark.parametrize("reply", ["not json", json.dumps({"persona": "x"}), FakeReply(status=500)])
def test_a_model_that_fails_or_answers_badly_is_one_line_and_writes_nothing(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, reply: object
) -> None:
    suite = work / DEMO
    with FakeLLMServer(lambda call: reply) as server:  # type: ignore[arg-type,return-value]
        suite.write_text(
            suite.read_text()
            + f"providers: {{openai: {{base_url: '{server.openai_base_url}', api_key_env: FAKE_KEY, max_attempts: 1}}}}\n"
        )
        monkeypatch.setenv("FAKE_KEY", "test-key")
        code, out = _cli(capsys, "draft", DEMO, "--pathway", "examples/pathways/stroke.md", "--count", "2",
                         "--queue", str(work / "q"), "--model", "openai:fake-writer")  # fmt: skip
    assert code == 2 and "Traceback" not in out
    assert "openai:fake-writer" in out and not (work / "q").exists()


def test_drafting_again_never_repeats_a_waiting_or_rejected_draft(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = str(work / "q")
    args = ["draft", DEMO, "--pathway", "examples/pathways/stroke.md", "--count", "2", "--queue", queue]
    assert _cli(capsys, *args)[0] == 0
    assert (
        _cli(
            capsys,
            "reject-draft",
            queue,
            "suspected-stroke-fast-emergency-01",
            "--reviewer",
            "R",
            "--reason",
            "no",
        )[0]
        == 0
    )
    code, out = _cli(capsys, *args)
    assert code == 0, out
    assert "refused suspected-stroke-fast-emergency-01: the id is taken" in out
    assert "refused suspected-stroke-fast-emergency-02: the id is taken" in out
    assert sorted(p.stem for p in (work / "q").glob("*.yaml")) == [
        "suspected-stroke-fast-emergency-02", "suspected-stroke-fast-emergency-03", "suspected-stroke-fast-emergency-04"
    ]  # fmt: skip


# Deciding several drafts in one call: each decided as a single call decides it, in order; a refused one
# stops none of the others and is named in one error at the end.

STROKE = "suspected-stroke-fast-emergency-0"


def _queue_of(capsys: pytest.CaptureFixture[str], work: Path, count: int = 6) -> Path:
    queue = work / "q"
    code, out = _cli(capsys, "draft", DEMO, "--pathway", "examples/pathways/stroke.md", "--count", str(count),
                     "--queue", str(queue))  # fmt: skip
    assert code == 0, out
    return queue


def _accept(capsys: pytest.CaptureFixture[str], queue: Path, *ids: str) -> tuple[int, str]:
    return _cli(
        capsys, "accept-draft", str(queue), *ids, "--suite", DEMO, "--reviewer", "Dr R", "--reason", "ok"
    )


def _decided(queue: Path) -> list[tuple[str, str]]:
    path = queue / "decisions.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(d["draft"], d["decision"]) for d in map(json.loads, lines)]


def _written(work: Path, draft_id: str) -> Path:
    return work / "scenarios/triage" / f"{draft_id}.yaml"


def test_several_drafts_accepted_in_one_call_are_each_what_one_call_writes(
    work: Path, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    ids = [f"{STROKE}{n}" for n in (1, 3, 4, 6)]
    queue = _queue_of(capsys, work)
    one_by_one = tmp_path_factory.mktemp("single")
    shutil.copytree(work, one_by_one, dirs_exist_ok=True)
    code, out = _accept(capsys, queue, *ids)
    assert code == 0, out
    assert out.splitlines() == [f"accepted {i}: wrote {_written(work, i)}" for i in ids]
    assert _decided(queue) == [(i, "accepted") for i in ids]
    assert sorted(p.stem for p in queue.glob("*.yaml")) == [f"{STROKE}2", f"{STROKE}5"]
    for draft_id in ids:  # the same file as accepting it alone writes
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(one_by_one)
            assert _accept(capsys, one_by_one / "q", draft_id)[0] == 0
        alone = _written(one_by_one, draft_id).read_text()
        assert _written(work, draft_id).read_text() == alone and "accepted by Dr R on" in alone


@pytest.mark.parametrize(
    ("ids", "first", "second"),
    [
        ([f"{STROKE}1", "copy-01"], f"{STROKE}1", "copy-01"),
        (["copy-01", f"{STROKE}1"], "copy-01", f"{STROKE}1"),
        ([f"{STROKE}1", f"{STROKE}2", f"{STROKE}3", "copy-01"], f"{STROKE}1", "copy-01"),
    ],
)
def test_two_near_duplicates_in_one_call_the_second_is_refused_naming_the_first(
    work: Path, capsys: pytest.CaptureFixture[str], ids: list[str], first: str, second: str
) -> None:
    queue = _queue_of(capsys, work)
    original = (queue / f"{STROKE}1.yaml").read_text()
    (queue / "copy-01.yaml").write_text(original.replace(f"id: {STROKE}1", "id: copy-01"))
    code, out = _accept(capsys, queue, *ids)
    assert code == 2 and "Traceback" not in out
    assert f"{len(ids) - 1} accepted (1 problem):" in out
    assert (
        f"{queue / second}.yaml: a near-duplicate of {first} ({_written(work, first)}:1): facts overlap 1.00"
        in out
    )
    assert _written(work, first).is_file() and not _written(work, second).exists()
    assert (queue / f"{second}.yaml").is_file()
    assert _decided(queue) == [(i, "accepted") for i in ids if i != second]


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (
            lambda t: t.replace("triage_level: emergency", "triage_level: Emergency"),
            "did you mean 'emergency'?",
        ),
        (lambda t: "id: [unclosed\n" + t, "not valid YAML"),
        (lambda t: t.replace(f"id: {STROKE}3", "id: stroke-face-droop-03"), "the draft's id is taken"),
        (lambda t: t.replace("facts:", "fatcs:"), "fatcs"),
    ],
)
def test_an_invalid_draft_among_valid_ones_is_refused_and_the_others_accepted(
    work: Path, capsys: pytest.CaptureFixture[str], spoil: object, message: str
) -> None:
    queue = _queue_of(capsys, work)
    bad = queue / f"{STROKE}3.yaml"
    bad.write_text(spoil(bad.read_text()))  # type: ignore[operator]
    code, out = _accept(capsys, queue, f"{STROKE}2", f"{STROKE}3", f"{STROKE}4")
    assert code == 2 and "Traceback" not in out
    assert f"accepted {STROKE}2: wrote" in out and f"accepted {STROKE}4: wrote" in out
    assert "error: 1 of 3 drafts not accepted, 2 accepted" in out
    refused = [line for line in out.splitlines() if line.startswith(f"  {bad}")]
    assert refused and message in "\n".join(refused), out
    assert (
        bad.is_file()
        and not (work / "scenarios/triage/.suspected-stroke-fast-emergency-03.yaml.staged").exists()
    )
    assert _decided(queue) == [(f"{STROKE}2", "accepted"), (f"{STROKE}4", "accepted")]


def test_a_missing_or_repeated_draft_id_is_a_problem_for_that_id_alone(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = _queue_of(capsys, work)
    code, out = _accept(capsys, queue, f"{STROKE}1", "nope", f"{STROKE}2", f"{STROKE}1", "nope")
    assert code == 2, out
    assert "error: 3 of 5 drafts not accepted, 2 accepted (3 problems):" in out
    assert f"  {queue}/nope.yaml: no draft 'nope' in the review queue {queue}; waiting: " in out
    assert f"  {queue}/{STROKE}1.yaml: given more than once; each draft is decided once" in out
    assert f"  {queue}/nope.yaml: given more than once" in out
    assert _decided(queue) == [(f"{STROKE}1", "accepted"), (f"{STROKE}2", "accepted")]
    # one id: the error is the single call's own, word for word
    code, out = _accept(capsys, queue, "nope")
    waiting = ", ".join(f"{STROKE}{n}" for n in (3, 4, 5, 6))
    assert (code, out) == (2, f"error: no draft 'nope' in the review queue {queue}; waiting: {waiting}\n")


def test_several_drafts_rejected_in_one_call(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queue = _queue_of(capsys, work)
    reject = ["reject-draft", str(queue), "--reviewer", "Dr R", "--reason", "covered by 01"]
    code, out = _cli(capsys, *reject[:2], f"{STROKE}2", f"{STROKE}3", f"{STROKE}5", *reject[2:])
    assert code == 0, out
    moved = [queue / "rejected" / f"{STROKE}{n}.yaml" for n in (2, 3, 5)]
    assert out.splitlines() == [f"rejected {p.stem} (moved to {p})" for p in moved]
    assert all(p.is_file() for p in moved)
    code, out = _cli(capsys, *reject[:2], f"{STROKE}6", f"{STROKE}2", "nope", *reject[2:])
    assert code == 2 and f"rejected {STROKE}6 (moved to" in out
    assert "error: 2 of 3 drafts not rejected, 1 rejected (2 problems):" in out
    assert (
        f"{queue}/{STROKE}2.yaml: no draft '{STROKE}2'" in out
        and f"{queue}/nope.yaml: no draft 'nope'" in out
    )
    assert _decided(queue) == [(f"{STROKE}{n}", "rejected") for n in (2, 3, 5, 6)]
    # no reviewer: one line for the whole call, and nothing decided
    code, out = _cli(capsys, *reject[:2], f"{STROKE}1", f"{STROKE}4", "--reviewer", " ", "--reason", "x")
    assert (code, out) == (2, "error: a decision needs the reviewer's name (--reviewer)\n")
    code, out = _cli(capsys, "accept-draft", *reject[1:2], f"{STROKE}1", f"{STROKE}4", "--suite", DEMO,
                     "--reviewer", "Dr R", "--reason", " ")  # fmt: skip
    assert code == 2 and out.count("error:") == 1 and "needs a reason" in out
    assert len(_decided(queue)) == 4 and (queue / f"{STROKE}1.yaml").is_file()


@pytest.mark.parametrize(
    ("spoil", "field"),
    [
        (lambda t: t.replace("facts:", "fatcs:"), "fatcs"),
        (lambda t: t.replace("persona:", "persona: [a, b]\npersona_was:"), "persona"),
        (lambda t: t + "max_turns: many\n", "max_turns"),
    ],
)
def test_a_draft_s_mistake_is_named_at_its_line_in_the_queue_not_in_a_staged_copy(
    work: Path, capsys: pytest.CaptureFixture[str], spoil: object, field: str
) -> None:
    """The reviewer opens the file the error names: the draft in the queue, at the line of the mistake (the
    staged copy the accept writes is gone, and its lines are not the draft's)."""
    queue = _queue_of(capsys, work)
    bad = queue / f"{STROKE}3.yaml"
    spoilt = spoil(bad.read_text())  # type: ignore[operator]
    bad.write_text(spoilt)
    code, out = _accept(capsys, queue, f"{STROKE}3")
    line = next(n for n, text in enumerate(spoilt.splitlines(), 1) if text.startswith(f"{field}:"))
    assert code == 2 and ".staged" not in out and "Traceback" not in out, out
    assert f"{bad}:{line}" in out and field in out, out


@pytest.mark.parametrize(
    "draft_id",
    [
        "../scenarios/triage/chest-pain-vague-01",  # a real scenario beside the queue
        "../q/../scenarios/triage/chest-pain-vague-01",
        "sub/draft",
        "/tmp/anything",
        "..",
        ".hidden",
        "",
        "a\\..\\b",
    ],
)
@pytest.mark.parametrize("verb", ["accept-draft", "reject-draft"])
def test_a_draft_id_that_is_a_path_is_refused_and_nothing_moves(
    work: Path, capsys: pytest.CaptureFixture[str], draft_id: str, verb: str
) -> None:
    """A draft id names a file in the queue: one that reaches elsewhere would accept (and remove) or reject
    (and move) a file that is no draft."""
    queue = _queue_of(capsys, work, count=2)
    outside = work / "scenarios/triage/chest-pain-vague-01.yaml"
    before = outside.read_text()
    extra = ["--suite", DEMO] if verb == "accept-draft" else []
    code, out = _cli(capsys, verb, str(queue), draft_id, *extra, "--reviewer", "Dr R", "--reason", "ok")
    assert code == 2 and "Traceback" not in out, out
    assert "not a draft id" in out and "without folders or a leading dot" in out, out
    assert outside.read_text() == before and _decided(queue) == []
    assert not (queue / "rejected").exists()
