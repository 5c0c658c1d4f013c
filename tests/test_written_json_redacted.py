"""What the engine writes as JSON that is no record model (`dump_line` is the gate for those) passes one gate
too, `record.redact.safe_json`: the desk's clinician queue and its draft, the collector's review queue,
quarantine and signals. Each is written here with a registered secret and a credential the engine never knew
in the places a person or a bot can put text (a reviewer's note, an exception's message, a review reason)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.collect.judging import append_review
from simulator.collect.supervise import Quarantine
from simulator.record.parts import TextPart
from simulator.record.redact import forget_secrets, register_secrets, safe_json
from simulator.record.transcript import Turn
from simulator.serve.pages_confirm import QUEUE_FILE, confirm_failure
from tests.test_report_support import record

SECRET = "desk-token-Kx93-quite-long"
API_KEY = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0" * 2  # a well-known format, never registered
SAID = [SECRET, base64.b64encode(SECRET.encode()).decode(), API_KEY]


@pytest.fixture(autouse=True)
def _secret() -> Iterator[None]:
    forget_secrets()
    register_secrets([SECRET])
    yield
    forget_secrets()


def _holds_none(text: str) -> None:
    for value in SAID:
        assert value not in text


@pytest.mark.parametrize("said", SAID, ids=["registered", "base64 of it", "an API key"])
@pytest.mark.parametrize(
    "shape",
    [
        lambda said: {"note": f"it said {said}"},
        lambda said: {"items": [{"reason": said}], "n": 3},
        lambda said: {said: "a key holding it"},
    ],
    ids=["a value", "nested in a list", "a key"],
)
def test_safe_json_writes_no_secret_and_changes_nothing_else(said: str, shape: Any) -> None:
    text = safe_json(shape(said), ensure_ascii=False)
    _holds_none(text)
    json.loads(text)  # still JSON
    clean = {"note": "nothing to hide", "n": [1, 2.5, None, True]}
    assert safe_json(clean, separators=(",", ":")) == json.dumps(clean, separators=(",", ":"))


@pytest.mark.parametrize("said", SAID, ids=["registered", "base64 of it", "an API key"])
def test_the_collectors_quarantine_and_review_queue_are_written_redacted(tmp_path: Path, said: str) -> None:
    Quarantine(tmp_path).keep("trace-1", [], RuntimeError(f"the bot answered {said}"))
    append_review(tmp_path, [{"conversation": "c#0", "reason": f"the bot quoted {said}"}])
    for written in tmp_path.iterdir():
        _holds_none(written.read_text(encoding="utf-8"))


@pytest.mark.parametrize("said", SAID, ids=["registered", "base64 of it", "an API key"])
def test_a_confirmed_failure_writes_its_draft_and_queue_line_redacted(tmp_path: Path, said: str) -> None:
    """The run was written before the desk knew this secret (its token is registered when it starts): the
    draft is made from the record redacted again, and the reviewer's note is redacted."""
    turns = [
        Turn(
            index=0,
            role="user",
            parts=[TextPart(text="my key is " + said)],
            started_at=record("s").started_at,
        ),
        Turn(index=0, role="bot", parts=[TextPart(text="noted: " + said)], started_at=record("s").started_at),
    ]
    draft = confirm_failure(
        record("s", turns=turns), "run-1", tmp_path / "scenarios", tmp_path / "desk", "dr-a", f"see {said}"
    )
    _holds_none(draft.read_text(encoding="utf-8"))
    _holds_none((tmp_path / "desk" / QUEUE_FILE).read_text(encoding="utf-8"))


# Files written with json.dumps that hold no text a bot, a model or a person said, each with why.
_PLAIN_JSON_WRITES = {
    "simulator/engine/local_workers.py": "the parent's record of its workers: shard ids and folders",
    "simulator/collect/alerts.py": "the names of the alerts firing, from the suite",
    "simulator/testing/fake_llm.py": "the fake provider's request log, a test tool's own file",
    "simulator/plugin.py": "the pytest plugin's claim file: its failure text is redacted before (plugin.py)",
}


def test_json_written_to_a_file_passes_the_gate_or_is_known_to_hold_no_said_text() -> None:
    root = Path(__file__).resolve().parents[1]
    unknown = []
    for path in sorted((root / "simulator").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "json.dumps(" in line and "write" in line and name not in _PLAIN_JSON_WRITES:
                unknown.append(f"{name}:{number}: {line.strip()}")
    assert not unknown, "write JSON through record.redact.safe_json (or say here why not):\n" + "\n".join(
        unknown
    )
