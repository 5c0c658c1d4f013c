"""A suite field that must be a mapping, written as a list (the `curl -H` habit) or as text: the problem
names the fix with an example, for every mapping field alike (one rule in config/yamlfile.py), and never
echoes a header's value (it may be a token)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.config.suite import load_suite
from simulator.errors import UserError

SUITE = "user: {model: offline}\njudges: {model: null}\nbot:\n"
CASES = {
    "headers as curl lines": (
        '  type: http\n  url: http://127.0.0.1:9/chat\n  headers: ["Authorization: Bearer sk-secret-123"]\n',
        "bot.headers",
        "'headers:' with '  Authorization: ...' indented on the next line",
    ),
    "headers as one-key mappings": (
        "  type: http\n  url: http://127.0.0.1:9/chat\n  headers:\n    - Authorization: Bearer sk-secret-123\n",
        "bot.headers",
        "headers: {Authorization: ...}",
    ),
    "headers as text": (
        '  type: http\n  url: http://127.0.0.1:9/chat\n  headers: "Authorization: Bearer sk-secret-123"\n',
        "bot.headers",
        "'headers:' with '  Authorization: ...' indented on the next line",
    ),
    "start env as NAME=value": (
        '  type: http\n  url: http://127.0.0.1:{port}/chat\n  start: {command: [x], env: ["PROBE_MODE=sk-secret-123"]}\n',
        "bot.start.env",
        "'env:' with '  PROBE_MODE: ...' indented on the next line",
    ),
    "tool results as a list": (
        "  type: openai_endpoint\n  url: http://127.0.0.1:9/v1\n  model: m\n  tool_results: [lookup]\n",
        "bot.tool_results",
        "tool_results: {lookup: ...}",
    ),
}


@pytest.mark.parametrize("bot, field, example", CASES.values(), ids=CASES.keys())
def test_a_mapping_field_written_otherwise_says_how_to_write_it(
    tmp_path: Path, bot: str, field: str, example: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE + bot, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_suite(path)
    rendered = caught.value.render()
    [line] = [line for line in rendered.splitlines() if f"[{field}]" in line]
    assert "should be a mapping" in line and "write it as a mapping of name to value" in line
    assert example in line
    assert "sk-secret-123" not in rendered
