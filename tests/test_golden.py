"""Golden sets through the main engine: loading (YAML and CSV, file:line errors), the scripted user, the
verdicts the code checks write, samples (pass^k), resume and retry, the report's golden section, compare,
and the `golden` commands. The shipped parcel set must give docs/golden.md's figures exactly."""

from __future__ import annotations

import asyncio
import hashlib
import io
import itertools
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from simulator.analysis.compare import compare_runs
from simulator.analysis.golden import Gate, golden_items, parse_gate
from simulator.analysis.rundata import load_run
from simulator.bots.base import Reply
from simulator.cli import main
from simulator.config.golden import GoldenItem, golden_scenario, load_golden
from simulator.config.loading import load_scenarios
from simulator.engine.golden import GoldenOptions, run_golden
from simulator.errors import Problem, UserError
from simulator.judging.code_checks import code_verdicts
from simulator.record.folder import CONVERSATIONS, RunFolder
from simulator.record.models import ConversationRecord
from simulator.record.transcript import Turn
from simulator.report.draw_terminal import draw_section
from simulator.report.golden_view import golden_section
from simulator.report.html import render_html
from simulator.report.json_report import report_json
from simulator.report.model import Report, ReportOptions, build_report
from simulator.report.views import render_comparison
from simulator.stats.basic import zero_failure_upper_bound
from tests.support.waiting import until

ROOT = Path(__file__).resolve().parent.parent
PARCELS = ROOT / "scenarios" / "golden" / "parcels.yaml"
BOT_A, BOT_B = "examples.parcel_bot:bot_a", "examples.parcel_bot:bot_b"


# --- test bots (factories named as `tests.test_golden:<name>`)


class EchoBot:
    """Counts what it was sent, so a test can see the context turns arrived first."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def send(self, text: str) -> str:
        self.seen.append(text)
        return f"seen {len(self.seen)}: {text}"


def echo_bot() -> EchoBot:
    return EchoBot()


@dataclass
class _Reply:
    messages: list[str]


class MultiBot:
    async def send(self, text: str) -> _Reply:
        return _Reply(["in transit", f"(you asked: {text})"])


async def multi_bot() -> MultiBot:
    return MultiBot()


BROKEN = {"on": True}  # the fragile bot's backend, switched on and off by tests


class FragileBot:
    def send(self, text: str) -> object:
        if "boom" in text and BROKEN["on"]:
            raise RuntimeError("backend down")
        if "number" in text:
            return 42
        return "in transit"


def fragile_bot() -> FragileBot:
    return FragileBot()


_INSTANCES = itertools.count()


class FlakyBot:
    """Every other fresh instance answers wrongly, but only to messages containing "flaky"."""

    def __init__(self) -> None:
        self.wrong = next(_INSTANCES) % 2 == 1

    def send(self, text: str) -> str:
        return "delivered" if self.wrong and "flaky" in text else "in transit"


def flaky_bot() -> FlakyBot:
    return FlakyBot()


HANG = {"on": True}


class HangingBot:
    """Answers at once, except to "hang" while HANG is on: the run is interrupted while it waits."""

    async def send(self, text: str) -> str:
        while "hang" in text and HANG["on"]:
            await asyncio.sleep(0.05)
        return "in transit"


def hanging_bot() -> HangingBot:
    return HangingBot()


class EnvHangingBot:
    """Hangs on "hang" while the environment says so: a bot for a run in another process, killed there."""

    async def send(self, text: str) -> str:
        while "hang" in text and os.environ.get("SIMULATOR_TEST_HANG") == "1":
            await asyncio.sleep(0.05)
        return "in transit"


def env_hanging_bot() -> EnvHangingBot:
    return EnvHangingBot()


# --- helpers


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(UserError) as info:
        load_golden(path)
    return info.value.problems


def run(items: Path, bot: str, out: Path, **options: int) -> Path:
    result = asyncio.run(run_golden(items, bot, GoldenOptions(out=out, progress=False, **options)))
    return Path(result.folder)


def report_of(folder: Path, gate: Gate | None = None) -> Report:
    return build_report(load_run(folder), ReportOptions(gate=gate))


SMALL = """\
items:
  - item_id: transit
    intent: status
    kind: exact
    user_message: Only the status of KP-1001.
    reference: in transit
  - item_id: flaky
    intent: status
    kind: assert
    user_message: flaky question about KP-1001
    reference: in transit
    must_contain: [in transit]
