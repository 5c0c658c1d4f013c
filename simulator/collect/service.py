"""The collector: accepted spans spooled and assembled, closed conversations written, signals computed,
samples judged, alerts checked. The HTTP side is `receiver.py`; this is everything behind it."""

from __future__ import annotations

__all__ = ["Accepted", "CollectOptions", "Collector"]

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.collect.assembler import Assembler, Held, OpenConversation
from simulator.collect.folders import Roll, RollingFolders
from simulator.collect.limits import RateLimiter
from simulator.collect.sampling import SamplingPolicy, load_policy
from simulator.collect.signals import quality_signals
from simulator.collect.spans import Ref, redacted
from simulator.collect.spool import Marker, Spool
from simulator.collect.supervise import QUARANTINED, Notices, Quarantine, describe
from simulator.errors import UserError
from simulator.record.models import ConversationRecord
from simulator.traces.messages import Parsed
from simulator.traces.otlp import Span, conversations_from_spans, expected_level
from simulator.traces.otlp_decode import Decoded, ShapeError, decode_documents
from simulator.traces.pseudonym import IDENTIFIER_ATTRIBUTES, Pseudonyms, load_key
from simulator.traces.redact import load_redactor

STATE = ".collect"
PSEUDONYM_KEY = "pseudonym.key"  # in STATE: the key of the conversation and user ids' pseudonyms
RECENT_MARKERS = 5000  # closed conversations remembered across a compaction (dedup after a restart)


@dataclass
class CollectOptions:
    out: Path
    idle_s: float = 300.0
    conversation_key: str | None = None
    redact: Path | None = None
    roll: Roll = field(default_factory=Roll)
    max_body: int = 4 * 1024 * 1024
    max_open_spans: int = 200_000
    rate: float = 100.0  # requests a second per client
    burst: float = 200.0
    fsync: bool = True
    spool_limit: int = 64 * 1024 * 1024
    exclude_system: bool = False
    decision_tool: str = "record_decision"
    policy: Path | None = None
    # A span attribute carrying the conversation's expected outcome level, where the service records one.
    expected_attribute: str | None = None


@dataclass
class Accepted:
    """What one export request gave: the spans (and log events) not seen before, and what the door decoded
    and rejected."""

    fresh: int
    decoded: Decoded
    ticket: int = 0  # the spool's appends up to this request's: on disk before it is answered


