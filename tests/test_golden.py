"""Golden sets: loading and validation, scoring, the runner, reports, comparisons and the CLI handlers."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import itertools
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from simulator.errors import Problem, UserError
from simulator.golden.cli import register
from simulator.golden.compare import compare_runs, render_compare
from simulator.golden.items import GoldenItem, load_items
from simulator.golden.report import Rate, build_report, render_report
from simulator.golden.runner import GoldenRun, RunOptions, load_run, run_golden
from simulator.golden.scoring import Gate, aggregate_samples, error_sample, parse_gate, score_reply

PARCELS = Path(__file__).resolve().parent.parent / "scenarios" / "golden" / "parcels.yaml"
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


class FragileBot:
    def send(self, text: str) -> object:
        if "boom" in text:
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


class CancellingBot:
    async def send(self, text: str) -> str:
        raise asyncio.CancelledError


def cancelling_bot() -> CancellingBot:
    return CancellingBot()


# --- helpers


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(UserError) as info:
        load_items(path)
    return info.value.problems


def run(path: Path, bot: str, out: Path, run_id: str, **options: object) -> GoldenRun:
    opts = RunOptions(out_dir=out, run_id=run_id, **options)  # type: ignore[arg-type]
    return asyncio.run(run_golden(load_items(path), bot, opts))


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
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[GoldenRun, GoldenRun]:
    out = tmp_path_factory.mktemp("runs")
    return run(PARCELS, BOT_A, out, "bot-a"), run(PARCELS, BOT_B, out, "bot-b")


# --- loading and validation


def test_shipped_set_has_48_items_in_the_seed_strata() -> None:
    golden = load_items(PARCELS)
    counts: dict[str, int] = {}
    for item in golden.items:
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
    assert {i.item_id for i in golden.items if i.kind == "exact"} == {f"readback-0{n}" for n in range(1, 5)}
    assert golden.sha256 == "sha256:" + hashlib.sha256(PARCELS.read_bytes()).hexdigest()
    follow_up = next(i for i in golden.items if i.context)
    assert [t.role for t in follow_up.context] == ["user", "bot"]


def test_shipped_csv_holds_the_same_items_as_the_yaml() -> None:
    assert load_items(PARCELS.with_suffix(".csv")).items == load_items(PARCELS).items


def test_yaml_may_be_a_plain_list(tmp_path: Path) -> None:
    body = textwrap.dedent(SMALL.split("items:\n", 1)[1])
    assert body.startswith("- item_id: transit\n  intent: status\n")
    golden = load_items(write(tmp_path, "list.yml", body))
    assert [i.item_id for i in golden.items] == ["transit", "flaky"]


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
    assert got == {
        (6, "refrence", "item 'typo': unknown field 'refrence' (did you mean 'reference'?)"),
        (2, "reference", "item 'typo': missing required field 'reference'"),
        (8, "user_message", "item 'no-message': missing required field 'user_message'"),
        (15, "kind", "item 'bad-kind': Input should be 'exact' or 'assert', got 'exakt'"),
        (18, "item_id", "duplicate item_id 'typo' (first on line 2)"),
        (
            28,
            "must_not_match",
            "item 'bad-regex': must_not_match `(\\d{4}` is not a valid regular expression: "
            "missing ), unterminated subpattern at position 0",
        ),
        (35, "context[0].role", "item 'bad-context': Input should be 'user' or 'bot', got 'agent'"),
        (36, "context[1].txt", "item 'bad-context': unknown field 'txt' (did you mean 'text'?)"),
        (36, "context[1].text", "item 'bad-context': missing required field 'text'"),
        (
            37,
            None,
            "item 'asserts-nothing': an assert item needs at least one of must_contain, must_not_contain, "
            "must_not_match",
        ),
    }


def test_yaml_top_level_syntax_and_duplicate_key_problems(tmp_path: Path) -> None:
    bad_top = write(tmp_path, "top.yaml", "itmes: []\n")
    messages = [str(p) for p in problems_of(bad_top)]
    assert f"{bad_top}:1 [itmes]: unknown top-level key 'itmes' (did you mean 'items'?)" in messages
    assert any("missing 'items:'" in m for m in messages)
    syntax = problems_of(write(tmp_path, "syntax.yaml", "items:\n  - item_id: [unclosed\n    intent: x\n"))
    assert len(syntax) == 1 and syntax[0].message.startswith("invalid YAML") and syntax[0].line == 3
    twice = SMALL.replace(
        "    intent: status\n    kind: exact", "    intent: status\n    intent: other\n    kind: exact"
    )
    dup = problems_of(write(tmp_path, "dup.yaml", twice))
    assert [(p.line, p.field) for p in dup] == [(4, "intent")]
    assert problems_of(write(tmp_path, "empty.yaml", "items: []\n"))[0].message == "the file holds no items"
    with pytest.raises(UserError, match=r"\.yaml, \.yml or \.csv"):
        load_items(write(tmp_path, "items.json", "[]"))


CSV_OK = """\
item_id,intent,kind,user_message,reference,must_contain,must_not_contain,must_not_match
unknown-1,unknown_parcel,assert,Where is KP-9999?,I cannot find KP-9999.,KP-9999; cannot find|not found,\
in transit;expected on,\\d{4}-\\d{2}-\\d{2}
readback-1,status_readback,exact,"Only the status,
please",out for delivery,,,
"""


def test_csv_groups_split_on_semicolons_and_bars(tmp_path: Path) -> None:
    golden = load_items(write(tmp_path, "ok.csv", CSV_OK))
    unknown, readback = golden.items
    assert unknown.must_contain == ["KP-9999", "cannot find|not found"]
    assert unknown.must_not_contain == ["in transit", "expected on"]
    assert unknown.must_not_match == r"\d{4}-\d{2}-\d{2}"
    assert readback.user_message == "Only the status,\nplease" and readback.must_not_match is None


def test_csv_problems_name_the_row_line(tmp_path: Path) -> None:
    text = CSV_OK + (
        "bad-kind,status,exakt,hi,x,,,\n"
        "\n"
        "unknown-1,status,exact,hi,x,,,\n"
        'bad-regex,status,assert,hi,x,,,"[a-"\n'
        "short,status\n"
    )
    got = {(p.line, p.field, p.message.split(":")[0]) for p in problems_of(write(tmp_path, "bad.csv", text))}
    assert got == {
        (5, "kind", "item 'bad-kind'"),
        (7, "item_id", "duplicate item_id 'unknown-1' (first on line 2)"),
        (8, "must_not_match", "item 'bad-regex'"),
        (9, None, "row has 2 cells but the header has 8"),
    }
    header = problems_of(write(tmp_path, "header.csv", "item_id,intent,kind,user_mesage,reference\n"))
    assert [str(p).split(": ", 1)[1] for p in header] == [
        "unknown column 'user_mesage' (did you mean 'user_message'?)",
        "missing required column 'user_message'",
    ]
    bad_json = "item_id,intent,kind,user_message,reference,context\nc,s,exact,hi,x,[{oops\n"
    assert problems_of(write(tmp_path, "ctx.csv", bad_json))[0].field == "context"


# --- scoring


READBACK = GoldenItem(
    item_id="rb",
    intent="status_readback",
    kind="exact",
    user_message="Only the status of KP-1005.",
    reference="out for delivery",
    must_contain=["out for delivery"],
)


def test_exact_items_are_judged_by_exact_match_only() -> None:
    good = score_reply(READBACK, ["Out for delivery."])
    assert good.passed and good.exact_match and good.failures == []
    wrapped = score_reply(READBACK, ["The current status of KP-1005 is: out for delivery."])
    assert not wrapped.passed and not wrapped.exact_match
    assert wrapped.assertions_passed  # the phrase is there, but the item asked for nothing else
    assert wrapped.token_f1 == pytest.approx(6 / 11)  # the seed's false pass of a 0.5 F1 gate
    assert wrapped.evidence == ["The current status of KP-1005 is: out for delivery."]


def test_assert_items_are_judged_by_assertions_whatever_the_similarity() -> None:
    item = GoldenItem(
        item_id="u",
        intent="unknown",
        kind="assert",
        user_message="Where is KP-9999?",
        reference="I cannot find a parcel with the number KP-9999.",
        must_contain=["KP-9999", "cannot find|couldn't find"],
        must_not_match=r"\d{4}-\d{2}-\d{2}",
    )
    paraphrase = score_reply(item, ["Sorry!", "I couldn't find any parcel called KP-9999 — please check it."])
    assert paraphrase.passed and paraphrase.token_f1 is not None and paraphrase.token_f1 < 0.5
    assert paraphrase.reply == "Sorry!\nI couldn't find any parcel called KP-9999 — please check it."
    close = score_reply(item, ["I cannot find a parcel with the number KP-9999, due 2026-09-15."])
    assert not close.passed and close.rouge_l is not None and close.rouge_l > 0.8


def test_samples_pass_only_if_every_sample_passes() -> None:
    ok, bad = score_reply(READBACK, ["out for delivery"]), score_reply(READBACK, ["in transit"])
    boom = error_sample(2, RuntimeError("down"))
    assert aggregate_samples(READBACK, 0, [ok, ok]).verdict == "pass"
    mixed = aggregate_samples(READBACK, 0, [ok, bad.model_copy(update={"sample": 1})])
    assert (mixed.verdict, mixed.sample_pass_rate, mixed.exact_match) == ("fail", 0.5, 0.5)
    assert aggregate_samples(READBACK, 0, [ok, boom]).verdict == "error"
    failed = aggregate_samples(READBACK, 0, [bad, boom])
    assert (failed.verdict, failed.n_fail, failed.n_error, failed.sample_pass_rate) == ("fail", 1, 1, 0.0)
    errored = aggregate_samples(READBACK, 0, [boom])
    assert errored.verdict == "error" and errored.token_f1 is None and errored.sample_pass_rate is None


def test_gate_parsing() -> None:
    assert parse_gate("rouge_l:0.3") == Gate(metric="rouge_l", threshold=0.3)
    assert str(parse_gate("token_f1:0.5")) == "token_f1:0.5"
    for bad in ("bleu:0.5", "token_f1:high", "token_f1:1.5"):
        with pytest.raises(UserError, match="--gate"):
            parse_gate(bad)


# --- runner


def test_run_writes_manifest_and_results(shipped: tuple[GoldenRun, GoldenRun]) -> None:
    a, _ = shipped
    manifest = json.loads((a.path / "manifest.json").read_text())
    assert manifest["kind"] == "golden" and manifest["status"] == "complete"
    assert manifest["items_sha256"] == "sha256:" + hashlib.sha256(PARCELS.read_bytes()).hexdigest()
    assert (manifest["bot"], manifest["samples"], manifest["n_items"]) == (BOT_A, 1, 48)
    assert manifest["ended_at"] >= manifest["started_at"]
    lines = (a.path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 48
    first = json.loads(lines[0])
    assert {"item_id", "verdict", "samples", "token_f1", "failures", "evidence"} <= first.keys()
    assert load_run(a.path).results == a.results


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
    result = run(items, "tests.test_golden:echo_bot", tmp_path / "runs", "ctx", samples=2)
    follow_up, alone = result.results
    assert follow_up.verdict == alone.verdict == "pass"
    assert follow_up.samples[0].context_replies == ["seen 1: hello", "seen 2: KP-1001 please"]


def test_async_factory_and_reply_objects_with_messages(tmp_path: Path) -> None:
    result = run(write(tmp_path, "s.yaml", SMALL), "tests.test_golden:multi_bot", tmp_path / "r", "multi")
    transit, flaky = result.results
    assert transit.samples[0].messages == ["in transit", "(you asked: Only the status of KP-1001.)"]
    assert transit.verdict == "fail" and flaky.verdict == "pass"


def test_a_bot_that_raises_is_an_error_never_a_pass_or_fail(tmp_path: Path) -> None:
    items = write(
        tmp_path,
        "f.yaml",
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
""",
    )
    result = run(items, "tests.test_golden:fragile_bot", tmp_path / "runs", "fragile")
    verdicts = {r.item_id: r.verdict for r in result.results}
    assert verdicts == {"transit": "pass", "flaky": "pass", "boom": "error", "wrong-type": "error"}
    boom = next(r for r in result.results if r.item_id == "boom")
    error = boom.samples[0].error
    assert error is not None and (error.source, error.kind, error.message) == (
        "bot",
        "bot_exception",
        "RuntimeError: backend down",
    )
    assert boom.samples[0].passed is None and boom.token_f1 is None
    wrong = next(r for r in result.results if r.item_id == "wrong-type").samples[0].error
    assert wrong is not None and wrong.kind == "invalid_reply" and "int" in wrong.message
    report = build_report(result)
    assert (report.passed, report.failed, report.errors, report.pass_rate.n) == (2, 0, 2, 2)
    assert [row.errors for row in report.intents] == [1, 1]


