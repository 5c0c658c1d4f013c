"""Cost and latency: tokens and cost by role from an editable price table, latency median/p95, failure rates."""

from __future__ import annotations

__all__ = [
    "CostLatency",
    "FailureRow",
    "LatencyStat",
    "ModelPrice",
    "PriceTable",
    "RoleCost",
    "classify_error",
    "cost_latency",
    "default_prices_path",
    "load_prices",
]

from collections import Counter
from pathlib import Path

from pydantic import Field

from simulator.analysis.rundata import RunData
from simulator.config.yamlfile import YAMLProblem, load_yaml, validate_model
from simulator.errors import Problem, UserError
from simulator.models import ResultModel as _Model
from simulator.record.models import ConversationRecord
from simulator.record.stored_turns import turn_facts
from simulator.record.transcript import Usage
from simulator.stats.basic import median, percentile
from simulator.stats.rates import RateView, rate_view

ROLES = ("user", "bot", "judge")


class ModelPrice(_Model):
    """Prices in the table's currency per million tokens; cached input defaults to the input price."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)


class PriceTable(_Model):
    """The price file: when and where the prices were read, and one entry per model (`provider:*` allowed)."""

    as_of: str
    source: str
    currency: str = "USD"
    models: dict[str, ModelPrice]

    def lookup(self, model: str) -> tuple[str, ModelPrice] | None:
        """The entry for a model name as recorded (`openai:gpt-4.1-mini`, `claude-sonnet-4-5-20250929`)."""
        provider, _, bare = model.rpartition(":")
        for key in (model, bare):
            if key in self.models:
                return key, self.models[key]
        best: tuple[str, ModelPrice] | None = None
        for key, price in self.models.items():
            key_provider, _, key_bare = key.rpartition(":")
            if key_bare == "*":
                if provider and key_provider == provider and best is None:
                    best = (key, price)
                continue
            if (bare == key_bare or bare.startswith(key_bare + "-")) and (
                best is None or best[0].endswith("*") or len(key_bare) > len(best[0].rpartition(":")[2])
            ):
                best = (key, price)
        return best

    def cost(self, price: ModelPrice, usage: Usage) -> float:
        """Cost of some usage: uncached input, cached input and output at their own prices."""
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_price = price.input if price.cached_input is None else price.cached_input
        return (
            (usage.input_tokens - cached) * price.input
            + cached * cached_price
            + usage.output_tokens * price.output
        ) / 1_000_000


def default_prices_path() -> Path:
    """The price table shipped with the package (`simulator/data/prices.yaml`)."""
    return Path(__file__).resolve().parent.parent / "data" / "prices.yaml"


def load_prices(path: Path | None = None) -> PriceTable:
    """Read a price table; a mistake is a UserError naming file, line and field."""
    path = path or default_prices_path()
    if not path.is_file():
        raise UserError(
            f"{path}: no such price file; pass --prices with a file like simulator/data/prices.yaml"
        )
    try:
        source = load_yaml(path)
    except YAMLProblem as exc:
        raise UserError("invalid price file", [exc.problem]) from exc
    table, problems = validate_model(PriceTable, source.data, source)
    if table is None:
        raise UserError("invalid price file", problems or [Problem(str(path), "not a price table")])
    return table


class RoleCost(_Model):
    """Tokens and cost of one role (simulated user, bot, judge); cost is None when a model has no price."""

    role: str
    models: list[str]
    calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost: float | None
    unpriced: list[str]
    cache_hits: int


class LatencyStat(_Model):
    """Median and p95 of one kind of latency, in seconds, over n measurements."""

    name: str
    n: int
    median_s: float | None
    p95_s: float | None
    max_s: float | None


class FailureRow(_Model):
    """Failures of one class for one role, as a rate over that role's calls."""

    role: str
    failure: str
    rate: RateView
    kinds: list[str]


class CostLatency(_Model):
    """The cost and speed side of a run, to weigh against its quality."""

    currency: str
    prices_as_of: str
    prices_source: str
    roles: list[RoleCost]
    total_cost: float | None
    cost_per_conversation_median: float | None
    cost_per_conversation_p95: float | None
    latency: list[LatencyStat]
    failures: list[FailureRow]


def classify_error(kind: str, message: str = "") -> str:
    """timeout, invalid output, provider error or other, from an error's kind (and message for timeouts)."""
    kind_l, message_l = kind.lower(), message.lower()
    if "timeout" in kind_l or "timed out" in message_l or "timeout" in message_l:
        return "timeout"
    if "invalid" in kind_l or kind_l in ("schema", "parse", "refusal", "bad_output"):
        return "invalid output"
    if kind_l in ("rate_limit", "transient", "permanent", "connection") or kind_l.startswith("provider"):
        return "provider error"
    return "other"