class Collector:
    """Everything the receiver feeds. Synchronous except judging: one close path, no await inside it, so a
    marker and its record are never separated by another request."""

    def __init__(
        self,
        options: CollectOptions,
        *,
        judge: Any = None,
        alerts: Any = None,
        decorate: Any = None,
        on_finish: Any = None,
    ) -> None:
        if options.out.exists() and not options.out.is_dir():
            raise UserError(f"--out {options.out}: a file of that name exists; name a folder")
        self.options = options
        self.policy: SamplingPolicy = load_policy(options.policy)
        self.redactor = load_redactor(options.redact)
        # Ids that group spans keep apart under a keyed pseudonym; the key outlives restarts (pseudonym.py).
        identifiers = IDENTIFIER_ATTRIBUTES + (
            (options.conversation_key,) if options.conversation_key else ()
        )
        key = load_key(options.out / STATE / PSEUDONYM_KEY, create=True)
        self.pseudonyms = Pseudonyms(self.redactor, key, identifiers)
        self.spool = Spool(options.out / STATE, fsync=options.fsync)
        self.assembler = Assembler(options.conversation_key, options.idle_s, options.max_open_spans)
        self.limiter = RateLimiter(options.rate, options.burst)
        self.folders = RollingFolders(
            options.out, options.roll, self._source(), decorate=decorate, on_finish=on_finish
        )
        self.judge = judge
        self.alerts = alerts
        self.counts: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()  # conversations not written, by why
        self.recent: list[Marker] = []
        self.notices = Notices()
        self.quarantine = Quarantine(options.out / STATE)
        self.last_problem: str | None = None
        self._compacted = 0  # the spool's size after its last compaction
        self.followed: Any = None  # the folders as the alert check last read them (trends.FollowedFolders)
        self.started = False  # the journal recovered (`start`)

    def _source(self) -> dict[str, Any]:
        return {
            "format": "otlp-http",
            "collector": "simulator collect",
            "conversation_key": self.options.conversation_key,
            "idle_s": self.options.idle_s,
            "exclude_system": self.options.exclude_system,
            "redaction": str(self.options.redact or "built-in patterns"),
        }

    # ---------------------------------------------------------------------------------------- start

    def start(self, now: float | None = None) -> None:
        """Recover from the journal: finish conversations closed but not written, reopen the rest. Once:
        the command line starts the collector before serving (a failure is then its one line, not the
        server's traceback), and the receiver's lifespan, which starts it otherwise, finds it started."""
        if self.started:
            return
        now = time.monotonic() if now is None else now
        spans, markers = self.spool.load()
        for damaged in self.spool.damaged:  # skipped, never in silence: the operator may have a copy
            self.counts["damaged_journal_lines"] += len(damaged.lines)
            self._problem(f"journal {damaged.path.name}", damaged.note())
        by_ref: dict[tuple[str, str], Span] = {}
        for span in spans:
            held = by_ref.get(span.ref)
            if held is None:
                by_ref[span.ref] = span
            else:
                _merge_into(held, span)
        self.folders.start()
        self.recent = markers[-RECENT_MARKERS:]
        closed: set[tuple[str, str]] = set()
        written: dict[str, set[str]] = {}
        quarantined = {ref for m in markers if m.folder == QUARANTINED for ref in m.refs}
        for marker in markers:
            closed.update(marker.refs)
            if marker.folder == QUARANTINED or set(marker.refs) <= quarantined:
                continue
            if marker.folder not in written:
                written[marker.folder] = self._written(marker.folder)
            if marker.scenario_id not in written[marker.folder]:
                spans = [by_ref[r] for r in marker.refs if r in by_ref]
                try:
                    self._rewrite(marker, spans)
                except Exception as exc:  # the loop is supervised: one conversation never stops the rest
                    self._quarantine(marker.key, spans, exc)
                    continue
                written[marker.folder].add(marker.scenario_id)
                self.counts["recovered"] += 1
        self.assembler.remember(list(closed))
        reopened = [s for ref, s in by_ref.items() if ref not in closed]
        locations = self.spool.compact(reopened, self.recent)
        self._compacted = self.spool.size()
        self.assembler.add(reopened, now, locations)
        self.counts["reopened_spans"] += len(reopened)
        self.started = True

    def _written(self, name: str) -> set[str]:
        from simulator.record.folder import RunFolder

        path = self.options.out / name
        if not (path / "manifest.json").is_file():
            return set()
        return {r.scenario_id for r in RunFolder.open(path).conversations()}

    def _rewrite(self, marker: Marker, spans: list[Span]) -> None:
        """Write a conversation whose marker was journalled but whose record was not (a crash between)."""
        built = self._build(marker.key, spans, marker.scenario_id)
        if built is None:
            return
        record, signals = built
        current = self.folders.current
        if current is not None and current.name == marker.folder:
            self.folders.write(current, record, signals)
            return
        other = self.folders.reopen(marker.folder)
        self.folders.write(other, record, signals)
        self.folders.finish(other)

    # --------------------------------------------------------------------------------------- accept

    def accept(self, document: dict[str, Any], now: float | None = None) -> Accepted:
        """Take an OTLP JSON export request: check every span and log record at the door (a malformed one
        is rejected on its own, with the field and why), redact, drop duplicates, spool (on disk before this
        returns), assemble. How many spans were new, and what was decoded and rejected; ValueError for a
        request whose structure is not OTLP (nothing is taken from it)."""
        try:
            decoded = decode_documents([(None, document)])
        except ShapeError as exc:
            raise ValueError(f"not an OTLP export request ({exc})") from None
        return self.accept_decoded(decoded, now)

    def accept_decoded(self, decoded: Decoded, now: float | None = None) -> Accepted:
        """`accept` for a request already decoded at the door (collect/decode.py `decode_export`)."""
        accepted = self.take(decoded, now)
        self.spool.sync(accepted.ticket)
        return accepted

    async def accept_durably(self, decoded: Decoded) -> Accepted:
        """`accept_decoded` on the event loop: the spool synced off it, one sync shared by the requests
        that wrote meanwhile (spool.py, group commit). Returns once this request's spans are on disk."""
        accepted = self.take(decoded)
        await self.spool.durable(accepted.ticket)
        return accepted

    def take(self, decoded: Decoded, now: float | None = None) -> Accepted:
        """A decoded request's fresh spans written to the spool (*not yet synced*: its `ticket` says up to
        where it must be) and added to their conversations. Its ticket covers every earlier append too, so
        a span already taken by a request still waiting for its sync is not answered before it is on disk.
        After a failed write or sync the spool is rewritten first (spool.py `broken`)."""
        now = time.monotonic() if now is None else now
        if self.spool.broken is not None:
            self._compact()
        if decoded.rejected:
            self.counts["rejected_spans"] += len(decoded.rejected_spans)
            self.counts["rejected_log_records"] += len(decoded.rejected_logs)
            first = decoded.rejected[0][1]
            self._problem(
                "rejected",
                f"rejected {len(decoded.rejected)} malformed span(s) or log record(s) of a request: {first}",
            )
        spans = list(decoded.spans.values())
        fresh = self.assembler.fresh([redacted(s, self.pseudonyms) for s in spans])
        self.counts["duplicates"] += len(spans) - len(fresh)
        self.assembler.add(fresh, now, self.spool.append(fresh))
        self.counts["spans"] += len(fresh)
        return Accepted(len(fresh), decoded, self.spool.written)

    def _problem(self, kind: str, message: str) -> None:
        """A notice for the operator (throttled), and the health figure's last problem."""
        self.last_problem = message
        self.notices.say(kind, f"collect: {message}")

    def _quarantine(self, key: str, spans: list[Span], exc: Exception, refs: list[Ref] | None = None) -> None:
        """A conversation whose closing raised: its spans (those read: `refs` names them all) and the error
        to the quarantine, journalled (a marker in folder QUARANTINED) so a restart does not replay it; the
        loop goes on."""
        self.counts["quarantined"] += 1
        refs = refs if refs is not None else [s.ref for s in spans]
        marker = Marker(key, QUARANTINED, "", refs)
        self.recent.append(marker)
        try:
            self.quarantine.keep(key, spans, exc)
            self.spool.mark([marker])
        except OSError as disk:
            self._problem("disk", f"cannot write the quarantine ({disk.strerror})")
        spans_named = ", ".join(f"{t}/{s}" for t, s in refs[:3]) + (" ..." if len(refs) > 3 else "")
        self._problem(
            "quarantined",
            f"conversation {key!r} (spans {spans_named}) could not be closed ({describe(exc)}); "
            f"quarantined in {self.quarantine.path}, the collector goes on",
        )

    # ---------------------------------------------------------------------------------------- close

    def tick(self, now: float | None = None, everything: bool = False) -> int:
        """Close the conversations idle long enough (all with `everything`); how many were written.

        Their markers are journalled together (one fsync), then their records appended: a crash in between
        is finished on the next start, and a record is never written before its marker."""
        now = time.monotonic() if now is None else now
        closing = []
        for conversation in self.assembler.due(now, everything):
            spans: list[Span] = []
            try:
                spans = self._spans(conversation)
                target = self.folders.target(datetime.now(UTC))
                scenario_id = self.folders.name_for(target, conversation.key)
                built = self._build(conversation.key, spans, scenario_id)
            except OSError:
                raise  # the disk (the spool unreadable): no marker, so the next start reopens it
            except Exception as exc:  # supervised: one conversation never stops the loop
                self._quarantine(conversation.key, spans, exc, list(conversation.spans))
                continue
            if built is None:
                continue
            target.taken.add(scenario_id)  # reserved: the next conversation of this key is `-2`
            marker = Marker(conversation.key, target.name, scenario_id, list(conversation.spans))
            closing.append((target, marker, spans, *built))
        self.spool.mark([marker for _, marker, _, _, _ in closing])
        for target, marker, spans, record, signals in closing:
            self.recent.append(marker)
            try:
                self.folders.write(target, record, signals)
            except OSError:
                raise  # the disk, not the conversation: the marker makes the next start write it
            except Exception as exc:
                self._quarantine(marker.key, spans, exc)
                continue
            self.counts["conversations"] += 1
            if self.judge is not None:
                try:
                    reasons = self.judge.offer(target.folder, record, signals)
                except Exception as exc:
                    self.counts["judge_errors"] += 1
                    self._problem(
                        "judge", f"conversation {record.id!r} was not offered to the judge ({describe(exc)})"
                    )
                    continue
                self.counts["sampled"] += bool(reasons)
        size = self.spool.size()
        # Past its limit, and at least half of it closed conversations: rewritten. (When the open spans alone
        # are past the limit, rewriting them every tick would cost more than the disk it saves.)
        if size > self.options.spool_limit and size > 2 * self._compacted:
            self._compact()
        if len(self.recent) > 2 * RECENT_MARKERS:
            self.recent = self.recent[-RECENT_MARKERS:]
        self.folders.flush(self._progress(), now=now)
        return len(closing)

    def _spans(self, conversation: OpenConversation) -> list[Span]:
        """An open conversation's spans, read back from the spool (assembler.py holds where they are)."""
        return self._read(list(conversation.spans.values()))

    def _read(self, helds: list[Held]) -> list[Span]:
        """Held spans, read in one pass over the spool (in file order): each its first line, with the later
        ones' events and late attributes merged in."""
        places = sorted({p for held in helds for p in held.parts if isinstance(p, tuple)})
        lines = dict(zip(places, self.spool.read(places), strict=True))
        spans = []
        for held in helds:
            parts = [
                lines[p] if isinstance(p, tuple) else replace(p, events=list(p.events)) for p in held.parts
            ]
            span = parts[0]
            for later in parts[1:]:
                _merge_into(span, later)
            spans.append(span)
        return spans

    def _compact(self) -> None:
        """The spool rewritten with the open spans' lines only, copied one at a time (never all read at
        once), and the assembler told where they now are."""
        helds = self.assembler.held()
        places = self.spool.compact_held([h.parts for h in helds], self.recent[-RECENT_MARKERS:])
        for held, moved in zip(helds, places, strict=True):
            held.parts = list(moved)
        self._compacted = self.spool.size()

    def _build(
        self, key: str, spans: list[Span], scenario_id: str
    ) -> tuple[ConversationRecord, dict[str, Any]] | None:
        """The conversation's record and quality signals; None (counted, with the reason) when the spans
        hold no conversation."""
        from simulator.traces.records import ConvertOptions, to_record

        parsed = conversations_from_spans(spans, {s.ref: key for s in spans}, "collect", Parsed([]))
        self.counts["problems"] += len(parsed.problems)
        if not parsed.conversations:
            self.counts["no_conversation"] += 1
            self._skip(key, len(spans), parsed)
            return None
        found = parsed.conversations[0]
        if self.options.exclude_system:
            found.system = []
        options = ConvertOptions(
            now=datetime.now(UTC),
            exclude_system=self.options.exclude_system,
            decision_tool=self.options.decision_tool,
        )
        try:
            record = to_record(found, scenario_id, options)
        except ValueError as exc:
            self.counts["skipped"] += 1
            self.skipped[str(exc)] += 1
            self._problem("skipped", f"conversation {key!r} not written: {exc}")
            return None
        signals = quality_signals(record, spans, self.policy.signals)
        if self.options.expected_attribute is not None:
            signals[EXPECTED_SIGNAL] = expected_level(spans, self.options.expected_attribute)
        return record, signals

    def _skip(self, key: str, spans: int, parsed: Parsed) -> None:
        """Say why a closed conversation held nothing to write: its LLM calls carried no messages (and the
        setting that records them), malformed message attributes, or no LLM call at all."""
        if parsed.silence:
            calls = sum(parsed.silence.values())
            why = f"its {calls} LLM call(s) hold no messages: " + "; or ".join(
                hint for hint, _ in parsed.silence.most_common()
            )
            self.counts["skipped_no_content"] += 1
            self.skipped["LLM calls without their messages"] += 1
        elif parsed.problems:
            why = f"its message attributes are malformed ({parsed.problems[0].reason})"
            self.skipped["malformed message attributes"] += 1
        else:
            why = "none of its spans is an LLM call with messages"
            self.skipped["no LLM call"] += 1
        self._problem("skipped", f"conversation {key!r} ({spans} spans) not written: {why}")

    def _progress(self) -> dict[str, Any]:
        """What the manifest's `source` says of this collector process (since it started): redactions by
        label over every span it accepted, and its counts (spans, duplicates, refusals, conversations)."""
        return {
            "redacted_since_start": dict(self.redactor.counts),
            "collected_since_start": dict(self.counts),
            "skipped_since_start": dict(self.skipped),
        }

    def check_alerts(self) -> list[dict[str, Any]]:
        """Evaluate the alert rules on the newest conversations (fired alerts are sent and returned)."""
        if self.alerts is None:
            return []
        from simulator.collect.trends import FollowedFolders, load_observations

        # The newest conversations, read further back until every rule has its window and reference of
        # conversations that count for it (a criterion counts only the judged sample), or all are read.
        # Each folder is read again only where its files grew since the last check (trends.FollowedFolders).
        if self.followed is None:
            self.followed = FollowedFolders()
        wanted = self.alerts.window + self.alerts.reference
        last = wanted
        while True:
            observations = load_observations(self.folders.folders(), last, self.followed)
            if len(observations) < last or self.alerts.counted(observations) >= wanted:
                break
            last *= 4
        self.followed.forget_unread()
        fired: list[dict[str, Any]] = self.alerts.evaluate(observations)
        return fired

    def stop(self) -> None:
        """Stop writing: manifests flushed; open conversations stay in the spool for the next start."""
        self.folders.flush(self._progress())
        self.folders.stop()
        self.spool.close()
        self.started = False

    def status(self) -> dict[str, Any]:
        return {
            "open_conversations": len(self.assembler.open),
            "open_spans": self.assembler.spans,
            "counts": dict(self.counts),
            "skipped": dict(self.skipped),
            "health": {
                "quarantined": self.counts["quarantined"],
                "close_loop_errors": self.counts["loop_errors"],
                "rejected_spans": self.counts["rejected_spans"],
                "rejected_log_records": self.counts["rejected_log_records"],
                "damaged_journal_lines": self.counts["damaged_journal_lines"],
                "judge_failures": self.judge.counts["failed"] if self.judge is not None else 0,
                "last_judge_failures": list(self.judge.failures) if self.judge is not None else [],
                "last_problem": self.last_problem,
            },
            "judge": dict(self.judge.counts) if self.judge is not None else None,
        }

    def disk_failed(self, exc: OSError) -> None:
        """The spool could not be written or synced: said (throttled) and kept as the last problem; the
        requests it covered were refused, and the next one rewrites the spool first (`take`)."""
        self._problem(
            "disk", f"cannot write the spool to disk ({exc.strerror or exc}); requests refused (503)"
        )

    def loop_failed(self, exc: Exception) -> None:
        """The close loop's guard: an error outside any one conversation (the disk, a manifest) is said and
        counted, and the loop runs again at its next tick."""
        self.counts["loop_errors"] += 1
        self._problem("loop", f"the close loop failed ({describe(exc)}); it runs again at the next tick")


EXPECTED_SIGNAL = "expected"  # the signals.jsonl field holding the trace's expected level (None: absent)


def _merge_into(held: Span, span: Span) -> None:
    """A second spool line for a span: its log events (or its attributes, when the first had none)."""
    if span.attributes and not held.attributes:
        held.attributes, held.resource, held.start, held.end = (
            span.attributes,
            span.resource,
            span.start,
            span.end,
        )
        held.error, held.scope = span.error, span.scope
    seen = {(n, t) for n, t, _ in held.events}
    held.events += [e for e in span.events if (e[0], e[1]) not in seen]
