"""The example triage bot behind HTTP (stdlib only), to try the simulator's `http` bot adapter.

Contract: `POST /chat` with JSON `{"conversation_id", "turn", "message"}` answers
`{"messages": [...], "handed_over": false, "closed": <true once the bot has given its advice>,
"state": {"triage_level": ...} or null}`. One bot per conversation_id. With `--token` (or the
environment variable BOT_TOKEN) every request needs `Authorization: Bearer <token>`, else 401.
A repeated `turn` of the same conversation (a client retry) gets the same reply, not a second bot step.

    python -m examples.http_triage_bot --host 127.0.0.1 --port 8765
"""

from __future__ import annotations

__all__ = ["TriageHandler", "main", "make_server", "serve_in_thread"]

import argparse
import hmac
import json
import os
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from examples.triage_bot import TriageBot, make_bot
from simulator.listening import exit_on_unlistenable, listening_socket

MAX_CONVERSATIONS = 10_000  # oldest conversations are forgotten beyond this, so memory stays bounded
MAX_BODY_BYTES = 1_000_000


VERSION = "http-triage-bot 1.0"


class _Conversation:
    """One conversation's bot, its lock, and its replies by turn (a retried turn gets the same reply)."""

    def __init__(self) -> None:
        self.bot: TriageBot = make_bot()
        self.lock = threading.Lock()
        self.replies: dict[int, dict[str, Any]] = {}


class _Sessions:
    """The live conversations by conversation_id, oldest forgotten first beyond MAX_CONVERSATIONS."""

    def __init__(self) -> None:
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, conversation_id: str) -> _Conversation:
        with self._lock:
            if conversation_id not in self._conversations:
                self._conversations[conversation_id] = _Conversation()
                while len(self._conversations) > MAX_CONVERSATIONS:
                    self._conversations.popitem(last=False)
            self._conversations.move_to_end(conversation_id)
            return self._conversations[conversation_id]


class TriageHandler(BaseHTTPRequestHandler):
    """Answers `POST /chat` for the triage bot; the server carries `sessions` and `token`."""

    server: _TriageServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests and demos read stdout
        return

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._reply(200, {"ok": True})
        elif self.path == "/version":  # the release, for the run's manifest (bot.version_url)
            self._reply(200, {"version": VERSION})
        else:
            self._reply(404, {"error": "not found; POST /chat"})

    def do_POST(self) -> None:
        if self.path != "/chat":
            self._reply(404, {"error": "not found; POST /chat"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the unread body would otherwise be taken for the next request
            self._reply(413, {"error": "request body too large"})
            return
        raw = self.rfile.read(length)  # read it even if we refuse: the connection is kept alive
        token = self.server.token
        if token is not None:
            given = self.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                self._reply(401, {"error": "missing or wrong bearer token"})
                return
        try:
            body = json.loads(raw or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._reply(400, {"error": "body must be JSON"})
            return
        if not isinstance(body, dict) or not isinstance(body.get("message"), str):
            self._reply(400, {"error": 'body must be {"conversation_id": str, "turn": int, "message": str}'})
            return
        conversation_id = body.get("conversation_id")
        if not isinstance(conversation_id, str) or not conversation_id:
            self._reply(400, {"error": "conversation_id must be a non-empty string"})
            return
        turn = body.get("turn")
        conversation = self.server.sessions.get(conversation_id)
        with conversation.lock:
            if isinstance(turn, int) and turn in conversation.replies:
                self._reply(200, conversation.replies[turn])
                return
            messages = conversation.bot.send(body["message"])
            state = conversation.bot.final_state()
            reply = {"messages": messages, "handed_over": False, "closed": state is not None, "state": state}
            if isinstance(turn, int):
                conversation.replies[turn] = reply
        self._reply(200, reply)


class _TriageServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, sock: socket.socket, token: str | None) -> None:
        # On the socket `simulator.listening` bound: a port already taken is said there, in one line.
        super().__init__(sock.getsockname()[:2], TriageHandler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.sessions = _Sessions()
        self.token = token


def make_server(host: str = "127.0.0.1", port: int = 8765, token: str | None = None) -> _TriageServer:
    """A ready-to-serve HTTP server for the triage bot (port 0 picks a free port); a port it cannot have is
    a UserError naming the fix (`--port`)."""
    return _TriageServer(listening_socket(host, port), token)


def serve_in_thread(port: int = 0, token: str | None = None) -> tuple[str, Callable[[], None]]:
    """Start the server on 127.0.0.1 in a background thread; return its /chat URL and a shutdown function."""
    server = make_server("127.0.0.1", port, token)
    thread = threading.Thread(target=server.serve_forever, name="http-triage-bot", daemon=True)
    thread.start()

    def shutdown() -> None:
        server.shutdown()
        server.server_close()
        thread.join()

    host, real_port = server.server_address[:2]
    return f"http://{host!s}:{real_port}/chat", shutdown


def main(argv: list[str] | None = None) -> None:
    """Command line: serve the triage bot until Ctrl-C."""
    parser = argparse.ArgumentParser(description="The example triage bot over HTTP (POST /chat).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--token", default=os.environ.get("BOT_TOKEN"), help="bearer token (default: $BOT_TOKEN)"
    )
    args = parser.parse_args(argv)
    with exit_on_unlistenable():  # a port already taken: one line with the fix, exit code 2
        server = make_server(args.host, args.port, args.token or None)
    host, port = server.server_address[:2]
    auth = " (bearer token required)" if args.token else ""
    print(f"Triage bot listening on http://{host!s}:{port}/chat{auth}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
