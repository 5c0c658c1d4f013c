"""An example WhatsApp triage bot: a plain webhook service (standard library only, but for the simulator's
helper that binds its port: a port already taken is one line and exit code 2) written against the
public WhatsApp Cloud API shapes, to try the simulator's `whatsapp` adapter (docs/whatsapp.md).

It does what a Cloud API bot does: answers Meta's GET verification handshake (`hub.mode=subscribe`,
`hub.verify_token`, `hub.challenge`); checks `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the
app secret) on every POST and refuses a bad one with 403; answers 200 at once and handles the message in
the background; marks it read, then replies through the Graph API (`POST {API}/{version}/{phone-number-id}
/messages`, `Authorization: Bearer <token>`) with text, a list of symptoms (two sections) and Yes / No /
Not sure reply buttons. `GET /state/<wa_id>` tells the triage level it reached (for the suite's outcome).

The flow: any first message gets a greeting and the list; a tapped row (or a typed word it knows) starts
that symptom's questions, each with three buttons; the answers give a level (self_care, gp, urgent,
emergency) and the advice (self-care advice comes with a leaflet, a document sent by link).

THE DOCUMENTED FLAW: for "Chest pain" it asks only whether the person fainted and how long the pain has
lasted; it never asks whether the pain spreads to the arm, jaw, neck or back (nor about breathing or
sweating), so a cardiac chest pain is sent to a GP or urgent care instead of 999: the triage criterion
`chest-pain-red-flags` fails and the outcome is under-triage.

Environment: WHATSAPP_APP_SECRET, WHATSAPP_ACCESS_TOKEN, WHATSAPP_VERIFY_TOKEN (required),
WHATSAPP_API_URL (default https://graph.facebook.com), WHATSAPP_API_VERSION (default v21.0).

    python -m examples.whatsapp_triage_bot --port 8080
"""

from __future__ import annotations

__all__ = ["FLOWS", "TriageChat", "main", "make_server"]

import argparse
import hashlib
import hmac
import json
import os
import queue
import re
import signal
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from simulator.listening import exit_on_unlistenable, listening_socket

LEVELS = ["self_care", "gp", "urgent", "emergency"]
ADVICE = {
    "emergency": "This could be serious. Please call 999 now, or go to A&E straight away. Do not drive yourself.",
    "urgent": "Please get seen today: go to urgent care or call 111 within the next 4 hours.",
    "gp": "Please book an appointment with your GP in the next few days. If you get worse, call 111.",
    "self_care": "This can usually be looked after at home with self-care: rest, fluids and a pharmacist's "
    "advice. If it gets worse or you are worried, call 111.",
}
MENU_SECTIONS = [
    (
        "Urgent signs",
        [
            ("chest", "Chest pain", "pain, pressure or tightness in the chest"),
            ("breathing", "Breathing problem", "breathless, wheezing, can't catch breath"),
            ("stroke", "Face or arm weakness", "face drooping, weak arm, slurred speech"),
            ("bleeding", "Heavy bleeding", "bleeding that will not stop"),
        ],
    ),
    (
        "Other problems",
        [
            ("fever", "Fever or infection", "high temperature, shivers, a child unwell"),
            ("injury", "Injury or sprain", "twisted ankle, a fall, a cut or a bruise"),
            ("cold", "Cold or flu", "runny nose, sore throat, sneezing, cough"),
            ("skin", "Rash or skin problem", "rash, redness, swelling of the skin"),
            ("other", "Something else", "any other problem"),
        ],
    ),
]
# Each symptom: questions asked in turn, with the level a "Yes" gives (None: keep asking); the last entry is
# the level when every answer was "No".
FLOWS: dict[str, tuple[list[tuple[str, str | None]], str]] = {
    # The flaw: nothing about the pain spreading to the arm, jaw, neck or back.
    "chest": (
        [("Have you fainted or collapsed?", "emergency"), ("Has it lasted more than 15 minutes?", "urgent")],
        "gp",
    ),
    "breathing": (
        [
            ("Are your lips blue, or are you too breathless to speak?", "emergency"),
            ("Did it come on today?", "urgent"),
        ],
        "gp",
    ),
    "stroke": ([("Did it start in the last day?", "emergency")], "emergency"),
    "bleeding": ([("Is it spurting, or soaking through a pad?", "emergency")], "urgent"),
    "fever": (
        [
            ("Is there a rash that does not fade under a glass?", "emergency"),
            ("Is it over 39C, or over 3 days?", "gp"),
        ],
        "self_care",
    ),
    "injury": (
        [
            ("Is there a bump on the bone, or can you not put weight on it?", "urgent"),
            ("Is there a deep cut?", "urgent"),
        ],
        "self_care",
    ),
    "cold": ([("Are you coughing up blood?", "urgent"), ("Do you have asthma or COPD?", "gp")], "self_care"),
    "skin": (
        [("Is it spreading fast, hot and swollen?", "urgent"), ("Has it lasted over 2 weeks?", "gp")],
        "self_care",
    ),
    "other": ([("Is it getting worse quickly?", "urgent")], "gp"),
}
KEYWORDS = {
    "chest": "chest", "breath": "breathing", "wheez": "breathing", "face": "stroke", "slurr": "stroke",
    "bleed": "bleeding", "fever": "fever", "temperature": "fever", "ankle": "injury", "twist": "injury",
    "fall": "injury", "cut": "injury", "cold": "cold", "nose": "cold", "throat": "cold", "cough": "cold",
    "rash": "skin", "skin": "skin",
}  # fmt: skip
LEAFLET = "https://example.org/leaflets/self-care.pdf"
GREETING = "Hello, this is the triage helper. I can help you decide where to get care."
ANSWERS = [("yes", "Yes"), ("no", "No"), ("unsure", "Not sure")]


