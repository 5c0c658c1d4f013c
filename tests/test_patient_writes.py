"""A patient who writes as patients do on a messaging app (issue 39 §3, in part): several messages before the bot
answers (a `bursts` style) and a photo sent when asked about what it shows (`media` on the scenario). The
python and http adapters receive them as parts; the judge reads the photo's description as text."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.cli import main
from simulator.config.scenario import Scenario
from simulator.judging.prompt import render_transcript_block
from simulator.record.folder import RunFolder
from simulator.record.parts import MediaPart, TextPart

RASH = {
    "id": "rash-photo-1",
    "persona": "30-year-old parent, types fast on the phone.",
    "goal": "Ask about a rash on her son's legs.",
    "speaker": "parent",
    "facts": ["He has purple spots on his legs.", "He has a temperature of 39.", "He is 3 years old."],
    "media": [
        {"kind": "image", "description": "purple spots on a child's shin that do not fade under a glass",
         "topic": [rash]}
        for rash in ["rash"]
    ],
    "styles": ["bursty"],
    "expected": {"triage_level": "emergency"},
    "max_turns": 3,
}  # fmt: skip
STYLES = {"styles": {"bursty": {"description": "sends bursts", "persona": "Sends several short messages.",
                                "offline": {"bursts": True}}}}  # fmt: skip
SEEN: list[Any] = []


class PartsBot:
    """Asks one question about the rash and the temperature, then advises; keeps what it was sent."""

    def __init__(self) -> None:
        self.turn = 0

    def send(self, text: str, parts: list[Any] | None = None) -> str:
        self.turn += 1
        SEEN.append((text, parts))
        if self.turn == 1:
            return "Does he have a rash or spots, and a temperature?"
        return "Please call 999 now."


def parts_bot() -> PartsBot:
    return PartsBot()


def _suite(tmp_path: Path, bot: dict[str, Any]) -> Path:
    (tmp_path / "rash.yaml").write_text(yaml.safe_dump(RASH))
    (tmp_path / "styles.yaml").write_text(yaml.safe_dump(STYLES))
    suite = {
        "name": "writes",
        "scenarios": {"paths": ["rash.yaml"]},
        "bot": bot,
        "user": {
            "model": "offline",
            "styles": "styles.yaml",
            "vocabulary": str(Path(__file__).resolve().parent.parent / "examples" / "triage_vocabulary.yaml"),
        },
        "judges": {"paths": [], "model": None},
        "runs": 1,
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    return tmp_path / "suite.yaml"


def test_a_burst_and_a_photo_reach_a_python_bot_as_parts_and_the_judge_reads_the_photo(
    tmp_path: Path,
) -> None:
    SEEN.clear()
    suite = _suite(tmp_path, {"type": "python", "factory": "tests.test_patient_writes:parts_bot"})
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) in (0, 1)
    (record,) = list(RunFolder.open(tmp_path / "run").conversations())
    answer = record.turns[2]
    texts = [p.text for p in answer.parts if isinstance(p, TextPart)]
    assert texts == [
        "He has purple spots on his legs.",
        "He has a temperature of 39.",
    ]  # a burst, two messages
    (photo,) = [p for p in answer.parts if isinstance(p, MediaPart)]
    assert photo.kind == "image" and "do not fade" in (photo.description or "")
    text, parts = SEEN[1]
    assert text == "He has purple spots on his legs.\nHe has a temperature of 39."  # a text-only reader: all
    assert [type(p) for p in parts] == [TextPart, TextPart, MediaPart]
    assert (
        "(shows: purple spots on a child's shin that do not fade under a glass)"
        in render_transcript_block(record.turns)
    )
    fidelity = {
        v.criterion_id: v.result for v in RunFolder.open(tmp_path / "run").verdicts() if v.kind == "fidelity"
    }
    assert fidelity["fidelity.invented_facts"] == "pass" and fidelity["fidelity.role_confusion"] == "pass"


def test_an_http_bot_gets_the_turns_parts_beside_its_text(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            said = "Does he have a rash or spots, and a temperature?" if len(bodies) == 1 else "Call 999 now."
            data = json.dumps({"messages": [said]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/chat"
        suite = _suite(tmp_path, {"type": "http", "url": url})
        assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) in (0, 1)
    finally:
        server.shutdown()
        server.server_close()
    assert "parts" not in bodies[0]  # a plain message is just its text, as before
    second = bodies[1]
    assert second["message"] == "He has purple spots on his legs.\nHe has a temperature of 39."
    assert [p["type"] for p in second["parts"]] == ["text", "text", "media"]
    assert second["parts"][2]["description"].startswith("purple spots")


def test_media_must_say_what_it_holds_and_what_it_is_about() -> None:
    with pytest.raises(ValueError, match="an image needs a `description`"):
        Scenario.model_validate({**RASH, "media": [{"kind": "image", "topic": ["rash"]}]})
    with pytest.raises(ValueError, match="give the media a `topic`"):
        Scenario.model_validate({**RASH, "media": [{"kind": "audio", "transcript": "it hurts"}]})
