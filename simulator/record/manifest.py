"""The run manifest: what was run and how, typed and versioned.

It is written first and updated as a run goes, and it is the only description of a run that readers use:
resume, re-judge, report, compare and labels all rebuild what they need from it (`Manifest.rebuild_suite`),
never from today's environment or today's scenario files. It never holds a secret.
"""

from __future__ import annotations

__all__ = [
    "SCHEMA_VERSION",
    "CallCounts",
    "CriterionEntry",
    "JudgeSet",
    "LimitCounts",
    "Manifest",
    "PromptEntry",
    "RoleModels",
    "RunCounts",
    "RunStatus",
    "ScenarioEntry",
    "Session",
    "ShardInfo",
]

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from simulator import __version__
from simulator.config.bot_identity import BotIdentity
from simulator.config.expected import Expected
from simulator.config.suite import Suite
from simulator.models import StrictModel as _Record
from simulator.models import empty_dict, empty_list
from simulator.plural import plural
from simulator.record.models import SCHEMA_VERSION

# A count of things (conversations, calls): never negative.
Count = Annotated[int, Field(ge=0)]
RunKind = Literal["simulation", "golden", "imported"]
RunStatus = Literal["running", "complete", "interrupted", "aborted"]


class PromptEntry(_Record):
    """A prompt template as it was used, and its hash."""

    template: str
    hash: str


class ScenarioEntry(_Record):
    """One scenario of the run as it was when the run started: reports never depend on files edited later."""

    id: str
    file: str | None = None
    line: int | None = None
    sha256: str | None = None
    expected: Expected = Field(default_factory=empty_dict)
    tags: list[str] = Field(default_factory=empty_list)
    # Set for a golden item (a one-turn scenario with a scripted user): its intent and kind.
    intent: str | None = None
    item_kind: str | None = None
    # A factorial variant: the base scenario it was derived from and its level of each factor.
    base: str | None = None
    factors: dict[str, str] = Field(default_factory=empty_dict)


class CriterionEntry(_Record):
    """A criterion's wording as judged, so labelling sheets and reports can show the rubric."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    id: str
    criterion: str
    pass_: str = Field(alias="pass")
    fail: str
    not_applicable: str | None = None
    file: str | None = None
    line: int | None = None
    sha256: str | None = None
    severity: str | None = None
    category: str | None = None
    applies_to: list[str] = Field(default_factory=empty_list)
    points: int | None = None
    applies_when: dict[str, Any] | None = None
    aggregate: str | None = None


class JudgeSet(_Record):
    """One judge set (prompt, criteria, model, settings): every verdict carries its hash."""

    hash: str
    model: str | None = None
    # A jury's models, samples per item and aggregation rules (absent: one model, one sample).
    models: list[str] = Field(default_factory=empty_list)
    samples: int = 1
    aggregate: dict[str, str] = Field(default_factory=empty_dict)
    temperature: float | None = None
    max_tokens: int | None = None
    paths: list[str] = Field(default_factory=empty_list)
    prompt_hash: str | None = None
    code_checks: int | str | None = None
    criteria: list[CriterionEntry] = Field(default_factory=empty_list)
    warnings: list[str] = Field(default_factory=empty_list)
    not_judged_reason: str | None = None
    judged_at: datetime | None = None

    def criterion(self, criterion_id: str) -> CriterionEntry | None:
        return next((c for c in self.criteria if c.id == criterion_id), None)


class RoleModels(_Record):
    """The model each role actually used, resolved (`auto` is never stored)."""

    user: str
    bot: str
    judge: str | None = None


class CallCounts(_Record):
    """What one provider's calls did in one session, over every role."""

    attempts: Count = 0  # requests sent, retries included
    retries: Count = 0
    rate_limits: Count = 0
    transient_errors: Count = 0
    failed: Count = 0
    cache_hits: dict[str, Count] = Field(default_factory=empty_dict)  # by role
    cache_misses: dict[str, Count] = Field(default_factory=empty_dict)

    def __add__(self, other: CallCounts) -> CallCounts:
        def add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
            return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}

        return CallCounts(
            attempts=self.attempts + other.attempts,
            retries=self.retries + other.retries,
            rate_limits=self.rate_limits + other.rate_limits,
            transient_errors=self.transient_errors + other.transient_errors,
            failed=self.failed + other.failed,
            cache_hits=add(self.cache_hits, other.cache_hits),
            cache_misses=add(self.cache_misses, other.cache_misses),
        )


class LimitCounts(_Record):
    """What one provider's adaptive connection limit did in one session, and the budget its calls were
    paced to at the end: requests and tokens per minute, and where each came from (`suite`, `headers`,
    `429 message`, or `found from 429s` when the provider said nothing but 429s)."""

    max_connections: int
    final: int
    lowest: int
    cuts: int
    rpm: float | None = None
    rpm_source: str | None = None
    tpm: float | None = None
    tpm_source: str | None = None
    rate_cuts: int | None = None  # times a rate found from 429s was lowered (or set)
    observed_rpm: float | None = None  # what the provider delivered while pacing held calls back
    observed_tpm: float | None = None


