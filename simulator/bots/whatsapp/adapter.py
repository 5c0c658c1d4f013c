"""The `whatsapp` adapter: the engine plays Meta's WhatsApp Cloud API to the bot under test.

Per user turn it POSTs signed webhook events (text, the `button_reply` / `list_reply` of a tap, or an
`image` / `audio` message naming a media id the bot fetches from the Graph API) to the bot's webhook, then
collects what the bot sends through the local Graph API (graph.py) until the bot
has been quiet for `quiet_s` or sent an interactive message (or, with `turn_end: auto`, the webhook's answer
came back after the bot's messages, once the run has confirmed that this bot sends inside the webhook:
`TurnEnds`): that is one bot turn, however many messages and however slow. A typing indicator the bot
shows after a message holds the turn open until its next message (or until the indicator lapses, 25 s), so
a bot that says "let me check" and thinks longer than quiet_s keeps its answer in the same turn. The latency is from the webhook
delivery to the bot's first message; the reason the turn ended is kept in the turn's raw (`end`: `quiet`,
`interactive` or `answer`). Status callbacks (sent, delivered,
read) are posted when the suite asks for them. While a turn is collected its conversation is "waiting", so a
Graph API call that names no conversation is recorded on it (routing.py) instead of a timeout. Secrets come from the environment variables the suite
names (for a bot the suite starts, unset ones are made up for the run and passed to it) and are
registered for redaction, so none is ever written.
"""

from __future__ import annotations

__all__ = ["WhatsAppBotFactory", "whatsapp_bot_factory"]

import asyncio
import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from simulator.bots.base import BotError, BotReply
from simulator.bots.bounded_read import read_bounded_aiohttp
from simulator.bots.service import BotProcess, StartOnce, death_of, fill, placeholder_values, while_alive
from simulator.bots.turn_limits import over_limit
from simulator.bots.whatsapp.events import (
    SIGNATURE_HEADER,
    Identity,
    WebhookAccount,
    dumps,
    media_content,
    message_event,
    sign,
    status_event,
    verification_query,
)
from simulator.bots.whatsapp.graph import GraphApi, Inbox, Outbound
from simulator.config.bots.whatsapp import WhatsAppBotConfig
from simulator.errors import UserError
from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.providers._http import connection_refused
from simulator.record.parts import MediaPart, Option, OptionsPart, Part, PickPart, TextPart
from simulator.record.redact import redact, register_secrets

if TYPE_CHECKING:
    from simulator.config.suite import Suite
    from simulator.providers.hub import ModelHub

# The whole turn's deadline: bot.timeout_s after the webhook delivery, and this little more, so a bot that
# sent nothing is told so by _collect (its first message is awaited until bot.timeout_s) with its own hint.
_LATE_S = 0.5


_ANSWER_SHOWN = 4096  # bytes of an error answer read, for the 160 characters the error shows


async def _answer(response: aiohttp.ClientResponse) -> bytes:
    """The webhook's answer to its end, keeping at most _ANSWER_SHOWN bytes (shown when it is an error): the
    delivery is answered when the answer has ended, not when its status line came (a bot that trickles its
    answer has not answered, and the turn's deadline says so); an answer past the cap is not read further."""
    kept = b""
    while len(kept) < _ANSWER_SHOWN:
        chunk = await response.content.readany()
        if not chunk:
            break
        kept += chunk
    return kept[:_ANSWER_SHOWN]


def _sent(messages: list[Outbound]) -> list[Part]:
    """The parts of the messages a bot turn has taken so far."""
    return [part for item in messages for part in item.parts]


def _secret(variable: str, started: bool, what: str) -> str:
    """The secret in `variable`; made up for the run when the suite starts the bot (it is passed to it)."""
    value = os.environ.get(variable)
    if value:
        return value
    if started:
        return secrets.token_hex(16)
    raise UserError(
        f"the whatsapp bot needs {what}: set the {variable} environment variable (bot.{_field(what)} names "
        "it), or let the suite start the bot (bot.start), which makes one up for the run"
    )


def _field(what: str) -> str:
    return {"the app secret": "app_secret_env", "the access token": "access_token_env"}.get(
        what, "verify_token_env"
    )


# WhatsApp dismisses a typing indicator when the bot responds or after 25 seconds, whichever comes first.
TYPING_LASTS_S = 25.0
CONFIRMING_TURNS = 3  # turns that must show a bot replies inside the webhook before its answer ends a turn


