"""The session pool: `width` workers pull from one iterator (a run's items, or pairwise judging's pairs),
so at most `width` are in flight, every item is handled once, and a failure is raised, not lost."""

from __future__ import annotations

import asyncio

import pytest

from simulator.engine.lending import LendingPool
from simulator.engine.session import pool, pull
from simulator.providers.waits import RetryWaits


@pytest.mark.parametrize(("items", "width"), [(10, 1), (10, 3), (3, 8), (0, 2)])
async def test_at_most_width_items_are_in_flight_and_each_is_handled_once(items: int, width: int) -> None:
    in_flight, peak, seen = 0, 0, []

    async def handle(item: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)
        seen.append(item)
        in_flight -= 1

    await pool(iter(range(items)), width, handle)
    assert sorted(seen) == list(range(items))
    assert peak == min(width, items)


async def test_a_failing_item_is_raised_after_the_others_finish() -> None:
    done: list[int] = []

    async def handle(item: int) -> None:
        if item == 2:
            raise RuntimeError("item 2 broke")
        await asyncio.sleep(0.001)
        done.append(item)

    with pytest.raises(RuntimeError, match="item 2 broke"):
        await pool(iter(range(6)), 2, handle)
    assert 2 not in done and len(done) >= 4  # the other worker went on


# ------------------------------------------------------------------------------------------ lent places


async def _lending_run(
    items: int, width: int, waiting: set[int], lend: int | None = None
) -> tuple[LendingPool, list[int], RetryWaits]:
    """Items in `waiting` wait out a "retry" (counted by `waits`) before they finish; the rest return after
    a short pause. Returns the pool, the items handled, and the waits."""
    waits = RetryWaits()
    seen: list[int] = []
    release = asyncio.Event()

    async def handle(item: int) -> None:
        if item in waiting:
            waits._change(+1)  # what `RetryWaits.sleep` does, held until every other item has started
            try:
                await release.wait()
            finally:
                waits._change(-1)
        else:
            await asyncio.sleep(0.001)
        seen.append(item)
        if len(seen) + len(waiting - set(seen)) == items:
            release.set()  # all others are done: the waiting ones may finish

    work = iter(range(items))
    lending = LendingPool(width, lambda surplus: pull(work, handle, surplus), waits, lend)
    outcomes = await lending.run()
    assert outcomes == [None] * len(lending.tasks)
    return lending, seen, waits


@pytest.mark.parametrize(("width", "waiting"), [(2, {0}), (3, {0, 1}), (4, {0, 1, 2, 3})])
async def test_a_waiting_item_lends_its_place_and_every_item_is_handled_once(
    width: int, waiting: set[int]
) -> None:
    lending, seen, waits = await _lending_run(20, width, waiting)
    assert sorted(seen) == list(range(20))
    # One more worker for each item waiting out its retry, never more than `width` more.
    assert lending.most == width + len(waiting)
    assert waits.most == len(waiting) and waits.count == 0 and lending.active == 0


@pytest.mark.parametrize(("waiting", "lend", "most"), [({0, 1, 2, 3, 4, 5}, None, 4), ({0, 1, 2}, 1, 3)])
async def test_lent_places_are_capped(waiting: set[int], lend: int | None, most: int) -> None:
    waits, seen = RetryWaits(), []

    async def handle(item: int) -> None:
        # Long enough that every waiting item the cap lets start is waiting at once.
        await waits.sleep(0.2) if item in waiting else await asyncio.sleep(0.001)
        seen.append(item)

    work = iter(range(20))
    lending = LendingPool(2, lambda surplus: pull(work, handle, surplus), waits, lend)
    await lending.run()
    assert sorted(seen) == list(range(20)) and lending.most == most


async def test_without_waits_the_pool_stays_at_its_width() -> None:
    lending, seen, waits = await _lending_run(20, 3, set())
    assert sorted(seen) == list(range(20)) and lending.most == 3 and waits.total == 0


async def test_a_failing_worker_is_reported_and_the_others_finish() -> None:
    waits, done = RetryWaits(), []

    async def handle(item: int) -> None:
        if item == 1:
            raise RuntimeError("item 1 broke")
        await waits.sleep(0.001) if item == 0 else await asyncio.sleep(0.001)
        done.append(item)

    work = iter(range(8))
    outcomes = await LendingPool(2, lambda surplus: pull(work, handle, surplus), waits).run()
    assert [str(o) for o in outcomes if o is not None] == ["item 1 broke"]
    assert 1 not in done and 0 in done