"""


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("runs")
    return run(PARCELS, BOT_A, out / "bot-a"), run(PARCELS, BOT_B, out / "bot-b")


# --- loading and validation: the one document loader, YAML and CSV


def test_shipped_set_has_48_items_in_the_seed_strata() -> None:
    items = load_golden(PARCELS)
    counts: dict[str, int] = {}
    for item in items:
        counts[item.intent] = counts.get(item.intent, 0) + 1
    assert counts == {
        "status": 12,
        "delivery_date": 6,
        "unknown_parcel": 8,
        "refund_policy": 4,
        "address_change": 4,
        "out_of_scope": 6,
        "third_party_address": 4,
        "status_readback": 4,
    }
    assert {i.id for i in items if i.kind == "exact"} == {f"readback-0{n}" for n in range(1, 5)}
    follow_up = next(i for i in items if i.context)
    assert [t.role for t in follow_up.context] == ["user", "bot"]
    assert items[0].source == f"{PARCELS}:{items[0]._line}" and items[0]._line is not None


def test_shipped_csv_holds_the_same_items_as_the_yaml() -> None:
    def fields(path: Path) -> list[dict[str, object]]:
        return [item.model_dump() for item in load_golden(path)]

    assert fields(PARCELS.with_suffix(".csv")) == fields(PARCELS)


def test_golden_files_load_through_the_scenario_loader_as_one_turn_scenarios(tmp_path: Path) -> None:
    with pytest.raises(UserError) as twins:  # the YAML and its CSV twin: every id twice
        load_scenarios([PARCELS.parent])
    assert len(twins.value.problems) == 48 and {p.field for p in twins.value.problems} == {"item_id"}
    write(tmp_path, "a.yaml", SMALL)
    write(tmp_path, "b.csv", "item_id,intent,kind,user_message,reference\ntransit,status,exact,hi,x\n")
    with pytest.raises(UserError) as info:
        load_scenarios([tmp_path])
    [problem] = info.value.problems
    assert (problem.file, problem.line, problem.field) == (str(tmp_path / "b.csv"), 2, "item_id")
    assert "duplicate golden item id 'transit' (first defined at" in problem.message
    (tmp_path / "b.csv").unlink()
    transit, flaky = load_scenarios([tmp_path])
    assert transit.script is not None and transit.script.kind == "exact" and transit.max_turns == 2
    assert (transit.reference, transit.assertions) == ("in transit", None)
    assert flaky.assertions is not None and flaky.assertions.must_contain == ["in transit"]
    assert flaky.source == f"{tmp_path / 'a.yaml'}:7"


def test_yaml_may_be_a_plain_list(tmp_path: Path) -> None:
    body = textwrap.dedent(SMALL.split("items:\n", 1)[1])
    assert body.startswith("- item_id: transit\n  intent: status\n")
    assert [i.id for i in load_golden(write(tmp_path, "list.yml", body))] == ["transit", "flaky"]


BROKEN_YAML = """\
items:
  - item_id: typo
    intent: status
    kind: assert
    user_message: hi
    refrence: hello
    must_contain: [hello]
  - item_id: no-message
    intent: status
    kind: assert
    reference: x
    must_contain: [x]
  - item_id: bad-kind
    intent: status
    kind: exakt
    user_message: hi
    reference: x
  - item_id: typo
    intent: status
    kind: exact
    user_message: hi
    reference: x
  - item_id: bad-regex
    intent: status
    kind: assert
    user_message: hi
    reference: x
    must_not_match: '(\\d{4}'
  - item_id: bad-context
    intent: status
    kind: exact
    user_message: hi
    reference: x
    context:
      - {role: agent, text: hello}
      - {role: user, txt: hello}
  - item_id: asserts-nothing
    intent: status
    kind: assert
    user_message: hi
    reference: x