class TurnEnds:
    """Whether this run's bot turns may end at the webhook's answer (`turn_end: auto`), learnt from the bot.

    A bot that sends its messages while handling the webhook and answers it after the last one (a route that
    awaits its sends, pywa's `webhook_update_handler` awaited in the route) has finished its turn when the
    answer comes back. A bot
    that answers at once and works in the background (as Meta recommends) has not. So the quiet period is
    kept until CONFIRMING_TURNS turns ended by it have shown messages before the answer and none after; a
    turn with a message after the answer, or (once confirmed) a message that comes after a turn was ended at
    the answer, turns the rule off for the rest of the run, said in that turn's notes."""

    def __init__(self, mode: str) -> None:
        self.confirmed = 0
        self.off: str | None = None if mode == "auto" else "bot.turn_end is quiet"

    @property
    def at_answer(self) -> bool:
        return self.off is None and self.confirmed >= CONFIRMING_TURNS

    def observe(self, messages: list[Outbound], start: float, answered: float, end: str) -> None:
        """A turn the quiet period ended: did the bot send inside the webhook, and nothing after it?"""
        if self.off is not None or end != "quiet":
            return
        if any(item.at > answered for item in messages):
            self.off = "the bot sent a message after answering the webhook"
        elif any(start <= item.at <= answered for item in messages):
            self.confirmed += 1

    def late(self, count: int) -> str:
        """Messages came after a turn was ended at the webhook's answer: the quiet period from now on."""
        self.off = "the bot sent a message after a turn was ended at the webhook's answer"
        return (
            f"{count} message(s) came after the previous bot turn was ended at the webhook's answer (the bot "
            "sent after answering): they open this turn, and the run's later turns wait for quiet_s "
            "(bot.turn_end: quiet makes every turn wait)"
        )


