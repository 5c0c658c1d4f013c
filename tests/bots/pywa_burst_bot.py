"""A WhatsApp bot on pywa 4 (async) that answers with several messages in a row, small gaps between them: the
bot the end of a turn must never cut short (docs/whatsapp.md#one-bot-turn).

Served two ways (`--serve`):
- `inline`: a custom FastAPI route (pywa's "custom server" use) checks the signature with pywa's own
  validator and awaits pywa's `webhook_update_handler`: the handlers run inside the webhook request, and the
  answer comes back after the last message;
- `background`: pywa's own FastAPI routes, which answer 200 at once and run the handlers as a background task
  (as Meta recommends): the answer comes back before the messages.

Handlers: "burst" (or a text starting with it) is answered with three messages `--gap-s` apart; "late" with
one message inside the handler and two more from a task it leaves running (a bot that sends after it has
answered); "think" with a message, then the typing indicator (pywa's `indicate_typing`) and a pause of
`--pause-s` before the answer; "pause" the same without the typing indicator; "typing" with a message, then
the typing indicator and nothing more; anything else with two messages.

Run it: `python -m tests.bots.pywa_burst_bot --port 8080 --serve inline`, configured as pywa_triage_bot is
(TRIAGE_*).
"""

from __future__ import annotations

import argparse
import asyncio
import os

import uvicorn
from fastapi import FastAPI, Request, Response
from pywa_async import WhatsApp, filters, types

from tests.bots.pywa_triage_bot import LocalGraph, whatsapp_app

BURST = ("One moment, let me look at that.", "Chest pain can be serious.", "Please call 999 now.")


THINKING = ("Let me check that for you.", "Please call 999 now.")


def _handlers(wa: WhatsApp, gap_s: float, tasks: set[asyncio.Task[None]], pause_s: float = 1.0) -> None:
    @wa.on_message(filters.text)
    async def on_text(_: WhatsApp, msg: types.Message) -> None:
        said = (msg.text or "").lower()
        if said.startswith("burst"):
            for number, text in enumerate(BURST):
                if number:
                    await asyncio.sleep(gap_s)
                await msg.reply_text(text)
        elif said.startswith(("think", "pause")):
            await msg.reply_text(THINKING[0])
            if said.startswith("think"):
                await msg.indicate_typing()  # marks the message read and shows "typing..."
            await asyncio.sleep(pause_s)
            await msg.reply_text(THINKING[1])
        elif said.startswith("typing"):
            await msg.reply_text(THINKING[0])
            await msg.indicate_typing()
        elif said.startswith("late"):
            await msg.reply_text("Let me check.")

            async def later() -> None:
                for text in ("Still checking.", "Please see your GP this week."):
                    await asyncio.sleep(gap_s)
                    await msg.reply_text(text)

            task = asyncio.create_task(later())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        else:
            await msg.reply_text("Hello, I'm the surgery's helper.")
            await msg.reply_text("What is the main problem today?")


def _inline(env: dict[str, str]) -> tuple[FastAPI, WhatsApp]:
    """pywa with no server of its own: this app's routes verify, validate and run the handlers inline."""
    import httpx

    app = FastAPI()
    graph = env.get("TRIAGE_GRAPH_URL")
    wa = WhatsApp(
        phone_id=env["TRIAGE_PHONE_ID"],
        token=env["TRIAGE_TOKEN"],
        session=httpx.AsyncClient(transport=LocalGraph(graph), timeout=10) if graph else None,
        verify_token=env["TRIAGE_VERIFY_TOKEN"],
        app_secret=env["TRIAGE_APP_SECRET"],
    )

    @app.get("/webhook")
    async def challenge(request: Request) -> Response:
        query = request.query_params
        text, status = await wa.webhook_challenge_handler(
            query.get("hub.verify_token"), query.get("hub.challenge")
        )
        return Response(text or "", status)

    @app.post("/webhook")
    async def update(request: Request) -> Response:
        body = await request.body()
        refused = await wa.webhook_update_validator(body, request.headers.get("X-Hub-Signature-256"))
        if refused:
            return Response(refused[0], refused[1])
        text, status = await wa.webhook_update_handler(body)  # the handlers run here, before the answer
        return Response(text, status)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app, wa


def build(env: dict[str, str], serve: str = "inline", gap_s: float = 0.05, pause_s: float = 1.0) -> FastAPI:
    app, wa = _inline(env) if serve == "inline" else whatsapp_app(env)
    tasks: set[asyncio.Task[None]] = set()
    app.state.tasks = tasks  # kept: a task nobody holds may be collected before it runs
    _handlers(wa, gap_s, tasks, pause_s)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--serve", choices=["inline", "background"], default="inline")
    parser.add_argument("--gap-s", type=float, default=0.05)
    parser.add_argument("--pause-s", type=float, default=1.0)
    args = parser.parse_args()
    app = build(dict(os.environ), args.serve, args.gap_s, args.pause_s)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
