"""Rates over time for collected conversations: per criterion (fail rate) and per quality signal, by day,
week or every N conversations, with clustered intervals and a test of change against a reference window.

The unit is the conversation; conversations of one user (`user.id` / `enduser.id` in the spans) form one
cluster, so a user with many conversations does not narrow the interval as if each were independent
(the clustered interval of simulator/stats/clustered.py, users in place of scenarios). A criterion's
rate counts pass and fail verdicts only: not applicable, errors and not judged are left out, and counted.
"""

from __future__ import annotations

__all__ = [
    "FollowedFolders",
    "Observation",
    "TrendRow",
    "counts_for",
    "left_out",
    "load_observations",
    "metric_names",
    "rate_of",
    "trend_rows",
    "unit_of",
]

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from simulator.collect.folders import SIGNALS
from simulator.collect.signals import BOOLEAN_SIGNALS
from simulator.collect.spool import UNREADABLE, Damaged
from simulator.collect.supervise import LOGGER
from simulator.config.outcome_source import ERROR, triage_error, under_triaged
from simulator.errors import UserError
from simulator.readers import byte_lines
from simulator.record.folder import LABELS, VERDICTS, RunFolder
from simulator.record.labelled_levels import read_labelled_levels
from simulator.record.models import Verdict
from simulator.record.selection import select_verdicts
from simulator.stats.rates import RateView, rate_view
from simulator.stats.twosample import fisher_exact, newcombe_difference

# The entries of an observation's results that hold its decided outcome (a level, `other`, `no decision`) when
# judging recorded one (outcome sources, docs/outcome-sources.md), the floor its patient's red flags set, and
# the exact expected level (a clinician's label, record/labelled_levels.py, else the trace's `--expected-attribute`);
# `=` keeps them apart from criterion ids.
DECIDED = "=outcome"
FLOOR = "=floor"
EXPECTED = "=expected"
# Live triage rates (analysis/outcome.py defines them for runs; the comparison is judging/outcome_reader.py's):
# under-triage against the expected level, else the red-flag floor; over-triage against an expected level only.
TRIAGE_METRICS = ("under_triage", "under_triage_decided", "over_triage")


@dataclass
class Observation:
    """One collected conversation: when, whose, its signals and its latest verdict per criterion."""

    conversation: str  # folder/conversation id
    started_at: datetime
    cluster: str
    signals: dict[str, object]
    results: dict[str, str] = field(default_factory=dict)  # criterion -> pass/fail/not_applicable/...
    levels: list[str] = field(default_factory=list)  # the suite's outcome levels, lowest first


def _results(verdicts: Iterable[Verdict]) -> dict[str, dict[str, str]]:
    """Per conversation, each criterion's result, from the verdicts `simulator report` counts of a folder
    (record/selection.py: its latest judge set, one verdict per item, no samples, no fidelity checks)."""
    latest: dict[str, dict[str, str]] = defaultdict(dict)
    for verdict in select_verdicts(verdicts).verdicts:
        latest[verdict.conversation_id][verdict.criterion_id] = verdict.result
        if verdict.outcome is not None:
            results = latest[verdict.conversation_id]
            results[DECIDED] = verdict.outcome.value
            flag = verdict.outcome.red_flag
            if flag is not None:
                results[FLOOR] = flag.value
            if isinstance(verdict.expected, str):
                results[EXPECTED] = verdict.expected
    return latest


def folder_levels(folder: Path) -> list[str] | None:
    """The outcome levels (lowest first) of the suite a collected folder is judged with: [] for a suite
    without outcome levels, None while the manifest names no suite (or cannot be read)."""
    try:
        suite = RunFolder.open(folder).read_manifest().suite
    except UserError:
        return None
    if suite is None:
        return None
    return list(suite.outcome.levels) if suite.outcome is not None else []