def _latency(name: str, values: list[float]) -> LatencyStat:
    if not values:
        return LatencyStat(name=name, n=0, median_s=None, p95_s=None, max_s=None)
    return LatencyStat(
        name=name, n=len(values), median_s=median(values), p95_s=percentile(values, 95), max_s=max(values)
    )


def _user_usage_off_turns(record: ConversationRecord) -> Usage:
    """User tokens no turn holds: the call that sent [END], and attempts discarded after a character break."""
    used = [t.usage_model for t in turn_facts(record) if t.role == "user"]
    on_turns = sum((u for u in used if u is not None), Usage())
    total = record.usage_by_role.get("user", Usage()) + record.usage_by_role.get("discarded", Usage())
    return Usage(
        input_tokens=max(0, total.input_tokens - on_turns.input_tokens),
        output_tokens=max(0, total.output_tokens - on_turns.output_tokens),
        cached_input_tokens=max(0, total.cached_input_tokens - on_turns.cached_input_tokens),
        calls=max(0, total.calls - on_turns.calls),
    )


class _CostTally:
    """What `cost_latency` counts while it walks a run: usage, calls, failures and latencies per role."""

    def __init__(self, prices: PriceTable) -> None:
        self.prices = prices
        self.usage: dict[str, dict[str, Usage]] = {role: {} for role in ROLES}
        self.seen_models: dict[str, set[str]] = {role: set() for role in ROLES}
        self.per_conversation: dict[str, float] = {}
        self.unpriced_conversations: set[str] = set()
        self.unpriced: dict[str, set[str]] = {role: set() for role in ROLES}
        self.calls = {role: 0 for role in ROLES}
        self.failures: dict[str, list[tuple[str, str]]] = {role: [] for role in ROLES}
        self.latencies: dict[str, list[float]] = {
            "bot": [],
            "ttft": [],
            "user": [],
            "judge": [],
            "conversation": [],
        }
        self.hits: Counter[str] = Counter()

    def add(self, role: str, model: str | None, used: Usage | None, conversation_id: str) -> None:
        """Count one call's tokens against its role and model, and its cost against its conversation."""
        name = model or "(unknown model)"
        if model:
            self.seen_models[role].add(model)
        if used is None:
            return
        self.seen_models[role].add(name)
        self.usage[role][name] = self.usage[role].get(name, Usage()) + used
        found = self.prices.lookup(name)
        if found is None:
            self.unpriced[role].add(name)
            self.unpriced_conversations.add(conversation_id)
        else:
            self.per_conversation[conversation_id] = self.per_conversation.get(
                conversation_id, 0.0
            ) + self.prices.cost(found[1], used)


CALLS_RULE = (
    "calls: requests actually made, to a model or to the bot; the offline user's turns, code checks, "
    "`applies_when` rules and criteria not judged (no judge model) make none"
)


def _is_call(role: str, model: str | None, usage: Usage | None) -> bool:
    """Whether a turn was a request: every bot turn is (the bot was called); a simulated-user turn only when
    a model wrote it (the offline user is rules in this process, no request)."""
    return role != "user" or usage is not None or (model is not None and model != "offline")


def _tally_conversations(run: RunData, tally: _CostTally) -> None:
    """The simulated users' and bot's calls, tokens, latencies and failures, turn by turn."""
    for record in run.conversations:
        for role, count in record.cache_hits.items():
            tally.hits["judge" if role.startswith("judge") else role] += count
        tally.latencies["conversation"].append((record.ended_at - record.started_at).total_seconds())
        default_model = {"user": record.user_model, "bot": record.bot.removeprefix("chat:")}
        for turn in turn_facts(record):
            model = turn.model or default_model[turn.role] or None
            usage = turn.usage_model
            tally.calls[turn.role] += int(_is_call(turn.role, model, usage))
            tally.add(turn.role, model, usage, record.id)
            if turn.role == "bot" or turn.usage is not None:
                tally.latencies[turn.role].append(turn.latency_s)
            if turn.time_to_first_token_s is not None and turn.role == "bot":
                tally.latencies["ttft"].append(turn.time_to_first_token_s)
        extra = _user_usage_off_turns(record)
        if extra.calls:
            tally.calls["user"] += extra.calls
            tally.add("user", record.user_model or None, extra, record.id)
        if record.error is not None and record.error.source in ("bot", "user"):
            tally.calls[record.error.source] += 1
            tally.failures[record.error.source].append((record.error.kind, record.error.message))