def test_samples_keep_a_per_sample_pass_rate(tmp_path: Path) -> None:
    global _INSTANCES
    _INSTANCES = itertools.count()
    result = run(
        write(tmp_path, "s.yaml", SMALL),
        "tests.test_golden:flaky_bot",
        tmp_path / "r",
        "k4",
        samples=4,
        concurrency=1,
    )
    transit, flaky = result.results
    assert (transit.verdict, transit.n_pass, transit.sample_pass_rate) == ("pass", 4, 1.0)
    assert (flaky.verdict, flaky.n_pass, flaky.n_fail, flaky.sample_pass_rate) == ("fail", 2, 2, 0.5)
    report = build_report(result)
    assert (report.passed, report.sample_pass_rate.k, report.sample_pass_rate.n) == (1, 6, 8)


def test_interrupted_run_is_marked_in_the_manifest(tmp_path: Path) -> None:
    with pytest.raises(asyncio.CancelledError):
        run(write(tmp_path, "s.yaml", SMALL), "tests.test_golden:cancelling_bot", tmp_path / "r", "stop")
    assert load_run(tmp_path / "r" / "stop").manifest.status == "interrupted"


def test_bad_bot_specs_and_existing_folders_are_user_errors(tmp_path: Path) -> None:
    items = write(tmp_path, "s.yaml", SMALL)
    for spec, fragment in [
        ("examples.parcel_bot", "must look like module:factory"),
        ("no_such_module_xyz:bot", "cannot import module"),
        ("examples.parcel_bot:bot_c", "has no attribute"),
        ("examples.parcel_bot:ORDERS", "is not callable"),
    ]:
        with pytest.raises(UserError, match=fragment):
            run(items, spec, tmp_path / "runs", spec.replace(":", "-"))
    run(items, BOT_A, tmp_path / "runs", "same")
    with pytest.raises(UserError, match="already exists"):
        run(items, BOT_A, tmp_path / "runs", "same")
    with pytest.raises(UserError, match="not a run folder"):
        load_run(tmp_path)