def folder_labelled_levels(folder: Path) -> dict[str, str]:
    """The expected levels clinicians labelled in a collected folder (conversation id -> level), on its
    suite's outcome criterion; {} while the manifest names no suite with an outcome."""
    try:
        suite = RunFolder.open(folder).read_manifest().suite
    except UserError:
        return {}
    if suite is None or suite.outcome is None:
        return {}
    return read_labelled_levels(folder, f"outcome.{suite.outcome.key}").levels


def _with_label(results: dict[str, str], level: str | None) -> dict[str, str]:
    """A conversation's results with its clinician-labelled level as the expected one (it outranks the
    trace's and the red-flag floor); the same dict when it has none."""
    return results if level is None else {**results, EXPECTED: level}


def _observation(folder: Path, line: bytes) -> Observation | None:
    """One line of a folder's signals.jsonl as an observation; None for a line that is not one (not JSON,
    no conversation id, no start time with its time zone)."""
    try:
        signals = json.loads(line)
        started = datetime.fromisoformat(signals["started_at"])
        cid = str(signals["conversation_id"])
    except UNREADABLE:
        return None
    if started.tzinfo is None:  # a time no other can be ordered with
        return None
    cluster = str(signals.get("user") or f"{folder.name}/{cid}")
    return Observation(f"{folder.name}/{cid}", started, cluster, signals)


# The most of a folder's signals.jsonl read at once: a folder holds --roll-every conversations (10,000 by
# default) of a few hundred bytes each.
MAX_SIGNALS_BYTES = 1_000_000_000


def _signals(folder: Path, start: int = 0, first: int = 1) -> tuple[list[Observation], int, int]:
    """The observations of a folder's signals.jsonl from byte `start` (line number `first`), read bounded,
    and where its whole lines end (bytes, lines): a last line still being written is read next time. A line
    that is not an observation is left out of the rates, and said, never in silence."""
    path = folder / SIGNALS
    out: list[Observation] = []
    damaged = Damaged(path, "the conversations on them are left out of the rates")
    end, lines = start, 0
    advice = "it is not a file the collector wrote; move it away"
    for _, line in byte_lines(path, max_total=MAX_SIGNALS_BYTES, advice=advice, start=start):
        if not line.endswith(b"\n"):
            break
        end, lines = end + len(line), lines + 1
        if not line.strip():
            continue
        observation = _observation(folder, line)
        if observation is None:
            damaged.lines.append(first + lines - 1)
        else:
            out.append(observation)
    if damaged.lines:
        LOGGER.warning("collect: %s", damaged.note())
    return out, end, first + lines


class _Followed:
    """One folder as last read: how far into each file, what its lines gave."""

    def __init__(self) -> None:
        self.signals_at = (0, 0)  # (inode, byte offset) of signals.jsonl read so far
        self.signals_line = 1  # the number of the line at that offset
        self.verdicts_at = (0, 0)
        self.observations: list[Observation] = []
        self.verdicts: list[Verdict] = []
        self.results: dict[str, dict[str, str]] = {}
        self.levels: list[str] | None = None  # read from the manifest once it names the suite
        self.labels_at = (0, 0)  # (inode, size) of labels.jsonl as last read
        self.labelled: dict[str, str] = {}  # clinician-labelled expected levels, by conversation id