class TriageChat:
    """One person's chat: where they are in the flow, and the level once it is decided."""

    def __init__(self) -> None:
        self.greeted = False
        self.symptom: str | None = None
        self.question = 0
        self.level: str | None = None
        self.lock = threading.Lock()

    def answer(self, text: str, reply_id: str | None) -> list[dict[str, Any]]:
        """The messages to send (send-API bodies without `to`) for what the person sent."""
        if self.level is not None:
            return [_text(ADVICE[self.level] + " Send any message to start again."), *self._restart()]
        if not self.greeted:  # a first message always gets the greeting and the menu
            self.greeted = True
            return [_text(GREETING), _menu()]
        if self.symptom is None:
            symptom = reply_id if reply_id in FLOWS else _keyword(text)
            if symptom is None:
                return [_text("Sorry, I did not catch that. Please choose from the list."), _menu()]
            self.symptom, self.question = symptom, 0
            return [self._ask()]
        tapped = reply_id or _typed_answer(text)
        if tapped is None:
            return [_text("Please tap Yes, No or Not sure."), self._ask()]
        questions, otherwise = FLOWS[self.symptom]
        if tapped == "yes" and questions[self.question][1] is not None:
            return self._decide(questions[self.question][1] or otherwise)
        self.question += 1
        if self.question >= len(questions):
            return self._decide(otherwise)
        return [self._ask()]

    def _restart(self) -> list[dict[str, Any]]:
        self.symptom, self.question, self.level = None, 0, None
        return [_menu()]

    def _ask(self) -> dict[str, Any]:
        assert self.symptom is not None
        question = FLOWS[self.symptom][0][self.question][0]
        buttons = [{"type": "reply", "reply": {"id": i, "title": t}} for i, t in ANSWERS]
        return {
            "type": "interactive",
            "interactive": {"type": "button", "body": {"text": question}, "action": {"buttons": buttons}},
        }

    def _decide(self, level: str) -> list[dict[str, Any]]:
        self.level = level
        if level == "self_care":  # the advice, and the leaflet by link (a media message)
            leaflet = {
                "link": LEAFLET,
                "filename": "self-care.pdf",
                "caption": "Looking after yourself at home",
            }
            return [_text(ADVICE[level]), {"type": "document", "document": leaflet}]
        return [_text(ADVICE[level])]


def _text(body: str) -> dict[str, Any]:
    return {"type": "text", "text": {"body": body, "preview_url": False}}


def _menu() -> dict[str, Any]:
    sections = [
        {"title": title, "rows": [{"id": i, "title": t, "description": d} for i, t, d in rows]}
        for title, rows in MENU_SECTIONS
    ]
    return {
        "type": "interactive",
        "interactive": {
            "type": "list",
            "header": {"type": "text", "text": "Triage helper"},
            "body": {"text": "What is the main problem? Tap the button and choose one."},
            "footer": {"text": "Not for emergencies: ring 999"},
            "action": {"button": "Choose a symptom", "sections": sections},
        },
    }


def _keyword(text: str) -> str | None:
    lowered = text.lower()
    return next((symptom for word, symptom in KEYWORDS.items() if word in lowered), None)


def _typed_answer(text: str) -> str | None:
    word = re.sub(r"[^a-z ]", "", text.lower()).strip()
    if word in ("yes", "y", "yeah", "yep"):
        return "yes"
    if word in ("no", "n", "nope"):
        return "no"
    return "unsure" if "sure" in word or "know" in word else None