# --- the seed's finding, on the shipped set


def test_similarity_ranks_bot_a_first_but_the_verdict_ranks_bot_b_first(
    shipped: tuple[GoldenRun, GoldenRun],
) -> None:
    a, b = (build_report(r) for r in shipped)
    assert a.exact_match.k / a.exact_match.n > b.exact_match.k / b.exact_match.n
    assert b.exact_match.k == 0
    assert a.mean_token_f1 is not None and b.mean_token_f1 is not None and a.mean_token_f1 > b.mean_token_f1
    assert a.mean_rouge_l is not None and b.mean_rouge_l is not None and a.mean_rouge_l > b.mean_rouge_l
    assert a.mean_difflib_ratio is not None and b.mean_difflib_ratio is not None
    assert a.mean_difflib_ratio > b.mean_difflib_ratio
    assert a.gate_pass.k > b.gate_pass.k
    # ... and the verdict reverses the order, by the bugs each bot has.
    assert (a.passed, a.failed, b.passed, b.failed) == (36, 12, 42, 6)
    assert {row.intent for row in a.intents if row.all_failed} == {"unknown_parcel", "third_party_address"}
    assert {row.intent for row in b.intents if row.all_failed} == {"status_readback"}
    b_rows = {row.intent: (row.passed, row.failed) for row in b.intents}
    assert b_rows["address_change"] == (2, 2)
    assert {f.item_id for f in b.failed_items} == {
        "address-change-03",
        "address-change-04",
        "readback-01",
        "readback-02",
        "readback-03",
        "readback-04",
    }