class FollowedFolders:
    """The collected folders as last read, each read again only from where its files grew: the collector
    checks its alerts on every tick, and a tick should cost the conversations and verdicts written since
    the last one, not every folder again. A file rewritten (a re-judge drops verdicts) is read afresh.

    Not thread-safe: one reader (the collector's alert check) at a time."""

    def __init__(self) -> None:
        self._folders: dict[Path, _Followed] = {}
        self._read: set[Path] = set()  # the folders read since the last `forget_unread`

    def observations(self, folder: Path) -> list[Observation]:
        """The folder's conversations with their current results (the same objects while nothing changed)."""
        state = self._folders.setdefault(folder, _Followed())
        self._read.add(folder)
        known = self._read_signals(folder, state)  # observations before these are unchanged
        if self._read_verdicts(folder, state):
            state.results, known = _results(state.verdicts), 0
        if state.levels is None:  # read again until the manifest names its suite
            state.levels, known = folder_levels(folder), 0
        if self._read_labels(folder, state):
            known = 0
        for observation in state.observations[known:]:
            cid = observation.conversation.partition("/")[2]
            observation.results = _with_label(state.results.get(cid, {}), state.labelled.get(cid))
            observation.levels = state.levels or []
        return state.observations

    @staticmethod
    def _read_labels(folder: Path, state: _Followed) -> bool:
        """Read labels.jsonl again when it changed (a clinician labelled a level); whether it did."""
        try:
            stat = (folder / LABELS).stat()
        except OSError:
            return False
        if (stat.st_ino, stat.st_size) == state.labels_at:
            return False
        state.labels_at = (stat.st_ino, stat.st_size)
        state.labelled = folder_labelled_levels(folder)
        return True

    def forget_unread(self) -> None:
        """Forget the folders not read since the last call (rolled out of every window): memory follows
        the window, not the collector's age."""
        self._folders = {path: state for path, state in self._folders.items() if path in self._read}
        self._read = set()

    def _read_signals(self, folder: Path, state: _Followed) -> int:
        """Read what signals.jsonl gained; how many observations were already known."""
        path = folder / SIGNALS
        inode, offset = _where(path, state.signals_at)
        if inode == 0:
            return len(state.observations)
        if offset == 0:
            state.observations, state.signals_line = [], 1
        known = len(state.observations)
        fresh, end, state.signals_line = _signals(folder, offset, state.signals_line)
        state.observations += fresh
        state.signals_at = (inode, end)
        return known

    def _read_verdicts(self, folder: Path, state: _Followed) -> bool:
        """Read what verdicts.jsonl gained; whether the folder's results may have changed."""
        inode, offset = _where(folder / VERDICTS, state.verdicts_at)
        if inode == 0:
            return False
        if offset == 0:
            state.verdicts = []
        fresh, end = RunFolder.open(folder).verdicts_after(offset)
        state.verdicts += fresh
        state.verdicts_at = (inode, end)
        return bool(fresh) or offset == 0


def _where(path: Path, last: tuple[int, int]) -> tuple[int, int]:
    """(inode, offset to read from): 0 for a new or rewritten file; (0, 0) when there is none."""
    try:
        stat = path.stat()
    except OSError:
        return 0, 0
    inode, offset = last
    if stat.st_ino != inode or stat.st_size < offset:
        return stat.st_ino, 0
    return inode, offset


def _read_folder(folder: Path) -> list[Observation]:
    """A folder's conversations with their results, read whole."""
    path = folder / SIGNALS
    if not path.exists():
        return []
    results = _results(RunFolder.open(folder).verdicts())
    levels = folder_levels(folder) or []
    labelled = folder_labelled_levels(folder)
    batch, _, _ = _signals(folder)
    for observation in batch:
        cid = observation.conversation.partition("/")[2]
        observation.results = _with_label(results.get(cid, {}), labelled.get(cid))
        observation.levels = levels
    return batch


def load_observations(
    folders: Sequence[Path], last: int | None = None, followed: FollowedFolders | None = None
) -> list[Observation]:
    """Every conversation of the collector's folders in time order (the `last` ones only, when given:
    the newest folders are read first and the rest left unread). With `followed`, each folder is read
    only where it grew since the last call."""
    out: list[Observation] = []
    for folder in reversed(list(folders)):
        if not (folder / SIGNALS).exists():
            continue
        batch = followed.observations(folder) if followed is not None else _read_folder(folder)
        out = batch + out
        if last is not None and len(out) >= last:
            break
    out.sort(key=lambda o: o.started_at)
    return out[-last:] if last is not None else out