"""


def test_yaml_problems_name_line_field_and_fix(tmp_path: Path) -> None:
    got = {(p.line, p.field, p.message) for p in problems_of(write(tmp_path, "broken.yaml", BROKEN_YAML))}
    assert (6, "refrence", "unknown key 'refrence'; did you mean 'reference'?") in got
    assert (2, "reference", "missing required field 'reference'; add it") in got
    assert (8, "user_message", "missing required field 'user_message'; add it") in got
    assert (15, "kind", "should be one of 'exact' or 'assert' (got 'exakt'); did you mean 'exact'?") in got
    dup = next(p for p in got if p[0] == 18)
    assert dup[1] == "item_id" and dup[2].startswith("duplicate golden item id 'typo' (first defined at ")
    regex = next(p for p in got if p[1] == "must_not_match")
    assert regex[0] == 28 and regex[2].startswith(
        "must_not_match `(\\d{4}` is not a valid regular expression"
    )
    assert (35, "context[1].role", "should be one of 'user' or 'bot' (got 'agent')") in got
    assert (36, "context[2].txt", "unknown key 'txt'; did you mean 'text'?") in got
    assert (36, "context[2].text", "missing required field 'text'; add it") in got
    assert (
        39,
        "kind",
        "an assert item needs at least one of must_contain, must_not_contain, must_not_match",
    ) in got
    assert len(got) == 10


def test_yaml_top_level_syntax_and_duplicate_key_problems(tmp_path: Path) -> None:
    bad_top = write(tmp_path, "top.yaml", "itmes: []\n")
    messages = [str(p) for p in problems_of(bad_top)]
    assert f"{bad_top}:1 [itmes]: unknown top-level key 'itmes'; did you mean 'items'?" in messages
    assert any("missing 'items:'" in m for m in messages)
    syntax = problems_of(write(tmp_path, "syntax.yaml", "items:\n  - item_id: [unclosed\n    intent: x\n"))
    assert len(syntax) == 1 and syntax[0].message.startswith("not valid YAML") and syntax[0].line == 2
    twice = SMALL.replace(
        "    intent: status\n    kind: exact", "    intent: status\n    intent: other\n    kind: exact"
    )
    dup = problems_of(write(tmp_path, "dup.yaml", twice))
    assert [(p.line, p.field) for p in dup] == [(4, "items[1].intent")]
    assert "duplicate key" in dup[0].message and "keep one" in dup[0].message
    assert problems_of(write(tmp_path, "empty.yaml", "items: []\n"))[0].message.startswith(
        "the file holds no items"
    )
    with pytest.raises(UserError, match=r"\.yaml, \.yml or \.csv"):
        load_golden(write(tmp_path, "items.json", "[]"))
    with pytest.raises(UserError, match="no such file"):
        load_golden(tmp_path / "missing.yaml")


CSV_OK = """\
item_id,intent,kind,user_message,reference,must_contain,must_not_contain,must_not_match
unknown-1,unknown_parcel,assert,Where is KP-9999?,I cannot find KP-9999.,KP-9999; cannot find|not found,\
in transit;expected on,\\d{4}-\\d{2}-\\d{2}
readback-1,status_readback,exact,"Only the status,
please",out for delivery,,,
"""


def test_csv_groups_split_on_semicolons_and_bars(tmp_path: Path) -> None:
    unknown, readback = load_golden(write(tmp_path, "ok.csv", CSV_OK))
    assert unknown.must_contain == ["KP-9999", "cannot find|not found"]
    assert unknown.must_not_contain == ["in transit", "expected on"]
    assert unknown.must_not_match == r"\d{4}-\d{2}-\d{2}"
    assert readback.user_message == "Only the status,\nplease" and readback.must_not_match is None
    assert (unknown._line, readback._line) == (2, 3)


def test_csv_problems_name_the_row_line(tmp_path: Path) -> None:
    text = CSV_OK + (
        "bad-kind,status,exakt,hi,x,,,\n"
        "\n"
        "unknown-1,status,exact,hi,x,,,\n"
        'bad-regex,status,assert,hi,x,,,"[a-"\n'
        "short,status\n"
    )
    got = {(p.line, p.field, p.message.split(" (")[0]) for p in problems_of(write(tmp_path, "bad.csv", text))}
    assert got == {
        (5, "kind", "should be one of 'exact' or 'assert'"),
        (7, "item_id", "duplicate golden item id 'unknown-1'"),
        (
            8,
            "must_not_match",
            "must_not_match `[a-` is not a valid regular expression: unterminated character set at position 3",
        ),
        (9, None, "row has 2 cells but the header has 8; quote cells holding commas"),
    }
    header = problems_of(write(tmp_path, "header.csv", "item_id,intent,kind,user_mesage,reference\n"))
    assert [str(p).split(": ", 1)[1] for p in header] == [
        "unknown column 'user_mesage'; did you mean 'user_message'?",
        "missing required column 'user_message'; add it",
    ]
    bad_json = "item_id,intent,kind,user_message,reference,context\nc,s,exact,hi,x,[{oops\n"
    assert problems_of(write(tmp_path, "ctx.csv", bad_json))[0].field == "context"


# --- the verdict: code checks on a one-turn conversation


READBACK = GoldenItem.model_validate(
    {
        "item_id": "rb",
        "intent": "status_readback",
        "kind": "exact",
        "user_message": "Only the status of KP-1005.",
        "reference": "out for delivery",
        "must_contain": ["out for delivery"],
    }
)
UNKNOWN = GoldenItem.model_validate(
    {
        "item_id": "u",
        "intent": "unknown",
        "kind": "assert",
        "user_message": "Where is KP-9999?",
        "reference": "I cannot find a parcel with the number KP-9999.",
        "must_contain": ["KP-9999", "cannot find|couldn't find"],
        "must_not_match": r"\d{4}-\d{2}-\d{2}",
    }
)


def judged(item: GoldenItem, *replies: list[str]) -> dict[str, tuple[str, float | None]]:
    """The verdicts the code checks write for a conversation whose bot turns are `replies`."""
    now = datetime.now(UTC)
    turns = []
    for index, messages in enumerate(replies):
        turns.append(Turn(index=index, role="user", messages=["(line)"], started_at=now))
        turns.append(Turn(index=index, role="bot", messages=messages, started_at=now))
    record = ConversationRecord(
        id=f"{item.id}#0",
        scenario_id=item.id,
        repeat=0,
        stop_reason="user_done",
        turns=turns,
        started_at=now,
        ended_at=now,
    )
    return {v.criterion_id: (v.result, v.score) for v in code_verdicts(record, golden_scenario(item), "h")}


def test_exact_items_are_decided_by_exact_match_only() -> None:
    good = judged(READBACK, ["Out for delivery."])
    assert good["exact_match"] == ("pass", None) and good["metric.assertions"] == ("not_applicable", 1.0)
    wrapped = judged(READBACK, ["The current status of KP-1005 is: out for delivery."])
    assert wrapped["exact_match"][0] == "fail" and "assertions" not in wrapped
    assert wrapped["metric.assertions"] == ("not_applicable", 1.0)  # the phrase is there; it gates nothing
    assert wrapped["metric.token_f1"][1] == pytest.approx(
        6 / 11, abs=1e-6
    )  # the seed's false pass of a 0.5 gate


def test_assert_items_are_decided_by_assertions_on_the_last_reply_whatever_the_similarity() -> None:
    paraphrase = judged(UNKNOWN, ["Sorry!", "I couldn't find any parcel called KP-9999 — please check it."])
    assert paraphrase["assertions"][0] == "pass" and (paraphrase["metric.token_f1"][1] or 0) < 0.5
    close = judged(UNKNOWN, ["I cannot find a parcel with the number KP-9999, due 2026-09-15."])
    assert close["assertions"][0] == "fail" and (close["metric.rouge_l"][1] or 0) > 0.8
    # Only the reply to the item's message counts: a context reply that says KP-9999 does not help.
    context = judged(UNKNOWN, ["KP-9999? cannot find it"], ["Let me check."])
    assert context["assertions"][0] == "fail"


class ClosingBot:
    """Ends the conversation at once: the item's own message is never answered."""

    def send(self, text: str) -> Reply:
        return Reply(messages=["in transit"], closed=True)