def test_gate_disagreements_and_threshold_sweep(shipped: tuple[GoldenRun, GoldenRun]) -> None:
    a, b = (build_report(r) for r in shipped)
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
    rouge_gate = build_report(shipped[1], Gate(metric="rouge_l", threshold=0.3))
    assert rouge_gate.gate_pass.k == b.sweep[2].shares["rouge_l"].k


def test_report_intervals_json_and_rendering(shipped: tuple[GoldenRun, GoldenRun]) -> None:
    report = build_report(shipped[0])
    low, high = proportion_confint(36, 48, alpha=0.05, method="wilson")
    assert (report.pass_rate.low, report.pass_rate.high) == (pytest.approx(low), pytest.approx(high))
    status = next(row for row in report.intents if row.intent == "status")
    assert status.rate.rule_of_three == pytest.approx(3 / 12) and report.pass_rate.rule_of_three is None
    assert Rate.of(0, 0).rate is None
    assert type(report).model_validate_json(report.to_json()) == report
    buffer = io.StringIO()
    render_report(report, Console(file=buffer, width=200))
    text = buffer.getvalue()
    assert "36/48  75.0%" in text and "unknown_parcel" in text and "27 Willow Street" in text


# --- compare


def test_compare_counts_both_ways_with_mcnemar_and_flips(shipped: tuple[GoldenRun, GoldenRun]) -> None:
    comparison = compare_runs(*shipped)
    assert (comparison.both_pass, comparison.a_only, comparison.b_only, comparison.both_fail) == (
        30,
        6,
        12,
        0,
    )
    assert comparison.mcnemar_p == pytest.approx(binomtest(6, 18, 0.5).pvalue)
    assert comparison.same_items_file and comparison.n_paired == 48
    flips = {f.item_id: (f.verdict_a, f.verdict_b) for f in comparison.flipped}
    assert len(flips) == 18
    assert flips["unknown-01"] == ("fail", "pass") and flips["readback-02"] == ("pass", "fail")
    assert compare_runs(shipped[0], shipped[0]).mcnemar_p == 1.0
    buffer = io.StringIO()
    render_compare(comparison, Console(file=buffer, width=200))
    assert "McNemar exact p = 0.2379" in buffer.getvalue()


