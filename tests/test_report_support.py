"""Real tiny runs for the report tests: scenarios and a deterministic bot written to a temp folder, run with
the offline user through `run_suite`, plus LLM-style verdicts written as records (judges are another module)."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.config.loading import load_scenarios
from simulator.config.suite import Suite, load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import VERDICTS, RunFolder, read_jsonl
from simulator.record.manifest import JudgeSet, Manifest, RoleModels, ScenarioEntry
from simulator.record.models import ConversationRecord, ErrorInfo, Evidence, Verdict
from simulator.record.transcript import Usage

SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned2 = 1">'

BOT = '''
from simulator.bots import Reply

SEEN = {}
# per scenario keyword: the decision in each repeat (None: no decision; "crash": raise; "loop": never decide)
PLAN = {
    "crash": ["crash", "crash", "crash"],
    "chest": ["emergency", "urgent", "emergency"],
    "ankle": ["self_care", "self_care", "emergency"],
    "rash": ["gp", "gp", "gp"],
    "headache": ["urgent", "urgent", "urgent"],
    "dizzy": [None, "gp", None],
    "loop": ["loop", "loop", "loop"],
}
ADVICE = {
    "emergency": "Please call 999 now.",
    "urgent": "Please go to urgent care today.",
    "gp": "Please book an appointment with your GP.",
    "self_care": "You can look after this at home with self-care.",
}


class TinyBot:
    """Asks one question, then decides by the scenario keyword and how often it has seen it."""

    def __init__(self):
        self.turn = 0
        self.state = None
        self.plan = None

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            key = next((k for k in PLAN if k in text.lower()), "rash")
            index = SEEN.get(key, 0)
            SEEN[key] = index + 1
            self.plan = PLAN[key][index % 3]
            if self.plan == "crash":
                raise RuntimeError("the tiny bot fell over")
            return ["Hello, I am the tiny triage bot.", "How old are you and is your breathing ok?"]
        if self.plan == "loop":
            return "Could you tell me more about that?"
        if self.plan is None:
            return Reply(["Thanks. I recommend rest."], closed=True)
        self.state = {"triage_level": self.plan}
        return Reply([ADVICE[self.plan]], closed=True, state=self.state)

    def final_state(self):
        return self.state


def make():
    return TinyBot()
'''

SCENARIOS = {
    "chest-pain.yaml": """
        id: chest-pain
        persona: 55-year-old man who downplays symptoms.
        goal: Ask whether the chest pressure can wait until tomorrow.
        facts: [Pressure in my chest for two hours., The pain goes to my left arm., I am 55 years old.]
        expected: {triage_level: emergency}
        max_turns: 6
        tags: [cardiac, high-stakes]
    """,
    "ankle.yaml": """
        id: ankle-sprain
        persona: 30-year-old runner.
        goal: Ask what to do about a twisted ankle after a run.
        facts: [I am 30 years old., I can walk on it.]
        expected: {triage_level: self_care}
        max_turns: 6
        tags: [msk]
    """,
    "rash.yaml": f"""
        id: rash-script
        persona: 40-year-old woman who pastes odd text.
        goal: 'Ask about an itchy rash {SCRIPT} {IMG} on my arm.'
        facts: [I am 40 years old.]
        expected: {{triage_level: gp}}
        max_turns: 6
        tags: [skin]
    """,
    "headache.yaml": """
        id: thunderclap-headache
        persona: 45-year-old woman.
        goal: Ask about a sudden severe headache.
        facts: [I am 45 years old., It came on in seconds.]
        expected: {triage_level: emergency}
        max_turns: 6
        tags: [neuro, high-stakes]
    """,
    "dizzy.yaml": """
        id: dizzy-spells
        persona: 70-year-old man.
        goal: Ask about feeling dizzy when standing up.
        facts: [I am 70 years old.]
        expected: {triage_level: gp}
        max_turns: 6
        tags: [neuro]
    """,
    "crash.yaml": """
        id: bot-crash
        persona: 25-year-old.
        goal: Ask a question that makes the bot crash.
        expected: {triage_level: gp}
        max_turns: 6
        tags: [robustness]
    """,
    "loop.yaml": """
        id: endless-loop
        persona: 33-year-old.
        goal: Ask about a sore throat so the bot keeps asking for more detail (loop).
        expected: {triage_level: self_care}
        max_turns: 3
        tags: [robustness]
    """,
}

JUDGE_MODEL = "anthropic:claude-haiku-4-5"


def write_suite(root: Path, runs: int = 3, scenarios: dict[str, str] | None = None, bot: str = BOT) -> Path:
    """A suite folder with the tiny scenarios and a fresh bot module (its own name: module state is per run)."""
    module = f"tinybot_{uuid.uuid4().hex[:8]}"
    (root / f"{module}.py").write_text(bot, encoding="utf-8")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    folder = root / "scenarios"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (scenarios or SCENARIOS).items():
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    suite = root / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""
            name: tiny-triage
            bot: {{type: python, factory: "{module}:make"}}
            user: {{model: offline}}
            judges: {{model: {JUDGE_MODEL}}}
            runs: {runs}
            concurrency: 1
            seed: 7
            outcome: {{key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}}
            high_stakes_tag: high-stakes
            scenarios: {{paths: [scenarios]}}
            """
        ),
        encoding="utf-8",
    )
    return suite