class Session(_Record):
    """One process that worked on the run (`run`, `run --resume`, `judge`). Its counts are checkpointed as
    it goes, so a session killed with `kill -9` keeps what it counted up to its last checkpoint."""

    command: Literal["run", "resume", "judge", "import", "merge", "collect"] = "run"
    started_at: datetime
    checkpoint_at: datetime | None = None
    ended_at: datetime | None = None  # None after the run ended: the session was killed
    calls: dict[str, CallCounts] = Field(default_factory=empty_dict)  # by provider
    limits: dict[str, LimitCounts] = Field(default_factory=empty_dict)
    # Operational settings a resume changed ({"providers.openai.rpm": [null, 600]}): never a result's.
    settings_changed: dict[str, list[Any]] = Field(default_factory=empty_dict)
    # The most conversations worked on at once: above `concurrency` while calls waited out a retry and
    # their conversations lent their places (optional; None in sessions that did not count it).
    most_open: int | None = None
    # Credentials of a well-known format that this session replaced by their placeholder in what it wrote
    # (records, verdicts, raw exchanges, a started bot's bot.log), by label (`record.redact.CREDENTIALS`):
    # how many different ones it replaced while it ran. A configured secret is `[redacted]` and not
    # counted; a matrix cell's session counts none (its cells share one process), like its calls.
    redacted: dict[str, Count] = Field(default_factory=empty_dict)


class ShardInfo(_Record):
    """This run folder holds the `index`-th of `count` disjoint parts of a plan (`simulator merge` joins
    them); `plan_hash` is the whole plan's, the same in every shard."""

    index: int = Field(ge=1)
    count: int = Field(ge=1)
    plan_hash: str
    total: int = 0  # items in the whole plan


class RunCounts(_Record):
    """What the run folder holds, as of the last manifest write."""

    conversations: Count = 0
    stop_reasons: dict[str, Count] = Field(default_factory=empty_dict)
    errors: Count = 0


class Unseal(_Record):
    """Who unsealed a run's held-out conversations, when and why (`simulator unseal`)."""

    by: str = Field(min_length=1)
    at: datetime
    reason: str = ""


