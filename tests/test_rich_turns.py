"""Rich turns (record schema 3): every part type through the loop, the record, the judge prompt, the readers
and an OpenTelemetry round trip; the offline and LLM users picking options; v2 folders migrating."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.rundata import load_run
from simulator.bots.base import BotError, normalise_reply
from simulator.cli import main
from simulator.config.vocabulary import load_vocabulary
from simulator.judging.evidence import quote_found
from simulator.judging.prompt import render_transcript_block, transcript_messages
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord
from simulator.record.parts import (
    EventPart,
    MediaPart,
    Option,
    OptionsPart,
    PickPart,
    TextPart,
    ToolCallPart,
    part_text,
)
from simulator.record.transcript import Turn, render_transcript
from simulator.report.model import build_report
from simulator.text.meaning import Reader
from simulator.text.picking import choose_option
from simulator.users.llm_user import read_pick, seen_by_user
from tests.test_record import assert_cost_counts_requests_made, assert_rate_texts_lead_with_their_interval
from tests.traces_helpers import require

DATA = Path(__file__).parent / "data" / "runs"

CHEST = """
id: chest-1
persona: 52-year-old man, short messages, downplays symptoms.
goal: Find out whether he should go to the clinic tomorrow about chest discomfort.
facts:
  - Pressure in the chest for about two hours.
  - The pain goes to the left arm.
expected:
  triage_level: emergency
tags: [cardiac]
"""

BACK = """
id: back-1
persona: 30-year-old office worker, calm.
goal: Ask where to get advice about a stiff lower back after moving house.
facts:
  - Stiff lower back since yesterday.
expected:
  triage_level: gp
