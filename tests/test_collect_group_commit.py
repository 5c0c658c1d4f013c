"""Group commit with a gathering pause (collect/spool.py `_gather`): after a sync round that saw several
requests, the next one gives as many the time to write before it syncs, so exporters that each wait for
their answer before sending again share one sync instead of splitting into two alternating halves. Never
is a request answered before a sync that began after its write; a lone exporter never waits; exporters
that stop cost at most the bounded pause. Driven on the spool itself, with a disk whose sync takes a
known time (a thread sleeping), so the counts do not depend on the machine's disk."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from simulator.collect import spool as spool_module
from simulator.collect.spool import Spool
from simulator.traces.otlp_decode import Span
from tests.support.waiting import LATE_S

SYNC_S = 0.02  # the fake disk's sync


def _span(number: int) -> Span:
    return Span(f"{number + 1:032x}", f"{number + 1:016x}", 1, 2, {"n": number}, {}, None, [])


def _slow_disk(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each sync's file size when it began (the bytes it covers), taking SYNC_S."""
    began: list[int] = []

    def sync(fd: int) -> None:
        began.append(os.fstat(fd).st_size)
        time.sleep(SYNC_S)

    monkeypatch.setattr(spool_module, "_datasync", sync)
    return began


async def _exporters(spool: Spool, clients: int, each: int, began: list[int]) -> list[float]:
    """`clients` exporters, each sending `each` one-span requests, the next one a moment after the answer
    (the network's round trip: 1 ms more for each exporter); every answer checked against the syncs (a sync
    that began after the request's line ended covers it). The seconds each request waited."""
    waited: list[float] = []

    async def exporter(client: int) -> None:
        for number in range(each):
            if number:
                await asyncio.sleep(0.001 * (client + 1))
            ticket_before = len(began)
            ((offset, length),) = spool.append([_span(client * 1000 + number)])
            sent = time.monotonic()
            await spool.durable(spool.written)
            waited.append(time.monotonic() - sent)
            assert any(size >= offset + length for size in began[ticket_before:])

    await asyncio.gather(*(exporter(client) for client in range(clients)))
    return waited


@pytest.mark.parametrize("clients", [2, 4, 8])
def test_exporters_waiting_for_their_answers_share_one_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clients: int
) -> None:
    began = _slow_disk(monkeypatch)
    monkeypatch.setattr(spool_module, "GATHER_MAX_S", 0.05)  # the round trips above, on a busy machine
    spool = Spool(tmp_path, fsync=True)
    each = 8
    asyncio.run(_exporters(spool, clients, each, began))
    spool.close()
    # A round for each wave of requests (and the first, which saw one): not two for each.
    assert len(began) <= each + 3


def test_a_lone_exporter_never_waits_for_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    began = _slow_disk(monkeypatch)
    monkeypatch.setattr(spool_module, "GATHER_MAX_S", 2.0)  # a pause would show: every wait past 2 s
    monkeypatch.setattr(spool_module, "GATHER_SHARE", 100.0)
    spool = Spool(tmp_path, fsync=True)
    waited = asyncio.run(_exporters(spool, 1, 10, began))
    spool.close()
    assert len(began) == 10 and max(waited) < 2.0  # a sync each (20 ms), late only by a busy machine


@pytest.mark.parametrize("then", [0, 1, 3])
def test_exporters_that_stop_cost_one_bounded_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: int
) -> None:
    """Four exporters, then `then` of them go on alone: the round after the four waits for writers that do
    not come, but only up to its bound, and is then synced with what it has."""
    began = _slow_disk(monkeypatch)
    monkeypatch.setattr(spool_module, "GATHER_MAX_S", 0.2)
    monkeypatch.setattr(spool_module, "GATHER_SHARE", 100.0)
    spool = Spool(tmp_path, fsync=True)

    async def run() -> list[float]:
        await _exporters(spool, 4, 3, began)
        return await _exporters(spool, then, 3, began) if then else []

    waited = asyncio.run(run())
    spool.close()
    assert all(seconds < 0.2 + SYNC_S + LATE_S for seconds in waited)  # the pause, a sync, a busy machine
    assert len(began) >= 3 + (3 if then else 0) - 1