def _tally_judges(run: RunData, tally: _CostTally) -> None:
    """The judges' calls (and the simulated-user audit's, costed with them), tokens, latencies, failures."""
    for verdict in run.fidelity:  # the simulated-user audit calls are costed with the judges
        if verdict.usage is not None and verdict.usage.calls:
            tally.calls["judge"] += verdict.usage.calls
            tally.add("judge", verdict.judge_model, verdict.usage, verdict.conversation_id)
    # Each judge call once: an aggregated verdict's calls are its samples; `applies_when` made no call.
    judgements = [v for v in run.verdicts if v.aggregate is None] + run.samples
    for verdict in judgements:
        # No call: a code check, the `applies_when` rule, or a criterion not judged (no judge model set)
        # unless its record shows the tokens of one.
        spent = verdict.usage is not None and verdict.usage.calls > 0
        if verdict.kind != "llm" or verdict.decided_by == "applies_when":
            continue
        if verdict.result == "not_judged" and not spent:
            continue
        tally.calls["judge"] += 1
        tally.add("judge", verdict.judge_model, verdict.usage, verdict.conversation_id)
        if verdict.latency_s is not None:
            tally.latencies["judge"].append(verdict.latency_s)
        if verdict.result == "error":
            error = verdict.error
            tally.failures["judge"].append(
                (error.kind, error.message) if error else ("error", verdict.reasoning)
            )


def _role_costs(tally: _CostTally) -> list[RoleCost]:
    """One row per role: models, calls, tokens, and cost (None when any of its models has no price)."""
    roles = []
    for role in ROLES:
        total = sum(tally.usage[role].values(), Usage())
        cost = None
        if not tally.unpriced[role]:
            cost = 0.0
            for model, used in tally.usage[role].items():
                found = tally.prices.lookup(model)
                assert found is not None
                cost += tally.prices.cost(found[1], used)
        roles.append(
            RoleCost(
                role=role,
                models=sorted(tally.seen_models[role]),
                calls=tally.calls[role],
                input_tokens=total.input_tokens,
                output_tokens=total.output_tokens,
                cached_input_tokens=total.cached_input_tokens,
                cost=cost,
                unpriced=sorted(tally.unpriced[role]),
                cache_hits=tally.hits[role],
            )
        )
    return roles


def _failure_rows(tally: _CostTally) -> list[FailureRow]:
    """Failure rates per role and class (timeout, invalid output, provider error, other) over its calls."""
    failure_rows = []
    for role in ROLES:
        classes: dict[str, list[str]] = {}
        for kind, message in tally.failures[role]:
            classes.setdefault(classify_error(kind, message), []).append(kind)
        for failure in ("timeout", "invalid output", "provider error", "other"):
            kinds = classes.get(failure, [])
            if tally.calls[role] or kinds:
                failure_rows.append(
                    FailureRow(
                        role=role,
                        failure=failure,
                        rate=rate_view(len(kinds), max(tally.calls[role], len(kinds))),
                        kinds=sorted(set(kinds)),
                    )
                )
    return failure_rows


def cost_latency(run: RunData, prices: PriceTable) -> CostLatency:
    """Tokens, cost, latency and failure rates of a run's simulated users, bot and (chosen) judges."""
    tally = _CostTally(prices)
    _tally_conversations(run, tally)
    _tally_judges(run, tally)
    roles = _role_costs(tally)
    costs = [
        tally.per_conversation.get(r.id, 0.0)
        for r in run.conversations
        if r.id not in tally.unpriced_conversations
    ]
    priced_all = all(r.cost is not None for r in roles)
    latencies = tally.latencies
    return CostLatency(
        currency=prices.currency,
        prices_as_of=prices.as_of,
        prices_source=prices.source,
        roles=roles,
        total_cost=sum(r.cost or 0.0 for r in roles) if priced_all else None,
        cost_per_conversation_median=median(costs) if costs and priced_all else None,
        cost_per_conversation_p95=percentile(costs, 95) if costs and priced_all else None,
        latency=[
            _latency("bot reply (per turn)", latencies["bot"]),
            _latency("bot time to first token", latencies["ttft"]),
            _latency("simulated user (per turn)", latencies["user"]),
            _latency("judge (per verdict)", latencies["judge"]),
            _latency("whole conversation", latencies["conversation"]),
        ],
        failures=_failure_rows(tally),
    )