class WhatsAppBotFactory:
    """One Graph API server, one HTTP client and (with bot.start) one bot process for the whole run."""

    def __init__(
        self,
        config: WhatsAppBotConfig,
        base_dir: Path,
        *,
        record_raw: bool = True,
        suite: Suite | None = None,
    ) -> None:
        self.config = config
        # Without record_raw a turn's raw keeps only how it ended and when each message came, no bodies.
        self.record_raw = record_raw
        started = config.start is not None
        self.app_secret = _secret(config.app_secret_env, started, "the app secret")
        self.access_token = _secret(config.access_token_env, started, "the access token")
        self.verify_token = _secret(config.verify_token_env, started, "the verify token")
        register_secrets([self.app_secret, self.access_token, self.verify_token])
        self.graph = GraphApi(self.access_token, config.phone_number_id, config.templates)
        values = {**placeholder_values(started), "api_url": self.graph.url}
        self.webhook_url = fill(config.webhook_url, values, "bot.webhook_url")
        self.state_url = fill(config.state_url, values, "bot.state_url") if config.state_url else None
        self.account = WebhookAccount(
            config.business_account_id, config.phone_number_id, config.display_phone_number
        )
        self.process: BotProcess | None = None
        if config.start is not None:
            self.process = BotProcess(
                config.start,
                base_dir,
                values,
                self.webhook_url,
                extra_env={
                    "WHATSAPP_API_URL": self.graph.url,
                    "WHATSAPP_PHONE_NUMBER_ID": config.phone_number_id,
                    config.app_secret_env: self.app_secret,
                    config.access_token_env: self.access_token,
                    config.verify_token_env: self.verify_token,
                },
                url_field="bot.webhook_url",
                suite=suite,
            )
        # Every call to the bot (the handshake, each webhook and status callback, bot.state_url) goes out on
        # aiohttp: a fifth of httpx's CPU a request. Made in the event loop, at start.
        self.session: aiohttp.ClientSession | None = None
        self.turn_ends = TurnEnds(config.turn_end)
        self._once = StartOnce()

    async def start(self, log_dir: Path | None = None) -> None:
        """Serve the Graph API, start the bot (bot.start) and play the verification handshake, once."""

        async def start_all() -> None:
            self.session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.config.timeout_s),
                connector=aiohttp.TCPConnector(limit=100),  # httpx's pool size, as before
                skip_auto_headers=("User-Agent",),
            )
            await self.graph.start()
            if self.process is not None:
                await self.process.start(log_dir)
            if self.config.verify:
                await self.verify()

        await self._once.run(start_all)

    async def verify(self) -> str:
        """Meta's GET handshake: the bot must answer 200 with `hub.challenge` when the token matches."""
        query, challenge = verification_query(self.verify_token)
        assert self.session is not None
        try:
            async with self.session.get(self.webhook_url, params=query) as response:
                status, text = (
                    response.status,
                    (await response.content.read(_ANSWER_SHOWN)).decode("utf-8", "replace"),
                )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise UserError(
                f"the webhook verification GET to {self.webhook_url} failed: {await self.why(exc)}"
            ) from exc
        if status != 200 or text.strip() != challenge:
            raise UserError(
                f"the bot failed the webhook verification handshake: GET {self.webhook_url}?hub.mode=subscribe&"
                f"hub.verify_token=…&hub.challenge={challenge} answered HTTP {status} "
                f"{redact(text)[:80]!r}; a Cloud API webhook answers 200 with the challenge when "
                f"hub.verify_token matches (the bot reads it from {self.config.verify_token_env}), or set "
                "bot.verify: false"
            )
        return challenge

    async def why(self, exc: Exception) -> str:
        """A failed call said as it is, with the bot process's exit and log when it has died (waited for a
        moment: the call fails as its socket closes, a little before the exit is known)."""
        note = await death_of(self.process)
        if note:
            return note
        if connection_refused(exc):
            return f"connection refused by {self.webhook_url}: is the bot running there?"
        if isinstance(exc, TimeoutError):
            return f"no answer within {self.config.timeout_s:g} s (bot.timeout_s)"
        return f"{type(exc).__name__}: {exc}"

    async def silence(self, notes: list[str]) -> BotError:
        """Why a turn timed out, said as it is: the started bot died (a connection error, with its exit), or
        no call reached the local Graph API for this conversation (a refused call is an error of its own,
        never this), with what the bot did do and its log's end."""
        died = await death_of(self.process, 0)
        if died:
            return BotError("connection", died)
        did = f"; it only {', '.join(notes)}" if notes else ""
        text = (
            f"the bot sent no message within {self.config.timeout_s:g} s of the webhook delivery (bot.timeout_s): "
            f"no call for this conversation reached the local Graph API at {self.graph.url}{did}. A bot sends "
            "with POST {WHATSAPP_API_URL}/{version}/{phone-number-id}/messages"
        )
        tail = self.process.recent_log() if self.process is not None else None
        return BotError("timeout", text + (f"\n{tail}" if tail else ""))

    async def open(self, conversation_id: str) -> WhatsAppSession:
        try:
            await self.start()
        except UserError as exc:
            raise BotError("start", str(exc)) from exc
        who = Identity.for_conversation(conversation_id, self.config.profile_name, self.config.country)
        # The inbox keeps a turn's messages and room for notes; more is counted, not kept (routing.py).
        inbox = self.graph.open_inbox(who, limit=2 * self.config.max_messages_per_turn + 20)
        return WhatsAppSession(self, who, inbox)

    async def aclose(self) -> None:
        if self.process is not None:
            await self.process.stop()
        await self.graph.aclose()
        if self.session is not None:
            await self.session.close()


