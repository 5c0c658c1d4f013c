"""A voice run as readers show it: the Voice section in the terminal and HTML reports, the per-turn audio
players (the report's policy lets them load the run folder's WAV files), the desk's transcript page and its
audio route (WAV files under the run's audio/ folder only), and the voice bot's configuration errors."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from simulator.analysis.rundata import load_run
from simulator.config.suite import load_suite
from simulator.config.yamlfile import YAMLProblem
from simulator.errors import UserError
from simulator.record.parts import AudioPart
from simulator.record.transcript import Turn
from simulator.report.html import render_html
from simulator.report.model import build_report
from simulator.report.terminal import render_terminal
from simulator.voice.audio_files import AudioFiles, conversation_folder
from tests.desk_support import DeskFolders, desk_client
from tests.test_report_support import record, write_run

NOW = datetime.now(UTC)


def _voice_run(path: Path) -> Path:
    """A recorded call: the caller's opening, the bot answering into the caller's pause (a cut-off)."""
    folder = "audio/" + conversation_folder("run/chest#0/abcd")
    said = AudioPart(
        start_s=1.0,
        end_s=6.0,
        transcript="I have chest pain. It goes to my arm.",
        file=f"{folder}/00-caller.wav",
        duration_s=5.0,
    )
    heard = AudioPart(
        start_s=3.5,
        end_s=5.5,
        transcript="Does it spread anywhere?",
        file=f"{folder}/00-bot-1.wav",
        duration_s=2.0,
    )
    turns = [
        Turn(index=0, role="user", parts=[said], started_at=NOW),
        Turn(index=0, role="bot", parts=[heard], started_at=NOW),
    ]
    rec = record("chest", turns=turns, final_state={"heard": ["i have chest pain"]})
    write_run(path, [rec], [], {"bot": {"type": "voice", "url": "ws://127.0.0.1:9/ws"}})
    files = AudioFiles(path, conversation_folder("run/chest#0/abcd"))  # as the engine writes them
    assert files.write("00-caller", np.zeros(40000, dtype=np.int16)) == said.file
    assert files.write("00-bot-1", np.zeros(16000, dtype=np.int16)) == heard.file
    return path  # fmt: skip


def test_the_reports_show_the_voice_section_and_play_each_turns_audio(tmp_path: Path) -> None:
    report = build_report(load_run(_voice_run(tmp_path / "run")))
    voice = report.analysis("voice")
    assert voice is not None and voice.cut_off.k == 1
    console = Console(record=True, width=120)
    render_terminal(report, console)
    text = console.export_text()
    assert "Voice" in text and "cut the caller off" in text
    assert "the bot spoke while the caller was still to say 'It goes to my arm.'" in text
    page = render_html(report)
    root = (tmp_path / "run").resolve().as_uri()
    assert f'<audio controls preload="none" src="{root}/audio/chest_0-abcd/00-caller.wav">' in page
    assert f'src="{root}/audio/chest_0-abcd/00-bot-1.wav"' in page
    assert "media-src file:;" in page and '<section id="voice">' in page
    assert "spoken 3.5–5.5 s" in page


def test_a_text_run_keeps_its_report_policy_without_media(tmp_path: Path) -> None:
    rec = record("a", turns=[Turn(index=0, role="user", messages=["hi"], started_at=NOW)])
    page = render_html(build_report(load_run(write_run(tmp_path / "run", [rec], []))))
    assert "media-src" not in page and "<audio" not in page and '<section id="voice">' not in page


def test_the_desk_plays_a_calls_audio_from_its_run_folder_only(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _voice_run(runs / "call")
    (runs / "call" / "secret.wav").write_bytes(b"RIFF")
    client = desk_client(DeskFolders(runs, "call", "call", tmp_path / "work", tmp_path / "judges"))
    reader = client.get("/runs/call/c/chest%230")
    page = reader.text
    assert "media-src 'self'" in reader.headers["content-security-policy"]  # the players may load it
    assert '<audio controls preload="none" src="/runs/call/audio/chest_0-abcd/00-caller.wav">' in page
    wav = client.get("/runs/call/audio/chest_0-abcd/00-caller.wav")
    assert (
        wav.status_code == 200 and wav.headers["content-type"] == "audio/wav" and wav.content[:4] == b"RIFF"
    )
    for outside in ("../secret.wav", "..%2Fsecret.wav", "chest_0-abcd/../../manifest.json", "nothing.wav"):
        assert client.get(f"/runs/call/audio/{outside}").status_code >= 400, outside


@pytest.mark.parametrize(
    ("bot", "field"),
    [
        ("{type: voice, url: 'http://127.0.0.1:9/ws'}", "bot.url"),
        ("{type: voice, url: 'ws://h/ws', caller: {rate_wpm: 5}}", "bot.caller.rate_wpm"),
        ("{type: voice, url: 'ws://h/ws', caller: {barge_in: 2}}", "bot.caller.barge_in"),
        ("{type: voice, url: 'ws://h/ws', callers: {slow: {pause: 1}}}", "bot.callers.slow.pause"),
    ],
)
def test_a_voice_bot_mistake_names_its_line_and_field(tmp_path: Path, bot: str, field: str) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: s\nbot: {bot}\n", encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_suite(suite)
    [problem] = caught.value.problems
    assert problem.line == 2 and field in str(problem), str(problem)


def test_validate_names_a_missing_voice_tool_and_an_unreadable_phrases_file(
    tmp_path: Path, monkeypatch
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent("""\
        name: s
        bot: {type: voice, url: 'ws://127.0.0.1:9/ws', transcriber: {phrases: missing.txt}}
        """), encoding="utf-8")  # fmt: skip
    loaded = load_suite(suite)
    monkeypatch.setenv("PATH", str(tmp_path))  # no espeak-ng here
    checks = dict(loaded.bot.preflight_checks(loaded.resolve))
    with pytest.raises(UserError, match="apt-get install espeak-ng"):
        checks[("caller", "voice")]()
    with pytest.raises(YAMLProblem, match=r"missing\.txt"):  # validate reports it as file:line [field]
        checks[("transcriber", "phrases")]()


def test_a_gate_can_require_the_voice_rates(tmp_path: Path) -> None:
    from simulator.report.gate import evaluate_gate, gate_metrics

    run = load_run(_voice_run(tmp_path / "run"))
    assert {"voice.cut_off", "voice.talk_over", "voice.dead_air"} <= set(gate_metrics(run))
    [cut] = evaluate_gate(run, ["voice.cut_off <= 5%"]).results
    [over] = evaluate_gate(run, ["voice.talk_over <= 50%"]).results
    assert (cut.rate.k, cut.rate.n, over.rate.k) == (1, 1, 0)
    assert cut.status != "pass"