def closing_bot() -> ClosingBot:
    return ClosingBot()


def test_an_item_whose_message_the_bot_never_answered_fails(tmp_path: Path) -> None:
    items = write(
        tmp_path,
        "c.yaml",
        SMALL.replace(
            "    reference: in transit\n  - item_id: flaky",
            "    reference: in transit\n    context: [{role: user, text: hello}]\n  - item_id: flaky",
        ),
    )
    folder = run(items, "tests.test_golden:closing_bot", tmp_path / "run")
    transit, flaky = golden_items(load_run(folder))
    assert (transit.verdict, flaky.verdict) == ("fail", "pass")
    assert transit.failures == [
        "the conversation stopped (bot_closed) after 1 of 2 user lines: the bot never answered the item's message"
    ]


# --- the engine: run folder, scripted user, errors, samples, resume


def test_a_golden_run_is_an_ordinary_run_folder(shipped: tuple[Path, Path]) -> None:
    a, _ = shipped
    manifest = RunFolder.open(a).read_manifest()
    assert manifest.kind == "golden" and manifest.status == "complete"
    assert (manifest.models.user, manifest.models.bot, manifest.planned) == (
        "scripted",
        f"python:{BOT_A}",
        48,
    )
    assert manifest.suite is not None and manifest.suite.runs == 1
    entry = manifest.scenarios[0]
    assert (entry.id, entry.intent, entry.item_kind) == ("status-01", "status", "assert")
    assert entry.sha256 == "sha256:" + hashlib.sha256(PARCELS.read_bytes()).hexdigest()
    records = list(RunFolder.open(a).conversations())
    assert len(records) == 48 and {r.stop_reason for r in records} == {"user_done"}
    first = next(r for r in records if r.id == "status-01#0")
    assert [t.role for t in first.turns] == ["user", "bot"] and first.turns[
        0
    ].text == "Where is my parcel KP-1001?"
    kinds = {v.kind for v in RunFolder.open(a).verdicts()}
    assert kinds == {"code", "metric"}


def test_context_user_turns_are_sent_first_to_a_fresh_bot(tmp_path: Path) -> None:
    items = write(
        tmp_path,
        "ctx.yaml",
        """\
- item_id: follow-up
  intent: status
  kind: assert
  user_message: and now?
  reference: x
  must_contain: ["seen 3: and now?"]
  context:
    - {role: user, text: hello}
    - {role: bot, text: (not sent)}
    - {role: user, text: KP-1001 please}
- item_id: alone
  intent: status
  kind: assert
  user_message: hi
  reference: x
  must_contain: ["seen 1: hi"]
""",
    )
    folder = run(items, "tests.test_golden:echo_bot", tmp_path / "run", samples=2)
    verdicts = {i.item_id: i.verdict for i in golden_items(load_run(folder))}
    assert verdicts == {"follow-up": "pass", "alone": "pass"}
    follow_up = next(r for r in RunFolder.open(folder).conversations() if r.id == "follow-up#1")
    assert [t.text for t in follow_up.turns] == [
        "hello",
        "seen 1: hello",
        "KP-1001 please",
        "seen 2: KP-1001 please",
        "and now?",
        "seen 3: and now?",
    ]


