"""The collector's alert check reads each rolling folder only where it grew (trends.FollowedFolders): what
it sees equals a fresh read of every folder after each kind of change, and an unchanged folder is not read
again."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from simulator.collect.folders import SIGNALS
from simulator.collect.trends import FollowedFolders, Observation, load_observations
from simulator.record.folder import VERDICTS, RunFolder
from simulator.record.models import ConversationRecord
from tests.test_report_support import record, verdict, write_run

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
NEW = "sha256:" + "b" * 64


def _conversation(folder: Path, number: int, user: str | None = None) -> ConversationRecord:
    rec = record(f"c{number}")
    RunFolder.resume(folder).append_conversation(rec)
    line = {
        "conversation_id": rec.id,
        "started_at": (T0 + timedelta(minutes=number)).isoformat(),
        "user": user,
    }
    with (folder / SIGNALS).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    return rec


def _judge(
    folder: Path, rec: ConversationRecord, result: str, judge_set: str = NEW, **fields: object
) -> None:
    RunFolder.resume(folder).append_verdicts([verdict(rec, "c1", result, judge_set_hash=judge_set, **fields)])


def _seen(observations: list[Observation]) -> list[tuple[str, str, dict[str, str]]]:
    return [(o.conversation, o.cluster, o.results) for o in observations]


def _folder(root: Path, name: str) -> Path:
    return write_run(root / name, [], [])


def test_a_followed_read_equals_a_fresh_read_after_every_kind_of_change(tmp_path: Path) -> None:
    old, current = _folder(tmp_path, "live-1"), _folder(tmp_path, "live-2")
    first = _conversation(old, 1, user="ann")
    _judge(old, first, "fail")
    followed = FollowedFolders()
    folders = [old, current]

    def check() -> None:
        assert _seen(load_observations(folders, None, followed)) == _seen(load_observations(folders))

    check()
    second = _conversation(current, 2)  # a conversation closed
    check()
    _judge(current, second, "pass")  # judged later, by the judging thread
    check()
    _judge(current, second, "fail", judge_set="sha256:" + "a" * 64)  # another judge set wrote last
    check()
    with (current / SIGNALS).open("a", encoding="utf-8") as handle:
        handle.write('{"conversation_id": "c9#0", "started_at": "2026-12')  # a line still being written
    check()
    with (current / SIGNALS).open("a", encoding="utf-8") as handle:
        handle.write('-01T10:00:00+00:00"}\n')
    check()
    # `judge --retry-errors` rewrites the file: here without any verdict of the second conversation.
    RunFolder.resume(current).drop_verdicts(lambda v: v.conversation_id != second.id)
    check()
    assert [o.results for o in load_observations(folders, None, followed)] == [{"c1": "fail"}, {}, {}]


def test_an_unchanged_folder_is_not_read_again(tmp_path: Path) -> None:
    old, current = _folder(tmp_path, "live-1"), _folder(tmp_path, "live-2")
    for number in range(5):
        _judge(old, _conversation(old, number), "pass")
    followed = FollowedFolders()
    before = list(followed.observations(old))
    _judge(current, _conversation(current, 10), "fail")
    again = followed.observations(old)
    assert len(again) == 5 and all(a is b for a, b in zip(before, again, strict=True))
    state = followed._folders[old]
    assert (
        state.verdicts_at[1]
        == (old / VERDICTS).stat().st_size
        == sum(len(line) for line in (old / VERDICTS).read_bytes().splitlines(keepends=True))
    )
    # A new line is read from where the last read stopped: only that line is parsed.
    rec = _conversation(old, 6)
    _judge(old, rec, "fail")
    fresh, end = RunFolder.open(old).verdicts_after(state.verdicts_at[1])
    assert [v.conversation_id for v in fresh] == [rec.id] and end == (old / VERDICTS).stat().st_size
    assert followed.observations(old)[-1].results == {"c1": "fail"}


def test_folders_that_left_the_window_are_forgotten(tmp_path: Path) -> None:
    old, current = _folder(tmp_path, "live-1"), _folder(tmp_path, "live-2")
    _conversation(old, 1)
    for number in range(2, 5):
        _conversation(current, number)
    followed = FollowedFolders()
    assert len(load_observations([old, current], None, followed)) == 4
    followed.forget_unread()
    assert len(load_observations([old, current], 2, followed)) == 2  # the newest folder suffices
    followed.forget_unread()
    assert set(followed._folders) == {current}
