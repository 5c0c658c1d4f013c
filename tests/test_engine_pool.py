"""The session pool: `width` workers pull from one iterator (a run's items, or pairwise judging's pairs),
so at most `width` are in flight, every item is handled once, and a failure is raised, not lost."""

from __future__ import annotations

import asyncio

import pytest

from simulator.engine.session import pool


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
