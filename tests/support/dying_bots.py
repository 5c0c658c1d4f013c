"""Bot processes that die, for the tests of a started bot's death on every channel that starts one (http,
whatsapp, openai_endpoint): a plain Python process listening on `{port}` that, on the first request, says so
on stderr and ends as `END` says, before it answers (or, with `answer-then-exit`, just after answering 200,
as a WhatsApp bot that answers the webhook at once and crashes in the background does). Cheap: no framework.
"""

from __future__ import annotations

import asyncio
from typing import Any

from simulator.config.bots import BotStart
from simulator.config.scenario import Scenario
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.record.models import ConversationRecord
from simulator.users.offline import OfflineUser

DYING_BOT = """
import os, signal, socket, sys
end = os.environ["END"]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen()
while True:
    connection, _ = server.accept()
    asked = b""
    while b"\\r\\n\\r\\n" not in asked:
        chunk = connection.recv(65536)
        if not chunk:
            break  # the readiness check: a connection and nothing said
        asked += chunk
    if not asked:
        connection.close()
        continue
    print("dying:", end, file=sys.stderr, flush=True)
    if end == "answer-then-exit":
        connection.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n")
        connection.close()
        sys.exit(3)
    if end == "exit":
        sys.exit(3)
    if end == "raise":
        raise RuntimeError("the database is gone")
    os.kill(os.getpid(), getattr(signal, end))
"""

# How the bot ends on its first request, and what the error must say of it.
ENDS = {
    "exit": "exited with code 3",
    "raise": "exited with code 1",
    "SIGKILL": "was killed by SIGKILL (exit code -9)",
    "SIGTERM": "was killed by SIGTERM (exit code -15)",
}
# What the log's tail must show besides the "dying:" line.
LOG_SAYS = {"raise": "RuntimeError: the database is gone"}

# Bots that never get ready, and what the start error must say of each.
NEVER_READY = {
    "never listens": (
        "import sys, time; print('warming up', file=sys.stderr, flush=True); time.sleep(30)",
        r"was not ready within 0\.5 s \(port \d+ did not answer",
        "warming up",
    ),
    "exits before listening": (
        "import sys; print('no database configured', file=sys.stderr, flush=True); sys.exit(3)",
        "exited with code 3 before it was ready",
        "no database configured",
    ),
    "killed before listening": (
        "import os, signal, sys; print('out of memory', file=sys.stderr, flush=True); "
        "os.kill(os.getpid(), signal.SIGKILL)",
        r"was killed by SIGKILL \(exit code -9\) before it was ready",
        "out of memory",
    ),
}

SCENARIO = Scenario(id="s", persona="A man.", goal="Ask about chest pain.", facts=["Pain."], max_turns=2)


def dying_start(end: str, **start: Any) -> BotStart:
    """`bot.start` of the dying bot, ending as `end` says on its first request."""
    return BotStart(command=["{python}", "-c", DYING_BOT, "{port}"], env={"END": end}, **start)


def never_ready_start(script: str) -> BotStart:
    """`bot.start` of a bot that never listens (its readiness waited for half a second)."""
    return BotStart(command=["{python}", "-c", script], ready={"timeout_s": 0.5})  # type: ignore[arg-type]


async def one_conversation(factory: Any) -> ConversationRecord:
    """One conversation with the offline user against `factory`, recorded as the engine records it."""

    def user(plan: ConversationPlan, attempt: int) -> OfflineUser:
        return OfflineUser(plan.scenario, seed=0, repeat=plan.repeat, volunteer_share=0.0)

    return await asyncio.wait_for(run_conversation(ConversationPlan(SCENARIO, 0), user, factory), 60)


def bot_error(record: ConversationRecord, kind: str) -> str:
    """The record's bot error message; the conversation must be an error of `kind`, never judged."""
    assert record.stop_reason == "error" and record.error is not None, record.stop_reason
    assert (record.error.source, record.error.kind) == ("bot", kind), record.error
    assert record.final_state is None
    return record.error.message