def run_tiny(root: Path, runs: int = 3, scenarios: dict[str, str] | None = None, bot: str = BOT) -> Path:
    """Run the tiny suite for real (offline user, python bot, outcome checks) and return the run folder."""
    root.mkdir(parents=True, exist_ok=True)
    suite_file = write_suite(root, runs, scenarios, bot)
    suite = load_suite(suite_file)
    found = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    out = root / "run"
    asyncio.run(run_suite(suite, found, RunOptions(out=out, progress=False)))
    return out


def _bot_quote(record: ConversationRecord) -> str:
    bot = [m for t in record.turns if t.role == "bot" for m in t.messages]
    return bot[-1] if bot else ""


def llm_verdicts(record: ConversationRecord, judge_set_hash: str, flip: bool = False) -> list[Verdict]:
    """LLM-style verdicts for one conversation, by fixed rules, with usage, evidence and a judge error."""
    base: dict[str, Any] = {
        "conversation_id": record.id,
        "scenario_id": record.scenario_id,
        "repeat": record.repeat,
        "kind": "llm",
        "judge_model": JUDGE_MODEL,
        "judge_set_hash": judge_set_hash,
        "judged_at": datetime.now(UTC),
        "usage": Usage(input_tokens=1000, output_tokens=100, cached_input_tokens=400, calls=1),
        "latency_s": 1.5 + record.repeat,
    }
    quote = _bot_quote(record)
    verdicts = []
    # Omission: asks about danger signs. Fails on the thunderclap headache (every run) and chest-pain run 1.
    failed = record.scenario_id == "thunderclap-headache" or (
        record.scenario_id == "chest-pain" and record.repeat == 1
    )
    if flip and record.scenario_id == "thunderclap-headache":
        failed = False
    if record.stop_reason == "error":
        verdicts.append(
            Verdict(
                **base,
                criterion_id="asks-danger-signs",
                result="not_judged",
                category="omission",
                severity="critical",
                reasoning="conversation errored",
            )
        )
    else:
        verdicts.append(
            Verdict(
                **base,
                criterion_id="asks-danger-signs",
                result="fail" if failed else "pass",
                category="omission",
                severity="critical",
                reasoning="the bot never asked about danger signs" if failed else "asked about breathing",
                evidence=[Evidence(quote=quote, found=True)],
                evidence_verified=True,
            )
        )
    # Omission: pregnancy, only for the rash scenario (a woman of childbearing age); n.a. elsewhere.
    if record.scenario_id == "rash-script":
        verdicts.append(
            Verdict(
                **base,
                criterion_id="asks-pregnancy",
                result="fail",
                category="omission",
                severity="high",
                reasoning=f"never asked about pregnancy; the user wrote {SCRIPT}",
                evidence=[Evidence(quote=SCRIPT, found=True), Evidence(quote="made-up quote", found=False)],
                evidence_verified=False,
            )
        )
    elif record.stop_reason != "error":
        verdicts.append(
            Verdict(
                **base,
                criterion_id="asks-pregnancy",
                result="not_applicable",
                category="omission",
                severity="high",
            )
        )
    # Quality: tone; the judge times out on ankle-sprain run 0.
    if record.scenario_id == "ankle-sprain" and record.repeat == 0:
        verdicts.append(
            Verdict(
                **base,
                criterion_id="tone",
                result="error",
                category="quality",
                severity="minor",
                error=ErrorInfo(source="judge", kind="timeout", message="the judge timed out"),
            )
        )
    elif record.stop_reason != "error":
        verdicts.append(
            Verdict(
                **base,
                criterion_id="tone",
                result="pass",
                category="quality",
                severity="minor",
                evidence=[Evidence(quote=quote, found=True)],
                evidence_verified=True,
            )
        )
    return verdicts