def test_async_factory_and_reply_objects_with_messages(tmp_path: Path) -> None:
    folder = run(write(tmp_path, "s.yaml", SMALL), "tests.test_golden:multi_bot", tmp_path / "r")
    transit, flaky = golden_items(load_run(folder))
    assert transit.reply == "in transit\n(you asked: Only the status of KP-1001.)"
    assert (transit.verdict, flaky.verdict) == ("fail", "pass")


FRAGILE = (
    SMALL
    + """\
  - item_id: boom
    intent: status
    kind: exact
    user_message: boom
    reference: in transit
  - item_id: wrong-type
    intent: other
    kind: exact
    user_message: number please
    reference: in transit
"""
)


def test_a_bot_that_raises_is_an_error_never_a_pass_or_fail(tmp_path: Path) -> None:
    BROKEN["on"] = True
    folder = run(write(tmp_path, "f.yaml", FRAGILE), "tests.test_golden:fragile_bot", tmp_path / "run")
    items = {i.item_id: i for i in golden_items(load_run(folder))}
    assert {k: i.verdict for k, i in items.items()} == {
        "transit": "pass",
        "flaky": "pass",
        "boom": "error",
        "wrong-type": "error",
    }
    assert items["boom"].scores == {} and items["boom"].samples_scored == 0
    records = {r.scenario_id: r for r in RunFolder.open(folder).conversations()}
    error = records["boom"].error
    assert error is not None and (error.source, error.kind, error.message) == (
        "bot",
        "bot_exception",
        "RuntimeError: backend down",
    )
    wrong = records["wrong-type"].error
    assert wrong is not None and wrong.kind == "invalid_reply" and "int" in wrong.message
    golden = report_of(folder).golden
    assert golden is not None
    assert (golden.passed, golden.failed, golden.errors, golden.verdict.n) == (2, 0, 2, 2)
    assert [row.errors for row in golden.intents] == [1, 1]


def test_samples_pass_only_if_every_sample_passes(tmp_path: Path) -> None:
    global _INSTANCES
    _INSTANCES = itertools.count()
    folder = run(
        write(tmp_path, "s.yaml", SMALL),
        "tests.test_golden:flaky_bot",
        tmp_path / "r",
        samples=4,
        concurrency=1,
    )
    transit, flaky = golden_items(load_run(folder))
    assert (transit.verdict, transit.samples, transit.samples_passed) == ("pass", 4, 4)
    assert (flaky.verdict, flaky.samples_passed, flaky.samples_scored) == ("fail", 2, 4)
    golden = report_of(folder).golden
    assert golden is not None and (golden.samples, golden.passed, golden.failed) == (4, 1, 1)
    assert (golden.sample_pass.k, golden.sample_pass.n) == (6, 8)
    assert golden.failed_items[0].item_id == "flaky" and golden.failed_items[0].samples_passed == 2


def test_an_interrupted_golden_run_resumes_to_one_record_per_item(tmp_path: Path) -> None:
    second = SMALL.split("items:\n", 1)[1].replace("item_id: transit", "item_id: hang")
    second = second.replace("item_id: flaky", "item_id: flaky-2").replace(
        "Only the status", "hang on, the status"
    )
    items = write(tmp_path, "s.yaml", SMALL + second)
    out = tmp_path / "run"
    HANG["on"] = True
    with pytest.raises(TimeoutError):
        asyncio.run(
            asyncio.wait_for(
                run_golden(items, "tests.test_golden:hanging_bot", GoldenOptions(out=out, progress=False)),
                2.0,
            )
        )
    manifest = RunFolder.open(out).read_manifest()
    assert manifest.status == "interrupted"
    done = [r.id for r in RunFolder.open(out).conversations()]
    assert "hang#0" not in done and len(done) == 3
    HANG["on"] = False
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    lines = (out / CONVERSATIONS).read_text().splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == ["flaky#0", "flaky-2#0", "hang#0", "transit#0"]
    golden = report_of(out).golden
    assert golden is not None and golden.items == 4 and golden.errors == 0
    assert RunFolder.open(out).read_manifest().status == "complete"