class WhatsAppSession:
    """One simulated WhatsApp user chatting with the bot."""

    takes_parts = True  # a user turn's photos, voice notes and bursts are delivered as the Cloud API does

    def __init__(self, factory: WhatsAppBotFactory, who: Identity, inbox: Inbox) -> None:
        self._factory = factory
        self._config = factory.config
        self.who = who
        self._inbox = inbox
        self._offered: OptionsPart | None = None
        self._offered_id: str | None = None  # the bot's message that carried the options
        self._last_end: str | None = None  # how the previous bot turn ended

    async def _post(self, event: dict[str, Any], what: str) -> int:
        """POST one signed webhook; its HTTP status. Only the start of the answer is read (it is shown when
        the status is an error): a webhook's answer carries nothing else."""
        body = dumps(event)
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(body, self._factory.app_secret)}
        session = self._factory.session
        assert session is not None, "the factory is started before a session opens"
        try:
            async with session.post(self._factory.webhook_url, data=body, headers=headers) as response:
                status = response.status
                shown = await _answer(response)
        except (aiohttp.ClientError, TimeoutError) as exc:
            kind = "timeout" if isinstance(exc, TimeoutError) else "connection"
            raise BotError(
                kind, f"posting {what} to the webhook failed: {await self._factory.why(exc)}"
            ) from exc
        if status >= 400:
            hint = " (a 401 or 403: does the bot check X-Hub-Signature-256 with the same app secret?)"
            text = shown.decode("utf-8", "replace")
            raise BotError(
                "http_status",
                f"the bot answered HTTP {status} to {what}: {redact(text)[:160]!r}"
                + (hint if status in (401, 403) else ""),
            )
        return status

    def _event(self, text: str, pick: PickPart | None) -> tuple[dict[str, Any], str]:
        offered: Option | None = None
        style = None
        if pick is not None and self._offered is not None:
            offered = next((o for o in self._offered.options if o.id == pick.id), None)
            style = self._offered.style
        return message_event(
            self._factory.account,
            self.who,
            text,
            pick=pick,
            offered=offered,
            style=style,
            context_id=self._offered_id if pick is not None else None,
        )

    def _media_event(self, part: MediaPart) -> tuple[dict[str, Any], str]:
        """A photo or voice note as the Cloud API posts it: its file stored for the bot to fetch, the webhook
        naming its media id."""
        if part.kind not in ("image", "audio"):
            raise BotError(
                "unsupported",
                f"the simulated user sent a {part.kind}; the whatsapp adapter delivers a user's image or audio "
                "(docs/whatsapp.md)",
            )
        stored = self._factory.graph.add_user_media(self._inbox, part)
        content = media_content(part.kind, stored.media_id, stored.mime_type, stored.sha256, part.caption)
        return message_event(self._factory.account, self.who, "", content=content)

    def _events(
        self, text: str, pick: PickPart | None, parts: Sequence[Part] | None
    ) -> list[tuple[dict[str, Any], str]]:
        """The webhooks of one user turn. A plain turn (one typed message, or a tap) is one webhook, as
        always; a rich one (a photo, a voice note, several messages sent in a burst) is one per part, in
        order, a photo's caption travelling with it rather than again as text."""
        rich = parts is not None and (
            any(isinstance(p, MediaPart) for p in parts) or sum(isinstance(p, TextPart) for p in parts) > 1
        )
        if not rich or parts is None:
            return [self._event(text, pick)]
        events = []
        caption = None
        for part in parts:
            if isinstance(part, MediaPart):
                events.append(self._media_event(part))
                caption = part.caption
            elif isinstance(part, PickPart):
                events.append(self._event(part.title, part))
            elif isinstance(part, TextPart) and part.text.strip() and part.text != caption:
                events.append(self._event(part.text, None))
        return events or [self._event(text, pick)]

    async def send(
        self, text: str, turn: int, *, pick: PickPart | None = None, parts: Sequence[Part] | None = None
    ) -> BotReply:
        """One user turn (text, a tap, or its parts: photos, voice notes, a burst) as webhooks; the bot's turn
        that follows."""
        events = self._events(text, pick, parts)
        graph = self._factory.graph
        graph.directory.begin_wait(self._inbox)
        posted: list[dict[str, Any]] = []
        collected: list[Outbound] = []
        ends = self._factory.turn_ends
        try:
            early = self._drain()  # sent after the last turn ended, before this message
            late = sum(item.message_id is not None for item in early) if self._last_end == "answer" else 0
            said = ends.late(late) if late else None  # before this turn's end is chosen
            start = time.perf_counter()
            # The whole turn's deadline (bot.timeout_s): a webhook answered a byte at a time, or a bot that
            # never stops posting, ends here; a bot that sends nothing ends sooner, in _collect, with why.
            async with asyncio.timeout(self._config.timeout_s + _LATE_S):
                for event, message_id in events:
                    graph.note_inbound(message_id, self._inbox)
                    posted.append({"status": await self._post(event, "the message webhook"), "event": event})
                answered = time.perf_counter()
                at_answer = answered if ends.at_answer else None
                messages, notes, end = await self._collect(start, early, collected, at_answer)
        except TimeoutError:
            if len(posted) == len(events) and not collected:
                # Answered, then nothing: the silence, said as such, though the turn's deadline came first
                # (both pass within one stall of a busy machine, and the turn's cancellation wins).
                raise await self._factory.silence([]) from None
            why = self._late(len(posted) < len(events), len(collected))
            raise BotError("timeout", why, sent=_sent(collected)) from None
        finally:
            graph.directory.end_wait(self._inbox)
        died = await death_of(self._factory.process, 0)
        if died:  # it crashed during the turn: what it sent is kept in the transcript, never judged
            raise BotError("connection", died, sent=_sent(messages))
        if said:
            notes.insert(0, said)
        ends.observe(messages, start, answered, end)
        self._last_end = end
        statuses = await self._statuses(messages)
        got = _sent(messages)
        for item in messages:
            options = [p for p in item.parts if isinstance(p, OptionsPart)]
            if options:
                self._offered, self._offered_id = options[-1], item.message_id
        first = min((item.at for item in messages), default=start)
        return BotReply(
            messages=[p.text for p in got if isinstance(p, TextPart)],
            latency_s=max(0.0, first - start),
            parts=got,
            raw=self._raw(start, posted, messages, notes, end, statuses),
        )

    def _late(self, posting: bool, sent: int) -> str:
        """Why a turn met its deadline: the webhook delivery was still unanswered, or the bot was still
        sending (its turn ends once it has been quiet for quiet_s, or with an interactive message)."""
        limit = f"{self._config.timeout_s:g} s (bot.timeout_s, the whole turn's deadline)"
        if posting:
            return (
                f"the bot had not answered the webhook delivery after {limit}; answer 200 at once, then reply"
            )
        return (
            f"the bot was still sending after {limit}: {sent} message(s), never quiet for bot.quiet_s "
            f"({self._config.quiet_s:g} s); its turn was stopped there"
        )

    def _raw(
        self,
        start: float,
        posted: list[dict[str, Any]],
        messages: list[Outbound],
        notes: list[str],
        end: str,
        statuses: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """The turn's raw record: how it ended (`quiet`, `interactive`, `answer`), when each message came after the
        webhook delivery, and (with record_raw) the webhook event, the bodies, notes and status callbacks."""
        timing: list[dict[str, Any]] = [
            {"at_s": round(item.at - start, 3), "id": item.message_id} for item in messages
        ]
        raw: dict[str, Any] = {"end": end, "quiet_s": self._config.quiet_s, "messages": timing}
        if self._factory.record_raw:
            for entry, item in zip(timing, messages, strict=True):
                entry["body"] = item.body
            webhooks: dict[str, Any] = {"webhook": posted[0]} if len(posted) == 1 else {"webhooks": posted}
            raw.update(webhooks, notes=notes, statuses=statuses)
        return raw

    def _drain(self) -> list[Outbound]:
        items = []
        while not self._inbox.queue.empty():
            items.append(self._inbox.queue.get_nowait())
        return items

    async def _collect(
        self, start: float, early: list[Outbound], messages: list[Outbound], answered: float | None
    ) -> tuple[list[Outbound], list[str], str]:
        """The bot's messages of this turn (into `messages`): until it sent an interactive one; or, with
        `answered` (the time the webhook's answer came back, when `TurnEnds` allows it), at once if the bot sent
        a message while handling the webhook, everything it sent is taken and no call of its for this
        conversation is still open; else until it has been quiet for quiet_s after its last message. A typing
        indicator shown after the last message is the bot saying more is coming: the turn waits for that
        message as long as the indicator lasts (`TYPING_LASTS_S`, as WhatsApp shows it), not just quiet_s.
        Nothing within timeout_s of the webhook is a timeout error; more than bot.max_messages_per_turn is an
        over_limit error, as soon as it is seen."""
        notes: list[str] = []
        pending = list(early)
        queue = self._inbox.queue
        typing_at: float | None = None  # a typing indicator not yet dismissed by a message
        while True:
            self._check_count(len(messages) + len(pending))
            if pending:
                item = pending.pop(0)
            elif not queue.empty():
                item = queue.get_nowait()
            elif (
                answered is not None
                and typing_at is None
                and self._inbox.in_flight == 0
                and any(start <= m.at <= answered for m in messages)
            ):
                return messages, notes, "answer"
            else:
                now = time.perf_counter()
                wait = self._wait_s(start, messages[-1].at if messages else None, typing_at, now)
                try:
                    # A bot the suite started that dies is not waited for: its death is said at once.
                    item = await while_alive(self._factory.process, queue.get(), max(0.0, wait))
                except TimeoutError:
                    if messages:
                        if typing_at is not None:
                            notes.append(self._lapsed(typing_at, start))
                        return messages, notes, "quiet"
                    raise await self._factory.silence(notes) from None
            if item.error is not None:  # what the bot sent before the refused call stays in the transcript
                raise BotError(item.error_kind or "invalid_reply", item.error, sent=_sent(messages))
            if item.note is not None:
                notes.append(item.note)
                if item.typing:
                    typing_at = item.at
                continue
            messages.append(item)
            typing_at = None  # a message dismisses the indicator (WhatsApp hides it once the bot responds)
            self._check_count(len(messages))
            if any(isinstance(part, OptionsPart) for part in item.parts):
                return messages, notes, "interactive"

    def _wait_s(self, start: float, last: float | None, typing_at: float | None, now: float) -> float:
        """How long to wait for the bot's next message: with none yet, up to the turn's deadline; after one, the
        quiet period, or while a typing indicator shows, until it lapses (never past the turn's deadline)."""
        deadline = start + self._config.timeout_s
        if last is None:
            return deadline - now
        until = last + self._config.quiet_s
        if typing_at is not None:
            until = max(until, min(typing_at + TYPING_LASTS_S, deadline))
        return until - now

    def _lapsed(self, typing_at: float, start: float) -> str:
        """The note of a turn that ended while the bot's typing indicator was showing."""
        shown = typing_at - start
        if shown + TYPING_LASTS_S <= self._config.timeout_s:
            within = f"within {TYPING_LASTS_S:g} s (WhatsApp hides the indicator then)"
        else:
            within = f"before the turn's deadline (bot.timeout_s, {self._config.timeout_s:g} s)"
        return (
            f"the bot showed the typing indicator at {shown:.1f} s and sent no message {within}; "
            "its turn ended with what it had sent"
        )

    def _check_count(self, seen: int) -> None:
        """More messages this turn than bot.max_messages_per_turn (those the inbox only counted too)."""
        found = seen + self._inbox.queue.qsize() + self._inbox.dropped
        limit = self._config.max_messages_per_turn
        if found > limit:
            raise over_limit("sent more messages in one turn", found, "max_messages_per_turn", limit)

    async def _statuses(self, messages: list[Outbound]) -> list[dict[str, Any]]:
        """Post the configured status callbacks of each message, in order; a bot that fails one is an error."""
        sent = []
        for item in messages:
            assert item.message_id is not None
            for status in self._config.statuses:
                event = status_event(self._factory.account, self.who, item.message_id, status)
                code = await self._post(event, f"the '{status}' status callback of {item.message_id}")
                sent.append({"id": item.message_id, "status": status, "answer": code})
        return sent

    async def final_state(self) -> dict[str, Any] | None:
        url = self._factory.state_url
        if url is None:
            return None
        url = url.replace("{wa_id}", self.who.wa_id).replace("{user_id}", self.who.user_id)
        try:
            # The whole answer within bot.timeout_s and the byte cap, as a bot's turn (bots/bounded_read.py).
            assert self._factory.session is not None
            status, body = await read_bounded_aiohttp(
                self._factory.session,
                "GET",
                url,
                timeout_s=self._factory.config.timeout_s,
                max_bytes=self._factory.config.max_reply_bytes,
                who="bot.state_url",
            )
        except aiohttp.ClientError as exc:
            raise BotError("connection", f"GET bot.state_url failed: {await self._factory.why(exc)}") from exc
        if status == 404:
            return None
        if status >= 400:
            raise BotError(
                "invalid_reply", f"bot.state_url answered HTTP {status}: a JSON object is expected"
            )
        try:
            data = loads_bounded(body, "bot.state_url's answer") if body.strip() else None
        except JSONRefused as exc:
            shown = redact(body[:80].decode("utf-8", "replace"))
            raise BotError("invalid_reply", f"{exc}: {shown!r}; answer a JSON object (or 404)") from None
        if not (data is None or isinstance(data, dict)):
            raise BotError(
                "invalid_reply", f"bot.state_url answered HTTP {status}: a JSON object is expected"
            )
        return data

    async def aclose(self) -> None:
        self._factory.graph.close_inbox(self._inbox)


def whatsapp_bot_factory(config: WhatsAppBotConfig, suite: Suite, hub: ModelHub) -> WhatsAppBotFactory:
    """The `whatsapp` kind's factory (config/bots/whatsapp.py registers it)."""
    return WhatsAppBotFactory(config, suite.base_dir, record_raw=suite.record_raw, suite=suite)