def metric_names(observations: Sequence[Observation], criteria: Sequence[str] = ()) -> list[str]:
    """The metrics an alert or a trend may name: `fail_rate:<criterion>`, `signal:<name>` and, where judging
    recorded the outcome, `outcome:<level>` (the share of conversations the bot sent to that level), and
    `under_triage`, `under_triage_decided` (where a conversation had a red flag or an expected level) and
    `over_triage` (where one had an expected level)."""
    judged = {c for o in observations for c in o.results if not c.startswith("=")} | set(criteria)
    decided = sorted({str(o.results[DECIDED]) for o in observations if DECIDED in o.results})
    under = any(FLOOR in o.results or EXPECTED in o.results for o in observations)
    over = any(EXPECTED in o.results for o in observations)
    return (
        [f"fail_rate:{c}" for c in sorted(judged)]
        + [f"signal:{s}" for s in BOOLEAN_SIGNALS]
        + [f"outcome:{level}" for level in decided]
        + (list(TRIAGE_METRICS[:2]) if under else [])
        + (["over_triage"] if over else [])
    )


def _triage(observation: Observation, metric: str) -> bool | None:
    """Under- or over-triage of one conversation: against its expected level (a clinician's label, else
    the trace's), else, for
    under-triage, the floor its patient's red flags set. None (left out): no outcome recorded (an errored
    conversation, or one not read), no expected level or red flag, an expected level that is not a level;
    for `under_triage_decided` also no decision; for `over_triage` a floor alone (it cannot say "too high")."""
    levels = observation.levels
    actual = observation.results.get(DECIDED)
    exact = _level(observation.results.get(EXPECTED), levels)
    expected = exact if exact is not None else _level(observation.results.get(FLOOR), levels)
    if actual is None or actual == ERROR or expected is None:
        return None
    if metric == "over_triage":
        return None if exact is None else triage_error(actual, exact, levels) == "over"
    if metric == "under_triage_decided" and actual not in levels:
        return None
    return under_triaged(actual, expected, levels)


def _level(value: str | None, levels: list[str]) -> str | None:
    """The level a recorded value names (case and spaces aside, as outcome checks compare); None if none."""
    if value is None:
        return None
    return next((level for level in levels if level.casefold() == value.strip().casefold()), None)


def _outcome(observation: Observation, metric: str) -> bool | None:
    """True for a failure / a signal present, False for a pass / absent, None when it does not count."""
    kind, _, name = metric.partition(":")
    if kind == "signal":
        return bool(observation.signals.get(name))
    if kind == "outcome":  # the share sent to this level, of the conversations with a recorded outcome
        decided = observation.results.get(DECIDED)
        return None if decided is None else decided == name
    if kind in TRIAGE_METRICS:
        return _triage(observation, kind)
    result = observation.results.get(name)
    return {"fail": True, "pass": False}.get(result or "")


def counts_for(observation: Observation, metric: str) -> bool:
    """True when the conversation counts in the metric's rate (in its n)."""
    return _outcome(observation, metric) is not None


def unit_of(metric: str) -> str:
    """What a metric's n counts, in words."""
    kind = metric.partition(":")[0]
    if kind == "signal":
        return "conversations"
    if kind == "outcome":
        return "conversations with a recorded outcome"
    if kind == "over_triage":
        return "conversations with a recorded outcome and an exact expected level (clinician-labelled or from the trace)"
    if kind == "under_triage_decided":
        return "conversations the bot advised a level, with an expected level or a red flag"
    if kind == "under_triage":
        return "conversations with a recorded outcome and an expected level or a red flag"
    return "conversations judged pass or fail on the criterion"


def left_out(metric: str) -> str:
    """What a metric's rate leaves out of its n, in words (every live rate says so)."""
    kind = metric.partition(":")[0]
    if kind == "signal":
        return "nothing: every collected conversation counts"
    if kind == "outcome":
        return (
            "conversations with no recorded outcome (errored, or not read: a `judge` source reads the sample)"
        )
    if kind in TRIAGE_METRICS:
        base = "conversations with no recorded outcome (errored or not read)"
        if kind == "over_triage":
            return (
                f"{base}, and those without an exact expected level, clinician-labelled or from the trace "
                "(a red-flag floor cannot show over-triage)"
            )
        decided = ", and those the bot left with no decision" if kind == "under_triage_decided" else ""
        return f"{base}, those with neither an expected level nor a red flag in the patient's words{decided}"
    return "conversations without a pass or fail verdict for the criterion (not judged, n/a, error)"