def test_a_killed_golden_run_resumes_to_one_record_per_item(tmp_path: Path) -> None:
    """`kill -9` in the middle of a golden run, then `simulator run --resume`: every item once."""
    items = write(
        tmp_path, "s.yaml", SMALL.replace("item_id: flaky", "item_id: hang").replace("flaky question", "hang")
    )
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMULATOR_TEST_HANG": "1"}
    argv = [
        sys.executable,
        "-m",
        "simulator",
        "golden",
        "run",
        str(items),
        "--bot",
        "tests.test_golden:env_hanging_bot",
    ]
    process = subprocess.Popen([*argv, "--out", str(out), "--no-progress"], cwd=ROOT, env=env)
    try:
        # The other item written whole (the hanging one is in flight): waited for, not timed.
        written = out / CONVERSATIONS
        until(lambda: written.exists() and written.read_text().endswith("\n"), "the first item's record")
    finally:
        process.kill()
        process.wait()
    assert [json.loads(line)["id"] for line in (out / CONVERSATIONS).read_text().splitlines()] == [
        "transit#0"
    ]
    assert RunFolder.open(out).read_manifest().status == "running"  # killed: nobody wrote the end
    env["SIMULATOR_TEST_HANG"] = "0"
    resumed = subprocess.run(
        [sys.executable, "-m", "simulator", "run", "--resume", str(out), "--no-progress"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    ids = sorted(json.loads(line)["id"] for line in (out / CONVERSATIONS).read_text().splitlines())
    assert ids == ["hang#0", "transit#0"]
    golden = report_of(out).golden
    assert golden is not None and (golden.items, golden.passed) == (2, 2)


def test_retry_errors_on_a_golden_run_replaces_the_errored_items(tmp_path: Path) -> None:
    BROKEN["on"] = True
    folder = run(write(tmp_path, "f.yaml", FRAGILE), "tests.test_golden:fragile_bot", tmp_path / "run")
    BROKEN["on"] = False
    try:
        assert main(["run", "--resume", str(folder), "--retry-errors", "--no-progress"]) == 0
    finally:
        BROKEN["on"] = True
    ids = [json.loads(line)["id"] for line in (folder / CONVERSATIONS).read_text().splitlines()]
    assert sorted(ids) == ["boom#0", "flaky#0", "transit#0", "wrong-type#0"]
    verdicts = {i.item_id: i.verdict for i in golden_items(load_run(folder))}
    assert verdicts["boom"] == "pass" and verdicts["wrong-type"] == "error"  # 42 is still not a reply


def test_bad_bot_specs_and_existing_folders_are_user_errors(tmp_path: Path) -> None:
    items = write(tmp_path, "s.yaml", SMALL)
    for spec, fragment in [
        ("examples.parcel_bot", "must look like module:factory"),
        ("no_such_module_xyz:bot", "cannot import module"),
        ("examples.parcel_bot:bot_c", "has no attribute"),
        ("examples.parcel_bot:ORDERS", "is not callable"),
    ]:
        with pytest.raises(UserError, match=fragment):
            run(items, spec, tmp_path / spec.replace(":", "-"))
    run(items, BOT_A, tmp_path / "same")
    with pytest.raises(UserError, match="already holds a run"):
        run(items, BOT_A, tmp_path / "same")
    for bad in ({"samples": 0}, {"concurrency": 0}):
        with pytest.raises(UserError, match="must be at least 1"):
            run(items, BOT_A, tmp_path / "bad", **bad)


# --- the seed's finding, on the shipped set: docs/golden.md's figures exactly


def test_the_shipped_set_gives_the_readme_table(shipped: tuple[Path, Path]) -> None:
    a, b = (report_of(folder).golden for folder in shipped)
    assert a is not None and b is not None
    table = {
        name: [
            f"{g.verdict.k}/{g.verdict.n}",
            f"{g.exact_match.k}/{g.exact_match.n}",
            f"{g.means['token_f1']:.3f}",
            f"{g.means['rouge_l']:.3f}",
            g.intents_at_zero,
        ]
        for name, g in (("A", a), ("B", b))
    }
    assert table == {
        "A": ["36/48", "36/48", "0.775", "0.775", ["unknown_parcel", "third_party_address"]],
        "B": ["42/48", "0/48", "0.505", "0.490", ["status_readback"]],
    }
    assert f"{a.means['difflib_ratio']:.3f}" == "0.818" and f"{b.means['difflib_ratio']:.3f}" == "0.517"
    readme = (ROOT / "docs" / "golden.md").read_text(encoding="utf-8")
    for name, index in (("verdict (pass)", 0), ("exact match", 1), ("mean token F1", 2), ("mean ROUGE-L", 3)):
        assert f"| {name} | {table['A'][index]} | {table['B'][index]} |" in readme
    assert "both pass 30, A only 6, B only 12, McNemar p = 0.238" in readme and "19 items" in readme
    assert (a.assertions.k, b.assertions.k, a.gate_pass.k, b.gate_pass.k) == (36, 46, 36, 25)
    assert dict((r.intent, (r.passed, r.failed)) for r in b.intents)["address_change"] == (2, 2)
    assert {f.item_id for f in b.failed_items} == {
        "address-change-03",
        "address-change-04",
        "readback-01",
        "readback-02",
        "readback-03",
        "readback-04",
    }


def test_gate_disagreements_and_threshold_sweep(shipped: tuple[Path, Path]) -> None:
    a, b = (report_of(folder).golden for folder in shipped)
    assert a is not None and b is not None
    assert a.disagreements == []
    # B: 18 correct answers the 0.5 F1 gate rejects, and one wrong readback it accepts.
    assert len(b.disagreements) == 19
    false_passes = [d for d in b.disagreements if d.gate_passed]
    assert [(d.item_id, round(d.score, 3)) for d in false_passes] == [("readback-01", 0.545)]
    assert {d.intent for d in b.disagreements if not d.gate_passed} == {
        "delivery_date",
        "unknown_parcel",
        "refund_policy",
    }
    f1_a = [row.shares["token_f1"].k for row in a.sweep]
    f1_b = [row.shares["token_f1"].k for row in b.sweep]
    assert [row.threshold for row in a.sweep] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert f1_a[1:] == [36] * 8  # flat at 75%: A's right answers are word for word
    assert f1_b[4] == 25 and f1_b == sorted(f1_b, reverse=True) and f1_b[0] == 48 and f1_b[-1] == 0
    rouge = report_of(shipped[1], parse_gate("rouge_l:0.3")).golden
    assert rouge is not None and rouge.gate_pass.k == b.sweep[2].shares["rouge_l"].k == 41


def test_gate_parsing() -> None:
    assert parse_gate("rouge_l:0.3") == Gate(metric="rouge_l", threshold=0.3)
    assert str(parse_gate("token_f1:0.5")) == "token_f1:0.5" and parse_gate("exact_match").threshold == 0.5
    for bad in ("bleu:0.5", "token_f1:high", "token_f1:1.5"):
        with pytest.raises(UserError, match="--gate"):
            parse_gate(bad)


def test_one_rate_type_with_the_exact_zero_failure_bound(shipped: tuple[Path, Path]) -> None:
    report = report_of(shipped[0])
    golden = report.golden
    assert golden is not None
    low, high = proportion_confint(36, 48, alpha=0.05, method="wilson")
    assert (golden.verdict.low, golden.verdict.high) == (pytest.approx(low), pytest.approx(high))
    status = next(row for row in golden.intents if row.intent == "status")
    assert (
        status.rate.bound
        == pytest.approx(zero_failure_upper_bound(12))
        == pytest.approx(1 - 0.05 ** (1 / 12))
    )
    assert golden.verdict.bound is None and type(status.rate) is type(report.overall)
    assert [f.title for f in report.findings if f.level == "bug"] == [
        "golden intent unknown_parcel: 0 of 8 items pass",
        "golden intent third_party_address: 0 of 4 items pass",
    ]


def test_the_golden_section_renders_in_terminal_html_and_json(shipped: tuple[Path, Path]) -> None:
    report = report_of(shipped[0])
    data = report_json(report)
    assert data["golden"]["verdict"]["k"] == 36 and data["golden"]["intents_at_zero"][0] == "unknown_parcel"
    buffer = io.StringIO()
    draw_section(Console(file=buffer, width=200), golden_section(report.golden))
    text = buffer.getvalue()
    assert "36/48 75.0%" in text and "unknown_parcel" in text and "27 Willow Street" in text
    assert "Where the gate (token_f1 ≥ 0.5) and the verdict disagree: 0" in text
    html = render_html(report)
    assert '<section id="golden">' in html and "ALL FAIL" in html and 'href="#golden"' in html
    simulation = report.model_copy(update={"golden": None})
    assert '<section id="golden">' not in render_html(simulation)


def test_html_escapes_replies_in_the_golden_section(tmp_path: Path) -> None:
    items = write(
        tmp_path, "x.yaml", SMALL.replace("flaky question about KP-1001", "<script>alert(1)</script>")
    )
    folder = run(items, "tests.test_golden:multi_bot", tmp_path / "run")
    html = render_html(report_of(folder))
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# --- compare


def test_compare_pairs_items_with_mcnemar_and_shows_the_golden_table(shipped: tuple[Path, Path]) -> None:
    comparison = compare_runs(*shipped)
    passes = next(m for m in comparison.metrics if m.name == "conversation passes")
    assert (passes.both_pass, passes.only_a, passes.only_b, passes.both_fail) == (30, 6, 12, 0)
    assert (
        passes.p_value == pytest.approx(binomtest(6, 18, 0.5).pvalue) and f"{passes.p_value:.3f}" == "0.238"
    )
    flips = {f.conversation_id: (f.a_result, f.b_result) for f in passes.flips}
    assert (
        len(flips) == 18
        and flips["unknown-01#0"] == ("fail", "pass")
        and flips["readback-02#0"] == ("pass", "fail")
    )
    assert not any(m.name.startswith("metric.") for m in comparison.metrics)  # scores pair nothing
    golden = comparison.golden
    assert golden is not None
    rows = {row.name: (row.a.split(" ")[0], row.b.split(" ")[0]) for row in golden.metrics}
    assert rows["verdict (pass)"] == ("36/48", "42/48") and rows["exact match"] == ("36/48", "0/48")
    assert rows["mean token F1"] == ("0.775", "0.505") and rows["mean ROUGE-L"] == ("0.775", "0.490")
    zero = next(row for row in golden.metrics if row.name == "intents at zero")
    assert (zero.a, zero.b) == ("unknown_parcel, third_party_address", "status_readback")
    assert [(i.intent, i.a, i.b) for i in golden.intents if i.a_zero or i.b_zero] == [
        ("unknown_parcel", "0/8", "8/8"),
        ("third_party_address", "0/4", "4/4"),
        ("status_readback", "4/4", "0/4"),
    ]
    buffer = io.StringIO()
    render_comparison(comparison, Console(file=buffer, width=200))
    printed = buffer.getvalue()
    assert (
        "Golden items, side by side" in printed
        and "A only 6 · B only 12 · per-conversation p=0.238" in printed
    )


def test_compare_refuses_different_item_sets(tmp_path: Path, shipped: tuple[Path, Path]) -> None:
    small = run(write(tmp_path, "s.yaml", SMALL), BOT_A, tmp_path / "small")
    with pytest.raises(UserError, match="different scenario sets"):
        compare_runs(shipped[0], small)


def test_compare_leaves_out_items_that_errored_and_pairs_items_over_samples(tmp_path: Path) -> None:
    BROKEN["on"] = True
    items = write(tmp_path, "s.yaml", SMALL.replace("flaky question", "boom flaky question"))
    ok = run(items, BOT_A, tmp_path / "ok", samples=2)
    broken = run(items, "tests.test_golden:fragile_bot", tmp_path / "broken", samples=2)
    comparison = compare_runs(ok, broken)
    per_item = next(m for m in comparison.metrics if m.name == "golden items (pass^k)")
    assert (per_item.pairs, per_item.excluded) == (1, 1)


# --- the commands, as a user types them


def test_golden_commands_through_the_main_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bot, name in ((BOT_A, "a"), (BOT_B, "b")):
        out = str(tmp_path / name)
        argv = [
            "golden",
            "run",
            str(PARCELS),
            "--bot",
            bot,
            "--out",
            out,
            "--no-progress",
            "--json",
            out + ".json",
        ]
        assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "36/48" in printed and "42/48" in printed and f"run folder: {tmp_path / 'a'}" in printed
    assert json.loads((tmp_path / "b.json").read_text())["golden"]["passed"] == 42
    assert main(["report", str(tmp_path / "b"), "--gate", "rouge_l:0.3"]) == 0
    assert "gate rouge_l ≥ 0.3" in capsys.readouterr().out
    assert main(["golden", "report", str(tmp_path / "b"), "--gate", "rouge_l:0.3"]) == 0  # the alias
    assert "gate rouge_l ≥ 0.3" in capsys.readouterr().out
    assert (
        main(
            [
                "golden",
                "compare",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                "--json",
                str(tmp_path / "c.json"),
            ]
        )
        == 0
    )
    assert "A only 6 · B only 12" in capsys.readouterr().out
    assert json.loads((tmp_path / "c.json").read_text())["golden"]["intents"][2]["a"] == "0/8"


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--samples", "0"], "--samples must be at least 1"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--gate", "bleu:0.4"], "--gate"),
        (["--bot", "examples.parcel_bot:nope"], "has no attribute"),
    ],
)
def test_golden_run_mistakes_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str
) -> None:
    argv = [
        "golden",
        "run",
        str(PARCELS),
        "--bot",
        BOT_A,
        "--out",
        str(tmp_path / "r"),
        "--no-progress",
        *extra,
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and fragment in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_a_missing_items_file_and_a_missing_bot_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["golden", "run", str(tmp_path / "missing.yaml"), "--bot", BOT_A]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["golden", "run", str(PARCELS)])  # --bot is required