tags: [msk]
"""


def _suite(tmp_path: Path, factory: str = "tests._rich_bots:buttons", extra: str = "", runs: int = 2) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chest.yaml").write_text(textwrap.dedent(CHEST) + extra)
    (folder / "back.yaml").write_text(textwrap.dedent(BACK) + extra)
    (folder / "suite.yaml").write_text(
        textwrap.dedent(
            f"""
            name: rich
            scenarios: {{paths: ["."]}}
            bot: {{type: python, factory: "{factory}"}}
            user: {{model: offline}}
            runs: {runs}
            """
        )
    )
    return folder / "suite.yaml"


def _run(tmp_path: Path, **kwargs: Any) -> tuple[Path, dict[str, ConversationRecord]]:
    out = tmp_path / "run"
    assert main(["run", str(_suite(tmp_path, **kwargs)), "--out", str(out), "--no-progress"]) == 0
    return out, {r.id: r for r in RunFolder(out).conversations()}


# ---- the record -----------------------------------------------------------------------------------------


def test_a_v2_folder_reads_as_text_parts_and_reports_as_the_version_that_wrote_it(tmp_path: Path) -> None:
    run = tmp_path / "v2"
    shutil.copytree(DATA / "v2-simulation", run)
    raw = [json.loads(line) for line in (run / "conversations.jsonl").read_text().splitlines()]
    records = {r.id: r for r in RunFolder(run).conversations()}
    assert len(records) == len(raw) == 8
    for old in raw:
        new = records[old["id"]]
        assert [t.messages for t in new.turns] == [t["messages"] for t in old["turns"]]
        assert all(isinstance(p, TextPart) for t in new.turns for p in t.parts)
    # Version 3 says how each verdict was decided, read from the v2 record's structure.
    decided = {(v.criterion_id.split(".")[0], v.result): v.decided_by for v in RunFolder(run).verdicts()}
    assert decided[("outcome", "pass")] == "code" and decided[("fidelity", "pass")] == "code"
    assert all(by is None for (_, result), by in decided.items() if result == "not_judged")
    before = json.loads((DATA / "v2-simulation.report.json").read_text())
    after = json.loads(build_report(load_run(run)).model_dump_json())
    for volatile in ("generated_at", "run", "transcripts"):
        before.pop(volatile, None)
        after.pop(volatile, None)
    added = {key for key in after if key not in before}  # sections added since, empty on this run
    assert all(after.pop(key) in (None, []) for key in added)
    # Deliberate change (issue 31): the findings lead with the vignette-clustered interval, the
    # per-conversation one after it, labelled; the same counts and the same interval ends.
    old_findings, new_findings = before.pop("findings"), after.pop("findings")
    # Deliberate change (issue 46): the outcome names the source its figures rest on; a run judged before
    # outcome sources existed rests on the bot's state, and its cases carry no deciding quote.
    assert (after["outcome"].pop("source"), after["outcome"].pop("counts")) == (["state"], None)
    for case in after["outcome"]["cases"]:
        assert (case.pop("source"), case.pop("quote"), case.pop("red_flag_quote")) == (None, None, None)
    # Deliberate change (issue 46): conversations without a scenario held to the patient's red flags; a run
    # with none of them, and no red flags read, has no such figure.
    floor = [
        after["outcome"].pop(k) for k in ("red_flag_under_triage", "red_flag_left_out", "red_flag_check")
    ]
    assert floor == [None, 0, None]
    # Deliberate change (issue 46): expected levels a clinician labelled; a simulated run has none.
    assert after["outcome"].pop("clinician_labelled") == 0
    # Deliberate change (issue 44): zero-rate texts, dropped by assert_cost_counts_requests_made.
    assert_cost_counts_requests_made(before, after)
    # Deliberate change: pass^k counts the vignettes its interval resamples (a v2 run has no variants: as many
    # as its scenarios, and the same interval).
    for row in after["pass_hat_k"]:
        assert (row.pop("vignettes"), row.pop("worst_vignettes")) == (
            row["scenarios"],
            row["worst_scenarios"],
        )
    # Deliberate change: a rate's text leads with its one interval, clustered over vignettes, and shows the
    # per-conversation interval only labelled (tests/test_one_interval_text.py); the same count and rate.
    assert_rate_texts_lead_with_their_interval(before, after)
    # Deliberate change: a clustered interval names its unit (vignettes), where it said "scenarios".
    assert after == _in_vignettes(before) and _units(after) == {"vignettes"}
    assert [f["level"] for f in new_findings] == [f["level"] for f in old_findings]
    for was, now in zip(old_findings, new_findings, strict=True):
        was_text, now_text = was["title"] + was["detail"], now["title"] + now["detail"]
        assert re.findall(r"\d+/\d+", now_text) == re.findall(r"\d+/\d+", was_text)
        assert set(re.findall(r"\d+\.\d%", was_text)) <= set(re.findall(r"\d+\.\d%", now_text))
    assert (run / "conversations.jsonl").read_text().splitlines()[0] == json.dumps(
        raw[0], separators=(",", ":")
    )


def test_a_turn_accepts_the_text_only_form_and_refuses_both_forms() -> None:
    turn = Turn(index=0, role="bot", messages=["a", "b"], started_at="2026-01-01T00:00:00Z")
    assert turn.parts == [TextPart(text="a"), TextPart(text="b")] and turn.text == "a\nb"
    assert "messages" not in turn.model_dump()
    with pytest.raises(ValueError, match="not both"):
        Turn(index=0, role="bot", messages=["a"], parts=[], started_at="2026-01-01T00:00:00Z")


@pytest.mark.parametrize(
    ("part", "text"),
    [
        (TextPart(text="hello"), "hello"),
        (
            OptionsPart(options=[Option(id="y", title="Yes"), Option(id="n", title="No")]),
            "[buttons] Yes [id=y] | No [id=n]",
        ),
        (
            OptionsPart(style="list", button="Pick", options=[Option(id="gp", title="GP")]),
            '[list "Pick"] GP [id=gp]',
        ),
        (PickPart(id="y", title="Yes"), "[picked] Yes [id=y]"),
        (PickPart(id="zz", title="zz", offered=False), "[picked] zz [id=zz] (not offered)"),
        (MediaPart(kind="audio", content_type="audio/ogg"), "[audio audio/ogg]"),
        (
            ToolCallPart(name="book", arguments={"u": 1}, result={"id": "A"}),
            '[tool call] book {"u": 1} -> {"id": "A"}',
        ),
        (
            ToolCallPart(name="read", side="user", error="no such"),
            "[user tool call] read {} -> ERROR: no such",
        ),
        (EventPart(event="close"), "[event] close"),
    ],
)
def test_each_part_has_one_documented_text_form(part: Any, text: str) -> None:
    assert part_text(part) == text


def test_surrogates_in_any_part_are_repaired_on_entry() -> None:
    turn = Turn(
        index=0,
        role="bot",
        parts=[
            {"type": "text", "text": "a\ud800"},
            {"type": "options", "options": [{"id": "x", "title": "b\udfff"}]},
        ],
        started_at="2026-01-01T00:00:00Z",
    )
    assert turn.text_repaired and turn.text == "a\ufffd"
    assert isinstance(turn.parts[1], OptionsPart) and turn.parts[1].options[0].title == "b\ufffd"
    built = Turn(index=0, role="bot", parts=[TextPart(text="c\udc80")], started_at="2026-01-01T00:00:00Z")
    assert built.text_repaired and built.text == "c\ufffd"
    reply = normalise_reply([{"type": "options", "options": [{"id": "i\ud800", "title": "t"}]}])
    assert (
        reply.parts and isinstance(reply.parts[0], OptionsPart) and reply.parts[0].options[0].id == "i\ufffd"
    )


# ---- the loop and the offline user ------------------------------------------------------------------------


def test_the_offline_user_taps_the_button_its_facts_call_for(tmp_path: Path) -> None:
    run, records = _run(tmp_path)
    chest = records["chest-1#0"]
    user_picks = [p for t in chest.turns if t.role == "user" for p in t.parts if isinstance(p, PickPart)]
    # "spread to your arm" is what its arm fact (number 2) says: the pick records that fact
    assert user_picks == [PickPart(id="yes", title="Yes", facts=[2], basis="fact")]
    assert chest.stop_reason == "handover" and chest.final_state == {"triage_level": "emergency"}
    last = chest.turns[-1].parts
    assert [type(p) for p in last] == [ToolCallPart, TextPart, MediaPart, EventPart]
    assert isinstance(last[0], ToolCallPart) and last[0].result == {"service": "A&E", "distance_km": 2.5}
    arm = next(p for p in chest.provenance if "arm" in p.text)
    assert arm.status == "elicited" and arm.asked_turn == 1
    # No fact is about the arm or jaw for the back pain: it taps "Not sure" (never a made-up "No", as its
    # typed answer would say); no fact says where to be seen and no row says "none", so it types what it
    # knows instead of guessing a place (the same in every run).
    back = [records["back-1#0"], records["back-1#1"]]
    for record in back:
        picks = [p for t in record.turns for p in t.parts if isinstance(p, PickPart)]
        typed = [
            t.text
            for t in record.turns
            if t.role == "user" and not any(isinstance(p, PickPart) for p in t.parts)
        ]
        assert picks and {(p.id, p.basis) for p in picks} == {("unsure", "unsure")} and len(typed) >= 2
        assert record.stop_reason == "max_turns"  # this bot takes only taps: its own limit, not a guess
    _, again = _run(tmp_path / "again")
    assert [t.parts for t in again["back-1#1"].turns] == [t.parts for t in back[1].turns]
    fidelity = [v for v in RunFolder(run).verdicts() if v.criterion_id == "fidelity.valid_pick"]
    assert len(fidelity) == 4 and {v.result for v in fidelity} == {"pass"}
    invented = [v for v in RunFolder(run).verdicts() if v.criterion_id == "fidelity.invented_facts"]
    assert {v.result for v in invented} == {"pass"}


def test_a_persona_that_ignores_buttons_types_instead(tmp_path: Path) -> None:
    _, records = _run(tmp_path, extra="buttons: type\n", runs=1)
    chest = records["chest-1#0"]
    assert not any(isinstance(p, PickPart) for t in chest.turns for p in t.parts)
    assert "Please tap one of the buttons." in chest.turns[3].messages


@pytest.mark.parametrize(
    ("titles", "facts", "question", "expected"),
    [
        (["Yes", "No"], ["The pain goes to the left arm."], "Does the pain go to your arm?", "Yes"),
        (["Yes", "No", "Not sure"], ["I feel sick."], "Does the pain go to your arm?", "Not sure"),
        (["Yes", "Not sure"], ["I feel sick."], "Do you have a fever?", "Not sure"),
        (
            ["Chest pain", "Headache", "Rash"],
            ["A rash on my legs that does not fade."],
            "What is it about?",
            "Rash",
        ),
        (["Breathing", "Bleeding"], ["Bleeding from a cut on my hand."], "Pick one", "Bleeding"),
    ],
)
def test_the_offline_user_chooses_from_its_facts(
    titles: list[str], facts: list[str], question: str, expected: str
) -> None:
    options = [Option(id=f"o{i}", title=t) for i, t in enumerate(titles)]
    reader = Reader(load_vocabulary(Path("examples/triage_vocabulary.yaml")))
    readings = [reader.read(f) for f in facts]
    choice = choose_option(options, question, reader, readings, reader.read("Ask for advice"))
    assert choice.option is not None and choice.option.title == expected


def test_with_no_fact_behind_any_row_the_offline_user_says_none_or_types() -> None:
    reader = Reader(load_vocabulary(Path("examples/triage_vocabulary.yaml")))
    facts = [reader.read("My throat is sore."), reader.read("No other symptoms.")]
    rows = [Option(id="arm", title="Pain in arm or jaw"), Option(id="sweat", title="Sweating")]
    typed = choose_option(rows, "Any of these?", reader, facts, reader.read("Ask about a sore throat"))
    assert typed.option is None  # nothing supported and no "none" row: it types what it knows
    none = Option(id="none", title="None of these")
    tapped = choose_option([*rows, none], "Any of these?", reader, facts, reader.read("Ask"))
    assert tapped.option is none and tapped.basis == "negative" and tapped.facts == [1]


# ---- the LLM user -----------------------------------------------------------------------------------------

OFFERED = [Option(id="yes", title="Yes"), Option(id="no", title="No")]


@pytest.mark.parametrize(
    ("answer", "pick", "text"),
    [
        ("[pick: yes]", PickPart(id="yes", title="Yes"), "Yes"),
        ("[PICK: No] it's fine really", PickPart(id="no", title="No"), "it's fine really"),
        ("[tap: yes]", PickPart(id="yes", title="Yes"), "Yes"),
        ("[pick: maybe]", PickPart(id="maybe", title="maybe", offered=False), "maybe"),
        ("yes it does", None, "yes it does"),
    ],
)
def test_the_llm_users_picks_are_read_and_an_unoffered_one_is_marked(
    answer: str, pick: PickPart | None, text: str
) -> None:
    assert read_pick(answer, OFFERED) == (pick, text)


def test_the_llm_user_sees_options_and_how_to_tap_but_never_the_bots_tool_calls() -> None:
    turn = Turn(
        index=0,
        role="bot",
        parts=[
            ToolCallPart(name="secret_lookup", arguments={"nhs": "123"}),
            TextPart(text="Does it spread?"),
            OptionsPart(options=OFFERED),
        ],
        started_at="2026-01-01T00:00:00Z",
    )
    seen = seen_by_user(turn)
    assert (
        "Does it spread?" in seen and "[buttons] Yes [id=yes] | No [id=no]" in seen and "[pick: ID]" in seen
    )
    assert "secret_lookup" not in seen
    text_only = Turn(index=0, role="bot", messages=["Hi", "How old?"], started_at="2026-01-01T00:00:00Z")
    assert seen_by_user(text_only) == "Hi\nHow old?"  # text bots: the user model sees what it always saw


# ---- what readers show ----------------------------------------------------------------------------------------


def test_the_judge_reads_every_part_and_its_quotes_of_them_are_verified(tmp_path: Path) -> None:
    _, records = _run(tmp_path, runs=1)
    chest = records["chest-1#0"]
    block = render_transcript_block(chest.turns)
    assert '[tool call] lookup_service {"need": "emergency", "postcode": "SW1"}' in block
    assert "[picked] Yes [id=yes]" in block and "[buttons] Yes [id=yes]" in block
    assert "[image image/png] map to A&amp;E" not in block  # only < and > are escaped in the prompt
    assert "[image image/png] map to A&E" in block and "[event] handover: emergency" in block
    texts = [text for _, text in transcript_messages(chest.turns)]
    assert quote_found('[tool call] lookup_service {"need": "emergency"', texts)
    assert quote_found("[picked] Yes", texts) and not quote_found("[tool call] book_appointment", texts)
    assert "[1] BOT: [tool call] lookup_service" in render_transcript(chest.turns)


def test_show_html_and_json_draw_every_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, _ = _run(tmp_path, runs=1)
    capsys.readouterr()
    assert main(["show", str(run), "--scenario", "chest-1"]) == 0
    shown = capsys.readouterr().out
    for text in ("[buttons] Yes [id=yes]", "[picked] Yes [id=yes]", "[tool call] lookup_service", "[event]"):
        assert text in shown
    html_path, json_path = tmp_path / "r.html", tmp_path / "r.json"
    assert (
        main(["report", str(run), "--html", str(html_path), "--json", str(json_path), "--json-transcripts"])
        == 0
    )
    page = html_path.read_text()
    assert '<span class="opt" data-id="yes" title="id yes">Yes</span>' in page
    assert '<details class="tool"><summary>tool <code>lookup_service</code>' in page
    assert '<span class="pick" data-id="yes">tapped: Yes</span>' in page and "map to A&amp;E" in page
    data = json.loads(json_path.read_text())
    chest = next(t for t in data["transcripts"] if t["id"] == "chest-1#0")
    assert [p["type"] for p in chest["turns"][-1]["parts"]] == ["tool_call", "text", "media", "event"]


def test_html_escapes_what_a_hostile_bot_puts_in_any_part(tmp_path: Path) -> None:
    from simulator.report.html_parts import highlight
    from simulator.report.html_turns import turn_html

    hostile = "<script>alert(1)</script>"
    parts: list[Any] = [
        TextPart(text=hostile),
        OptionsPart(options=[Option(id=hostile, title=hostile, description=hostile)], button=hostile),
        MediaPart(kind="image", caption=hostile),
        ToolCallPart(name=hostile, arguments={hostile: hostile}, error=hostile),
        PickPart(id=hostile, title=hostile),
    ]
    out = "".join(turn_html("bot", parts, lambda text: highlight(text, [])))
    assert "<script>" not in out and out.count("&lt;script&gt;") >= 8


def test_an_otel_round_trip_keeps_every_part(tmp_path: Path) -> None:
    require("opentelemetry.sdk")
    run, records = _run(tmp_path, runs=1)
    assert main(["export-otel", str(run), "--out", str(tmp_path / "otel.json")]) == 0
    assert main(["import", str(tmp_path / "otel.json"), "--out", str(tmp_path / "back"), "--no-redact"]) == 0
    back = {r.scenario_id: r for r in RunFolder(tmp_path / "back").conversations()}
    for record in records.values():
        imported = next(r for sid, r in back.items() if sid.startswith(record.scenario_id))

        # Tool timing travels in the execute_tool spans (below), read back on import: the duration as it
        # was (to the exporter's nanoseconds), the start as the turn's when the call had none of its own.
        def timed(turns: list[Turn]) -> list[Any]:
            return [
                p.model_copy(update={"latency_s": round(p.latency_s or 0.0, 6), "started_at": None})
                if isinstance(p, ToolCallPart)
                else p
                for t in turns
                for p in t.parts
            ]

        assert timed(imported.turns) == timed(record.turns)
        assert all(
            p.started_at is not None for t in imported.turns for p in t.parts if isinstance(p, ToolCallPart)
        )
    doc = json.loads((tmp_path / "otel.json").read_text())
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    tools = [s for s in spans if s["name"] == "execute_tool lookup_service"]
    assert len(tools) == 1
    attrs = {a["key"]: next(iter(a["value"].values())) for a in tools[0]["attributes"]}
    assert attrs["gen_ai.operation.name"] == "execute_tool" and attrs["gen_ai.tool.call.id"] == "call_1"
    assert json.loads(attrs["gen_ai.tool.call.result"]) == {"service": "A&E", "distance_km": 2.5}


# ---- adapters -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            [{"type": "options", "options": []}],
            r"the reply, part 1 \(options\), field options: should not be empty: give at least one item",
        ),
        (["hi", {"type": "carousel"}], r"the reply, part 2: .*'carousel'"),
        ([{"type": "tool_call"}], r"the reply, part 1 \(tool_call\), field name: is missing; add it"),
        ([{"type": "media", "kind": "hologram"}], r"part 1 \(media\), field kind: should be one of"),
        ([{"type": "options", "options": [{"id": "a"}]}], r"part 1 \(options\), field options\[1\]\.title"),
    ],
)
def test_a_bad_part_from_a_bot_is_a_bot_error_naming_the_part(reply: Any, message: str) -> None:
    with pytest.raises(BotError, match=message):
        normalise_reply(reply)


def test_a_python_bot_with_a_bad_part_is_recorded_as_a_bot_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    suite = _suite(tmp_path, factory="tests._rich_bots:broken", runs=1)
    main(["run", str(suite), "--out", str(out), "--no-progress", "--max-errors", "off"])
    records = list(RunFolder(out).conversations())
    assert records and all(r.stop_reason == "error" and r.error is not None for r in records)
    assert all(r.error.kind == "invalid_reply" and "options" in r.error.message for r in records if r.error)


async def test_the_desk_user_can_tap_only_what_is_on_screen() -> None:
    from simulator.errors import UserError
    from simulator.users.human import HumanUser

    human = HumanUser("nurse")
    bot = Turn(
        index=0,
        role="bot",
        parts=[TextPart(text="Spread?"), OptionsPart(options=OFFERED)],
        started_at="2026-01-01T00:00:00Z",
    )
    human.turns = [bot]
    assert human.offered() == [("yes", "Yes"), ("no", "No")]
    with pytest.raises(UserError, match="not on screen"):
        await human.tap("maybe")
    await human.tap("no")
    message = await human.next_message([bot])
    assert message.pick == PickPart(id="no", title="No") and message.text == "No"
    assert message.parts() == [PickPart(id="no", title="No")]


def _in_vignettes(value: object) -> object:
    """A report written before clustered intervals named their unit, in today's words and fields."""
    if isinstance(value, dict):
        out = {key: _in_vignettes(item) for key, item in value.items()}
        if {"n_eff", "design_effect", "scenarios"} <= out.keys():
            out["unit"] = "vignettes"
        return out
    if isinstance(value, list):
        return [_in_vignettes(item) for item in value]
    if isinstance(value, str):
        text = re.sub(r"over (\d+) scenarios", r"over \1 vignettes", value)
        return text.replace("scenario-clustered", "vignette-clustered")
    return value


def _units(value: object) -> set[str]:
    """Every clustered interval's unit in a report."""
    if isinstance(value, dict):
        found = {value["unit"]} if "n_eff" in value and "unit" in value else set()
        return found.union(*(_units(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_units(item) for item in value))
    return set()
