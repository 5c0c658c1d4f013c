"""Settings a resume may change: how hard to push the providers, never what the run measures.

`run --resume RUN [suite.yaml] [--rpm N] [--concurrency N]` finishes a run with new budgets, connection
limits, timeouts or retry budgets (the fix for a run that met a provider's rate limit), while a change
to anything that shapes a result (models, prompts, scenarios, judges, a provider's base_url) is refused:
it would mix two runs' results in one folder. Each change is recorded in the manifest's session.

A setting that names a file (config/named_files.py) is compared by the file's content hash, recorded with
the run, not by how its path is spelled: a suite file from another checkout of the same suite
(`/tmp/ci/suite/vocab.yaml` for `/home/a/suite/vocab.yaml`) resumes, and the same path to an edited file
is refused. A file runs write (the response cache's `cache.path`) is compared by where it is, relative to the
suite's folder (`./c.sqlite`, `c.sqlite` and `/home/a/suite/c.sqlite` are one place). A setting naming
folders of scenarios or criteria is never compared as text: a resume reads its own recorded scenario files
and judges with its own suite, and `merge` compares plan and judge set hashes. A cell of a matrix is
compared with the cell of the given suite's matrix of the same id, its variant applied: an override is
compared by the setting it makes (`0.5` or `0.50`, keys in any order), never as written.

`simulator run SUITE --resume RUN`, `simulator.resume(RUN, suite=SUITE)` and `simulator.run(SUITE,
options=RunOptions(out=RUN, resume=True))` all compare here (`adopt_operational`).
"""

from __future__ import annotations

__all__ = [
    "adopt_operational",
    "apply_rate_overrides",
    "carry_bot_operational",
    "content_note",
    "measured_differences",
    "refuse_new_cells",
]

import os
from typing import Any

from simulator.config.bot_kinds import BotConfig
from simulator.config.matrix import expand_matrix
from simulator.config.named_files import PLACE, SettingLoc, dotted, named_files, named_folders, named_places
from simulator.config.providers import ProviderSettings
from simulator.config.suite import Suite
from simulator.errors import UserError
from simulator.record.hashing import short_hash
from simulator.record.recorded import setting_file_hashes
from simulator.record.redact import redacted_suite

# Provider settings that change how fast or how patiently calls are made, never what they answer.
OPERATIONAL_PROVIDER = frozenset(
    {
        "api_key_env",
        "max_connections",
        "min_connections",
        "timeout_s",
        "max_attempts",
        "max_retry_time_s",
        "rate_limit_retry_s",
        "backoff_initial_s",
        "backoff_max_s",
        "adaptive_concurrency",
        "rpm",
        "tpm",
        "pace_from_headers",
        "find_rate",
    }
)
_OPERATIONAL_TOP = frozenset({"concurrency"})


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}{key}."))
        return out or {prefix.rstrip("."): {}}
    return {prefix.rstrip("."): value}


def _operational(path: str, bot: BotConfig) -> bool:
    parts = path.split(".")
    if parts[0] in _OPERATIONAL_TOP:
        return True
    if parts[0] == "providers" and len(parts) == 3:
        return parts[2] in OPERATIONAL_PROVIDER
    return parts[0] == "bot" and len(parts) == 2 and parts[1] in bot.operational


class NamedFile:
    """A setting's value that names a file (config/named_files.py), as two runs compare it: by the file's
    content hash when both know one, else (a run made before they were recorded, a path that reaches no file)
    by its text. A file runs write (`place`: the cache) is compared by where it is from each suite's folder
    (config/named_files.py: `place`), or, both written absolute (a cache outside the checkouts), as written."""

    def __init__(self, text: str, reached: str | None, recorded: bool, place: bool = False) -> None:
        self.text, self.reached, self.recorded, self.place = text, reached, recorded, place

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NamedFile):
            return self.text == other
        if self.place:  # where it is from each suite's folder; two absolute paths (or unrecorded) as written
            same_place = bool(self.reached) and self.reached == other.reached
            as_written = not (self.reached and other.reached) or all(
                map(os.path.isabs, (self.text, other.text))
            )
            return same_place or (as_written and os.path.normpath(self.text) == os.path.normpath(other.text))
        if self.reached and other.reached:
            return self.reached == other.reached
        return self.text == other.text

    def __repr__(self) -> str:
        if self.place:
            where = (self.reached or "")[len(PLACE) :]
            return f"{self.text!r} ({f'{where} from the suite' if where else 'place not recorded'})"
        content = f"content sha256:{short_hash(self.reached)}" if self.reached else "content not recorded"
        return f"{self.text!r} ({content})"


