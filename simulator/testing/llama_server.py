"""A real OpenAI-compatible server for tests: llama-cpp-python's server on a free 127.0.0.1 port."""

from __future__ import annotations

__all__ = ["LlamaServer"]

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

from simulator.tls import shared_ssl_context


class LlamaServerError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class LlamaServer:
    """`python -m llama_cpp.server` (through simulator.providers.llama_server) as a subprocess: start, wait until `/v1/models` answers, stop.

    Use as a context manager; `base_url` is what a suite's `providers.openai.base_url` takes. The model
    is served under `alias` (any model name in a request reaches it: the server has only one).
    """

    def __init__(
        self,
        model_path: Path,
        *,
        alias: str = "smollm2",
        host: str = "127.0.0.1",
        n_ctx: int = 8192,
        startup_timeout_s: float = 120.0,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.model_path = Path(model_path)
        self.alias = alias
        self.host = host
        self.n_ctx = n_ctx
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = extra_args
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        handle, log = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        os.close(handle)
        self._log = Path(log)

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LlamaServerError("the server is not running; call start() first")
        return f"http://{self.host}:{self.port}/v1"

    def log_text(self) -> str:
        """Everything the server wrote (stdout and stderr), including one access-log line per request."""
        try:
            return self._log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        """The last lines the server wrote, for error messages."""
        return "\n".join(self.log_text().splitlines()[-lines:])

    def start(self) -> LlamaServer:
        """Start the server and block until it answers; a taken port (a race with another process) is
        retried on a new one."""
        if not self.model_path.is_file():
            raise LlamaServerError(f"no model file at {self.model_path}")
        for _ in range(3):
            self.port = _free_port(self.host)
            command = [
                sys.executable,
                "-m",
                "simulator.providers.llama_server",  # llama_cpp.server, with the provider's safe buffers
                "--model",
                str(self.model_path),
                "--model_alias",
                self.alias,
                "--host",
                self.host,
                "--port",
                str(self.port),
                "--n_ctx",
                str(self.n_ctx),
                *self.extra_args,
            ]
            with self._log.open("ab") as log:
                self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            if self._wait_ready():
                return self
            self.stop()
            if "address already in use" not in self.log_tail().lower():
                break
        raise LlamaServerError(f"llama_cpp.server did not start; its log ends with:\n{self.log_tail()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.startup_timeout_s
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            with contextlib.suppress(httpx.HTTPError):
                if (
                    httpx.get(f"{self.base_url}/models", timeout=2.0, verify=shared_ssl_context()).status_code
                    == 200
                ):
                    return True
            time.sleep(0.2)
        return False

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s) and reap it."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        self._log.unlink(missing_ok=True)