def test_compare_refuses_different_item_sets(tmp_path: Path, shipped: tuple[GoldenRun, GoldenRun]) -> None:
    small = run(write(tmp_path, "s.yaml", SMALL), BOT_A, tmp_path / "runs", "small")
    with pytest.raises(
        UserError, match=r"different items \(only in .*bot-a: address-change-01.* and 43 more"
    ):
        compare_runs(shipped[0], small)


def test_compare_leaves_out_items_that_errored(tmp_path: Path) -> None:
    items = write(tmp_path, "s.yaml", SMALL.replace("flaky question", "boom flaky question"))
    ok = run(items, BOT_A, tmp_path / "runs", "ok")
    broken = run(items, "tests.test_golden:fragile_bot", tmp_path / "runs", "broken")
    comparison = compare_runs(ok, broken)
    assert (comparison.errors, comparison.n_paired) == (1, 1)


# --- CLI handlers


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="simulator")
    register(main.add_subparsers(dest="command"))
    return main


def test_cli_run_report_and_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "runs")
    for name, bot in (("a", BOT_A), ("b", BOT_B)):
        args = parser().parse_args(
            [
                "golden",
                "run",
                str(PARCELS),
                "--bot",
                bot,
                "--out",
                out,
                "--run-id",
                name,
                "--json",
                str(tmp_path / f"{name}.json"),
            ]
        )
        assert args.handler(args) == 0
    printed = capsys.readouterr().out
    assert "36/48" in printed and "42/48" in printed and f"run folder: {tmp_path / 'runs' / 'a'}" in printed
    assert json.loads((tmp_path / "b.json").read_text())["passed"] == 42

    args = parser().parse_args(["golden", "report", str(tmp_path / "runs" / "b"), "--gate", "rouge_l:0.3"])
    assert args.handler(args) == 0
    assert "gate rouge_l ≥ 0.3" in capsys.readouterr().out

    args = parser().parse_args(
        ["golden", "compare", out + "/a", out + "/b", "--json", str(tmp_path / "cmp.json")]
    )
    assert args.handler(args) == 0
    assert "McNemar exact p" in capsys.readouterr().out
    assert json.loads((tmp_path / "cmp.json").read_text())["b_only"] == 12


def test_cli_user_mistakes_raise_user_error(tmp_path: Path) -> None:
    base = ["golden", "run", str(PARCELS), "--bot", BOT_A, "--out", str(tmp_path)]
    for extra, fragment in [
        (["--samples", "0"], "--samples"),
        (["--concurrency", "0"], "--concurrency"),
        (["--gate", "bleu:0.4"], "--gate"),
    ]:
        args = parser().parse_args(base + extra)
        with pytest.raises(UserError, match=fragment):
            args.handler(args)
    args = parser().parse_args(["golden", "run", str(tmp_path / "missing.yaml"), "--bot", BOT_A])
    with pytest.raises(UserError, match="cannot read golden items"):
        args.handler(args)
    with pytest.raises(SystemExit):
        parser().parse_args(["golden", "run", str(PARCELS)])  # --bot is required


def test_golden_commands_through_the_main_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`simulator golden ...` as a user types it, through simulator.cli.main."""
    from simulator.cli import main

    items = str(Path(__file__).resolve().parent.parent / "scenarios" / "golden" / "parcels.yaml")
    for bot, run_id in (("examples.parcel_bot:bot_a", "a"), ("examples.parcel_bot:bot_b", "b")):
        assert main(["golden", "run", items, "--bot", bot, "--out", str(tmp_path), "--run-id", run_id]) == 0
    out = capsys.readouterr().out
    assert "36/48" in out and "42/48" in out
    assert main(["golden", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "McNemar" in capsys.readouterr().out
    assert main(["golden", "run", items, "--bot", "examples.parcel_bot:nope", "--out", str(tmp_path)]) == 2