def content_note(one: Any, other: Any) -> str:
    """Why two values of a setting that names files differ, for the end of the line that names them: the
    same path with other content, another place for a file runs write, or a run that recorded no content
    (its paths compared as written)."""
    mine, theirs = _named(one), _named(other)
    if any(v.place for v in mine + theirs):
        return " (another file: a file the runs write is compared by where it is, relative to the suite's folder)"
    if any(not v.recorded for v in mine + theirs):
        return (
            " (a run made before simulator recorded the content of the files a setting names: its paths are "
            "compared as written, so spell them as that run did)"
        )
    if any(a.text == b.text and a != b for a, b in zip(mine, theirs, strict=False)):
        return " (the same path names a file of other content: one of them was edited)"
    return ""


def _named(value: Any) -> list[NamedFile]:
    """The files a setting's value names: itself, or a list's items (a command's arguments)."""
    return [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, NamedFile)]


# The content hashes of the files a suite's settings name, by setting (record/recorded.py); None: a run made
# before they were recorded.
FileHashes = dict[str, str] | None


def _at(data: Any, loc: SettingLoc) -> tuple[Any, str | int] | None:
    """The container holding the value at `loc` in a suite's dump, and its key there; None when absent."""
    for key in loc[:-1]:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return None
    last = loc[-1]
    holds = isinstance(data, dict) and last in data
    holds = holds or (isinstance(data, list) and isinstance(last, int) and last < len(data))
    return (data, last) if holds else None


def _dump(suite: Suite, providers: set[str], files: FileHashes) -> dict[str, Any]:
    data = suite.model_dump(mode="json")
    data["providers"] = {
        name: suite.providers.get(name, ProviderSettings()).model_dump(mode="json") for name in providers
    }
    for places, named in ((False, named_files), (True, named_places)):
        for loc, text, _ in named(suite, suite.base_dir):
            found = _at(data, loc)
            if found is not None:
                reached = (files or {}).get(dotted(loc))
                found[0][found[1]] = NamedFile(text, reached, recorded=files is not None, place=places)
    for loc in named_folders(suite):  # what they hold is compared by its own hashes (scenarios, criteria)
        found = _at(data, loc)
        if found is not None:
            found[0][found[1]] = None
    return _flat(data)


_NEW_RUN = "Start a new run for those."


def adopt_operational(
    recorded: Suite,
    new: Suite,
    where: str,
    recorded_files: FileHashes,
    *,
    cell: str | None = None,
    fix: str = _NEW_RUN,
) -> dict[str, list[Any]]:
    """Take `new`'s operational settings into `recorded` (in place); {path: [old, new]} of what changed.
    `recorded_files`: the run's manifest's `setting_files` (a setting that names a file is compared by content).
    `cell`: the matrix cell the run is (its manifest's `source.matrix.cell`), compared with that cell of
    `new`'s matrix. `fix`: the end of the refusal, in the caller's words.

    Raises UserError naming every other difference: those would change results."""
    new = _given_cell(new, cell, where)
    new_files = setting_file_hashes(new)
    new = redacted_suite(new)
    new.user.model = recorded.user.model if new.user.model == "auto" else new.user.model
    differences = _differences(recorded, recorded_files, new, new_files)
    changed = {
        path: [before, after] for path, before, after in differences if _operational(path, recorded.bot)
    }
    refused = [
        f"{path}: {before!r} -> {after!r}{content_note(before, after)}"
        for path, before, after in differences
        if path not in changed
    ]
    if refused:
        shown = "; ".join(refused[:6]) + (f"; and {len(refused) - 6} more" if len(refused) > 6 else "")
        raise UserError(
            f"{where}: resume can change only how calls are made (rpm, tpm, max_connections, concurrency, "
            f"timeouts, retry budgets), not what the run measures: {shown}. {fix}"
        )
    for path, (_, after) in changed.items():
        _set(recorded, path, after)
    return changed