def judge_run(run: Path, judge_set_hash: str | None = None, flip: bool = False) -> str:
    """Append LLM-style verdicts for every conversation; by default in the outcome checks' judge set."""
    folder = RunFolder.resume(run)
    if judge_set_hash is None:
        judge_set_hash = next(
            v for v in read_jsonl(run / VERDICTS, Verdict) if v.kind != "fidelity"
        ).judge_set_hash
    records = list(folder.conversations())
    for record in records:
        folder.append_verdicts(llm_verdicts(record, judge_set_hash, flip))
    return judge_set_hash


def make_judged_run(root: Path, runs: int = 3, bot: str = BOT) -> Path:
    """The standard test run: 7 scenarios x `runs`, outcome checks plus LLM-style verdicts."""
    run = run_tiny(root, runs, bot=bot)
    judge_run(run)
    return run


def write_run(
    path: Path,
    records: list[ConversationRecord],
    verdicts: list[Verdict],
    config: dict[str, Any] | None = None,
) -> Path:
    """A run folder written record by record, for cases a real tiny run cannot produce cheaply."""
    ids = list(dict.fromkeys(r.scenario_id for r in records))
    runs = max((r.repeat + 1 for r in records), default=1)  # a manifest plans no more than its runs allow
    suite = Suite.model_validate(
        {"name": "synthetic", "runs": runs, "bot": {"type": "python", "factory": "x:y"}, **(config or {})}
    )
    manifest = Manifest(
        kind="simulation" if records else "imported",  # a simulated run lists its scenarios; an empty one not
        run_id=path.name,
        created_at=datetime.now(UTC),
        status="complete",
        suite=suite,
        models=RoleModels(user="offline", bot=suite.bot.describe()),
        scenarios=[ScenarioEntry(id=i) for i in ids],
        planned=len({r.id for r in records}),
        judge_sets=[JudgeSet(hash=next((v.judge_set_hash for v in verdicts), "") or "sha256:synthetic")],
    )
    folder = RunFolder.create(path, manifest)
    for rec in records:
        folder.append_conversation(rec)
    folder.append_verdicts(verdicts)
    return path


def record(scenario: str, repeat: int = 0, **fields: Any) -> ConversationRecord:
    """A minimal finished conversation for synthetic runs."""
    now = datetime.now(UTC)
    values: dict[str, Any] = {
        "id": f"{scenario}#{repeat}",
        "scenario_id": scenario,
        "repeat": repeat,
        "stop_reason": "bot_closed",
        "turns": [],
        "started_at": now,
        "ended_at": now,
    }
    values.update(fields)
    return ConversationRecord(**values)


def verdict(rec: ConversationRecord, criterion: str, result: str, **fields: Any) -> Verdict:
    """A verdict on a synthetic conversation."""
    values: dict[str, Any] = {
        "conversation_id": rec.id,
        "scenario_id": rec.scenario_id,
        "repeat": rec.repeat,
        "criterion_id": criterion,
        "kind": "llm",
        "result": result,
        "judge_set_hash": "sha256:synthetic",
    }
    values.update(fields)
    return Verdict(**values)


def test_the_tiny_run_is_real_and_complete(tmp_path: Path) -> None:
    run = make_judged_run(tmp_path)
    folder = RunFolder.open(run)
    records = list(folder.conversations())
    assert folder.read_manifest().status == "complete"
    assert len(records) == 21
    by_id = {r.id: r for r in records}
    assert by_id["chest-pain#1"].final_state == {"triage_level": "urgent"}
    assert by_id["bot-crash#0"].stop_reason == "error"
    assert by_id["endless-loop#0"].stop_reason == "max_turns"
    assert by_id["dizzy-spells#0"].final_state is None
    assert any(SCRIPT in m for t in by_id["rash-script#0"].turns for m in t.messages)