def test_schema_golden_describes_the_item_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "golden"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"item_id", "intent", "kind", "user_message", "reference", "must_contain", "context"} <= set(
        schema["properties"]
    )
    assert "id" not in schema["properties"] and set(schema["required"]) >= {"item_id", "kind"}


def test_validate_reports_golden_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(PARCELS), str(PARCELS.with_suffix(".csv"))]) == 0
    assert capsys.readouterr().out.count("48 items ok") == 2


def test_a_suite_file_may_name_golden_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The scripted user plays golden items from an ordinary suite; it refuses scenarios it cannot play."""
    suite = write(
        tmp_path,
        "suite.yaml",
        f"name: parcels\nscenarios:\n  paths: [{PARCELS}]\nbot:\n  type: python\n  factory: {BOT_A}\n"
        "user:\n  model: scripted\n",
    )
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    golden = report_of(tmp_path / "run").golden
    assert golden is not None and (golden.passed, golden.failed) == (36, 12)
    mixed = suite.read_text().replace(f"[{PARCELS}]", f"[{ROOT / 'scenarios' / 'smoke'}]")
    write(tmp_path, "suite.yaml", mixed)
    assert main(["run", str(suite), "--out", str(tmp_path / "mixed"), "--no-progress"]) == 2
    assert "user model 'scripted' only plays golden items" in capsys.readouterr().err