class Manifest(_Record):
    """What was run and how: enough to reproduce, resume, re-judge and compare it."""

    schema_version: int = SCHEMA_VERSION
    kind: RunKind = "simulation"
    run_id: str
    status: RunStatus = "running"
    created_at: datetime
    ended_at: datetime | None = None
    package_version: str = __version__
    # The simulator's own commit (None when installed as a package: `package_version` says which), not the
    # bot's (`bot_identity`). Runs written before `suite_git_commit` existed hold the suite folder's here.
    git_commit: str | None = None
    suite_git_commit: str | None = None  # the commit of the checkout holding the suite file, when in git
    # Which release of the bot was tested, as its kind can tell (config/bot_identity.py).
    bot_identity: BotIdentity | None = None
    suite_file: str | None = None
    suite_hash: str | None = None
    # The suite as run, with literal secrets redacted (`${VAR}` templates kept) and flags applied.
    suite: Suite | None = None
    # The content hash of each file the suite's settings name, by setting ({"user.vocabulary": "sha256:..."}),
    # as the run read it, and where a file runs write is ({"cache.path": "place:c.sqlite"}, relative to the
    # suite's folder): runs are compared on these, not on how the paths are spelled. None: a run made
    # before they were recorded, whose paths are compared as written (config/named_files.py).
    setting_files: dict[str, str] | None = None
    models: RoleModels
    prompts: dict[str, PromptEntry] = Field(default_factory=empty_dict)
    scenarios: list[ScenarioEntry] = Field(default_factory=empty_list)
    planned: Count = 0
    # Every judge set used on the run, oldest first; the last one is the current set.
    judge_sets: list[JudgeSet] = Field(default_factory=empty_list)
    counts: RunCounts = Field(default_factory=RunCounts)
    sessions: list[Session] = Field(default_factory=empty_list)
    # Free-form provenance for runs that were not simulated here (imported traces, merged shards).
    source: dict[str, Any] = Field(default_factory=empty_dict)
    shard: ShardInfo | None = None
    # Held-out transcripts are sealed from every reader until someone unseals the run (record/seal.py).
    unsealed: list[Unseal] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _holds_what_its_run_could(self) -> Manifest:
        """What the run's own suite bounds: the planned count (its repeats of its scenarios), each scenario's
        expected level (one the suite declares), and a simulated run's scenarios and judge set (it records
        both when it starts). An imported run's figures come from its traces, which set no such bounds."""
        if self.kind == "imported" or self.suite is None:
            return self
        if not self.scenarios:
            _refuse("scenarios", "should list the run's scenarios (a run records them when it starts)")
        if not self.judge_sets:
            _refuse("judge_sets", "should hold the judge set the run used (a run records it when it starts)")
        most = self.suite.runs * len(self.scenarios)
        if self.planned > most:
            _refuse(
                "planned",
                f"should be at most {most}, the suite's {plural(self.suite.runs, 'run')} of the {len(self.scenarios)} "
                "scenarios the manifest lists",
            )
        outcome = self.suite.outcome
        for number, entry in enumerate(self.scenarios):
            if outcome is not None and outcome.key in entry.expected:
                problem = outcome.not_a_level(entry.expected[outcome.key])
                if problem is not None:
                    _refuse(("scenarios", number, "expected", outcome.key), problem)
        return self

    @property
    def judge_set(self) -> JudgeSet | None:
        """The current judge set (the last one used), if any."""
        return self.judge_sets[-1] if self.judge_sets else None

    def add_judge_set(self, judge_set: JudgeSet) -> None:
        """Record a judge set as the current one (kept once; a set used again moves to the end)."""
        self.judge_sets = [s for s in self.judge_sets if s.hash != judge_set.hash] + [judge_set]

    def criterion(self, criterion_id: str) -> CriterionEntry | None:
        """A criterion's recorded wording, from the most recent judge set that had it."""
        for judge_set in reversed(self.judge_sets):
            found = judge_set.criterion(criterion_id)
            if found is not None:
                return found
        return None

    def scenario(self, scenario_id: str) -> ScenarioEntry | None:
        return next((s for s in self.scenarios if s.id == scenario_id), None)

    def total_calls(self) -> dict[str, CallCounts]:
        """Calls per provider over every session of the run."""
        total: dict[str, CallCounts] = {}
        for session in self.sessions:
            for provider, counts in session.calls.items():
                total[provider] = total.get(provider, CallCounts()) + counts
        return total

    def cache_hits(self) -> dict[str, int]:
        """Calls answered from the response cache over every session, by role."""
        hits: dict[str, int] = {}
        for counts in self.total_calls().values():
            for role, n in counts.cache_hits.items():
                hits[role] = hits.get(role, 0) + n
        return hits

    def killed_sessions(self) -> list[Session]:
        """Sessions that never closed (killed); their call counts stop at their last checkpoint."""
        open_sessions = [s for s in self.sessions if s.ended_at is None]
        if self.status == "running" and open_sessions:
            open_sessions = open_sessions[:-1]  # the last one may still be going
        return open_sessions

    def scenarios_in_files(self) -> bool:
        """Whether the run's scenarios can be read again (resume): from files, not given in code."""
        return self.suite_file is not None or any(entry.file for entry in self.scenarios)

    @property
    def matrix_cell(self) -> str | None:
        """The id of the matrix cell this run is (`source.matrix.cell`); None for a run of its own."""
        matrix = self.source.get("matrix")
        cell = matrix.get("cell") if isinstance(matrix, dict) else None
        return cell if isinstance(cell, str) else None

    def rebuild_suite(self, folder: Path, *, to_run: bool = True) -> Suite:
        """The suite this run was made with, as recorded: the one constructor that resume, re-judge and
        reports use. The simulated user is the model the run resolved, never today's `auto`. `to_run=False`:
        only to compare another suite with (a URL whose secret was written literally is then no refusal)."""
        from simulator.errors import UserError

        if self.suite is None:
            raise UserError(
                f"{folder}: this {self.kind} run records no suite; it cannot be resumed or re-run"
            )
        if to_run:
            _refuse_redacted_urls(self.suite, folder)
        suite = self.suite.model_copy(deep=True)
        if suite.user.models is None:  # several simulated users are named as written, never `auto`
            suite.user.model = self.models.user
        suite._file = Path(self.suite_file) if self.suite_file else None
        suite._base_dir = Path(self.suite_file).parent.resolve() if self.suite_file else folder.resolve()
        return suite


def _refuse(loc: str | tuple[str | int, ...], problem: str) -> None:
    """A refusal of the manifest's field at `loc`, as pydantic's own are reported (file, field, reason)."""
    error = PydanticCustomError("manifest_bound", problem)
    where = (loc,) if isinstance(loc, str) else loc
    raise ValidationError.from_exception_data(
        "Manifest", [InitErrorDetails(type=error, loc=where, input=None)]
    )


def _refuse_redacted_urls(suite: Suite, folder: Path) -> None:
    """A URL whose secret was written literally was recorded without it: it cannot be called again."""
    from simulator.errors import UserError

    urls = {"bot.url": getattr(suite.bot, "url", "")}
    urls |= {f"providers.{name}.base_url": s.base_url or "" for name, s in suite.providers.items()}
    for field, url in urls.items():
        if "[redacted]" in url:
            raise UserError(
                f"{folder}: the run's {field} held a secret written literally, which is never recorded; "
                "write it as ${VAR} (an environment variable) in the suite and start a new run"
            )