def _given_cell(new: Suite, cell: str | None, where: str) -> Suite:
    """The suite `new` gives for the run resumed: itself, or for a cell of a matrix, the cell of `new`'s
    matrix with the same id (its variant applied: an override is compared by what it sets)."""
    if new.matrix is None:
        return new
    cells = {c.id: c.suite for c in expand_matrix(new)}
    if cell is None:
        raise UserError(
            f"{where}: this suite has a matrix, and the run is one run, not a matrix cell; give the suite "
            "the run was made from"
        )
    if cell not in cells:
        raise UserError(
            f"{where}: its matrix has no cell '{cell}' (its cells: {', '.join(cells)}); give the suite the "
            "matrix was made from"
        )
    return cells[cell]


def refuse_new_cells(new: Suite, cells: list[str], where: str) -> None:
    """Refuse a suite whose matrix has cells the resumed matrix (`cells`) has not: they would never run."""
    extra = [c for c in (new.matrix.cell_ids() if new.matrix is not None else []) if c not in cells]
    if extra:
        raise UserError(
            f"{where}: its matrix has cells the resumed matrix has not ({', '.join(extra)}; it has "
            f"{', '.join(cells)}); a resume finishes the cells it began with: start a new matrix for those"
        )


def _differences(
    one: Suite, one_files: FileHashes, other: Suite, other_files: FileHashes
) -> list[tuple[str, Any, Any]]:
    """(setting path, one's value, other's value) for every setting the two suites set differently; a setting
    that names a file is compared by the content hash each side recorded (`*_files`), never by its spelling."""
    providers = set(one.providers) | set(other.providers)
    one_flat, other_flat = _dump(one, providers, one_files), _dump(other, providers, other_files)
    paths = sorted(set(one_flat) | set(other_flat))
    return [(p, one_flat.get(p), other_flat.get(p)) for p in paths if one_flat.get(p) != other_flat.get(p)]


def measured_differences(
    one: Suite, one_files: FileHashes, other: Suite, other_files: FileHashes
) -> list[tuple[str, Any, Any]]:
    """The settings that shape results (everything but the operational ones) the two suites set differently:
    two runs that differ here are two experiments (a resume refuses them, `merge` too)."""
    differences = _differences(one, one_files, other, other_files)
    return [d for d in differences if not _operational(d[0], one.bot)]


def carry_bot_operational(recorded: BotConfig, new: BotConfig) -> None:
    """Give the recorded bot the new bot's operational settings (its kind's `operational` fields), when both
    are the same kind."""
    if recorded.type == new.type:
        for name in recorded.operational:
            setattr(recorded, name, getattr(new, name))


def _set(suite: Suite, path: str, value: Any) -> None:
    parts = path.split(".")
    if parts[0] == "providers":
        settings = suite.providers.setdefault(parts[1], ProviderSettings())
        setattr(settings, parts[2], value)
    elif parts[0] == "bot":
        setattr(suite.bot, parts[1], value)
    else:
        setattr(suite, parts[0], value)


def parse_rate_override(text: str, option: str) -> tuple[str | None, float]:
    """`--rpm 600` (every provider the run uses) or `--rpm openai=600` (one)."""
    name, _, number = text.rpartition("=")
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise UserError(f"{option} takes a positive number per minute (600) or provider=number (openai=600)")
    return (name or None), value


def apply_rate_overrides(
    suite: Suite, overrides: dict[str, list[str]], used: set[str]
) -> dict[str, list[Any]]:
    """Set `--rpm` / `--tpm` values on the suite's providers; {path: [old, new]} of what changed."""
    changed: dict[str, list[Any]] = {}
    for field, texts in overrides.items():
        for text in texts:
            name, value = parse_rate_override(text, f"--{field}")
            for provider in [name] if name else sorted(used):
                settings = suite.providers.setdefault(provider, ProviderSettings())
                before = getattr(settings, field)
                if before != value:
                    setattr(settings, field, value)
                    changed[f"providers.{provider}.{field}"] = [before, value]
    return changed