@dataclass
class MetricRate:
    """A metric's rate over some conversations, as stats/rates.py's RateView clustered by user (its
    `clustered.scenarios` counts users here), with what the rate left out and the conversations behind it.
    `low`/`high` are the user-clustered 95% interval, the one alerts fire on."""

    metric: str
    view: RateView
    left_out: int
    conversations: list[str]  # the ones counted as failures / with the signal

    @property
    def k(self) -> int:
        return self.view.k

    @property
    def n(self) -> int:
        return self.view.n

    @property
    def rate(self) -> float | None:
        return self.view.rate

    @property
    def clusters(self) -> int:
        return self.view.clustered.scenarios if self.view.clustered is not None else 0

    @property
    def low(self) -> float:
        return self.view.clustered.low if self.view.clustered is not None else 0.0

    @property
    def high(self) -> float:
        return self.view.clustered.high if self.view.clustered is not None else 1.0


def rate_of(observations: Sequence[Observation], metric: str) -> MetricRate:
    """The metric's rate over these conversations, its clustered 95% interval and what it left out."""
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    hits: list[str] = []
    left_out = 0
    for observation in observations:
        outcome = _outcome(observation, metric)
        if outcome is None:
            left_out += 1
            continue
        cell = per[observation.cluster]
        cell[0] += int(outcome)
        cell[1] += 1
        if outcome:
            hits.append(observation.conversation)
    pairs = [(a, b) for a, b in per.values()]
    view = rate_view(sum(a for a, _ in pairs), sum(b for _, b in pairs), per_scenario=pairs, unit="users")
    return MetricRate(metric, view, left_out, hits)


@dataclass
class TrendRow:
    """One metric in one period, and its change against the reference window."""

    period: str
    rate: MetricRate
    reference: MetricRate | None = None
    p_value: float | None = None
    difference: tuple[float, float] | None = None  # 95% interval of (this period - reference)


def _period(observation: Observation, period: str, index: int) -> str:
    if period == "day":
        return observation.started_at.strftime("%Y-%m-%d")
    if period == "week":
        year, week, _ = observation.started_at.isocalendar()
        return f"{year}-W{week:02d}"
    size = int(period)
    return f"#{index // size * size + 1}-{index // size * size + size}"


def trend_rows(
    observations: Sequence[Observation],
    metrics: Sequence[str],
    period: str = "day",
    reference: Sequence[Observation] | None = None,
) -> list[TrendRow]:
    """Each metric per period; each period tested against `reference` (default: the first period)."""
    if period not in ("day", "week") and not (period.isdigit() and int(period) > 0):
        raise ValueError(f"period {period!r}: use day, week or a number of conversations")
    groups: dict[str, list[Observation]] = {}
    for index, observation in enumerate(observations):
        groups.setdefault(_period(observation, period, index), []).append(observation)
    first = next(iter(groups.values()), [])
    base = list(reference) if reference is not None else first
    rows = []
    for metric in metrics:
        ref = rate_of(base, metric)
        for name, group in groups.items():
            row = TrendRow(name, rate_of(group, metric), ref)
            row.p_value, row.difference = change(row.rate, ref)
            rows.append(row)
    return rows


def change(current: MetricRate, reference: MetricRate) -> tuple[float | None, tuple[float, float] | None]:
    """Fisher's exact test of the two rates, and Newcombe's 95% interval of their difference."""
    if not current.n or not reference.n:
        return None, None
    p = fisher_exact(current.k, current.n - current.k, reference.k, reference.n - reference.k)
    diff = newcombe_difference(current.k, current.n, reference.k, reference.n)
    return p, (diff.low, diff.high)