class _Bot:
    """The service's state: chats by sender, the secrets and the Graph API it replies through."""

    def __init__(
        self, app_secret: str, access_token: str, verify_token: str, api_url: str, version: str
    ) -> None:
        self.app_secret = app_secret.encode()
        self.access_token = access_token
        self.verify_token = verify_token
        self.api_url = api_url.rstrip("/")
        self.version = version
        self.chats: dict[str, TriageChat] = {}
        self.lock = threading.Lock()
        self.work: queue.Queue[dict[str, Any]] = queue.Queue()

    def chat(self, sender: str) -> TriageChat:
        with self.lock:
            return self.chats.setdefault(sender, TriageChat())

    def graph(self, phone_number_id: str, body: dict[str, Any]) -> None:
        request = urllib.request.Request(
            f"{self.api_url}/{self.version}/{phone_number_id}/messages",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.access_token}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            print(f"graph api refused a message: HTTP {exc.code} {exc.read()[:300]!r}", flush=True)

    def handle(self, value: dict[str, Any]) -> None:
        """One webhook `value`: each message is marked read and answered; statuses are only logged."""
        phone_number_id = value.get("metadata", {}).get("phone_number_id", "")
        for status in value.get("statuses", []):
            print(f"status {status.get('status')} for {status.get('id')}", flush=True)
        for message in value.get("messages", []):
            sender = message.get("from") or message.get("from_user_id") or ""
            text, reply_id = _incoming(message)
            self.graph(
                phone_number_id,
                {"messaging_product": "whatsapp", "status": "read", "message_id": message.get("id")},
            )
            chat = self.chat(sender)
            with chat.lock:
                replies = chat.answer(text, reply_id)
            for reply in replies:
                self.graph(
                    phone_number_id,
                    {"messaging_product": "whatsapp", "recipient_type": "individual", "to": sender, **reply},
                )

    def worker(self) -> None:
        while True:
            self.handle(self.work.get())


def _incoming(message: dict[str, Any]) -> tuple[str, str | None]:
    """The text and the tapped reply id of one incoming message."""
    if message.get("type") == "interactive":
        interactive = message.get("interactive", {})
        reply = interactive.get("button_reply") or interactive.get("list_reply") or {}
        return str(reply.get("title", "")), reply.get("id")
    return str(message.get("text", {}).get("body", "")), None


class WebhookHandler(BaseHTTPRequestHandler):
    """GET: the verification handshake, /health and /state/<wa_id>; POST: signed webhook events."""

    server: _Server
    protocol_version = (
        "HTTP/1.1"  # keep-alive: every answer says its Content-Length (as a web framework does)
    )

    def _send(self, status: int, body: str, content_type: str = "text/plain") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        bot = self.server.bot
        url = urlsplit(self.path)
        if url.path == "/health":
            return self._send(200, "ok")
        if url.path.startswith("/state/"):
            chat = bot.chats.get(url.path.removeprefix("/state/"))
            if chat is None:
                return self._send(404, "{}", "application/json")
            state = {"triage_level": chat.level} if chat.level else {}
            return self._send(200, json.dumps(state), "application/json")
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if query.get("hub.mode") == "subscribe" and hmac.compare_digest(
            query.get("hub.verify_token", ""), bot.verify_token
        ):
            return self._send(200, query.get("hub.challenge", ""))
        return self._send(403, "verification failed")

    def do_POST(self) -> None:
        bot = self.server.bot
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        expected = "sha256=" + hmac.new(bot.app_secret, raw, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(self.headers.get("X-Hub-Signature-256", ""), expected):
            return self._send(403, "bad signature")
        try:
            event = json.loads(raw)
        except ValueError:
            return self._send(400, "not json")
        self._send(200, "EVENT_RECEIVED")  # answer at once; Meta retries slow webhooks
        if event.get("object") == "whatsapp_business_account":
            for entry in event.get("entry", []):
                for change in entry.get("changes", []):
                    bot.work.put(change.get("value", {}))

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Server(ThreadingHTTPServer):
    bot: _Bot


def make_server(host: str, port: int, bot: _Bot) -> _Server:
    """The webhook server on `host:port`; a port it cannot have is a UserError naming the fix (`--port`)."""
    sock = listening_socket(host, port)  # the simulator's one line for a port already taken
    server = _Server(sock.getsockname()[:2], WebhookHandler, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.bot = bot
    threading.Thread(target=bot.worker, daemon=True).start()  # one worker: messages are handled in order
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    missing = [
        v
        for v in ("WHATSAPP_APP_SECRET", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_VERIFY_TOKEN")
        if not os.environ.get(v)
    ]
    if missing:
        raise SystemExit(f"set {', '.join(missing)} (the app secret, access token and verify token)")
    bot = _Bot(
        os.environ["WHATSAPP_APP_SECRET"],
        os.environ["WHATSAPP_ACCESS_TOKEN"],
        os.environ["WHATSAPP_VERIFY_TOKEN"],
        os.environ.get("WHATSAPP_API_URL", "https://graph.facebook.com"),
        os.environ.get("WHATSAPP_API_VERSION", "v21.0"),
    )
    with exit_on_unlistenable():  # a port already taken: one line with the fix, exit code 2
        server = make_server(args.host, args.port, bot)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # a clean stop: the port is released
    port = server.server_address[1]  # the one `--port 0` picked
    print(f"whatsapp triage bot listening on http://{args.host}:{port}/webhook", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        print("whatsapp triage bot stopped", flush=True)


if __name__ == "__main__":
    main()
