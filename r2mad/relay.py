"""A job that speaks callbacks, iterated with a plain `async for`: the one bridge from emitted events to an async
iterator (the debate's `events`, the app's live stream). Not a scheduler: one job, one consumer."""
from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Awaitable, Callable

_WAKE = object()  # put on the queue when the job ends or `stop` is set

Job = Callable[[Callable[[Any], None]], Awaitable[Any]]  # job(emit): emit(item) hands an item to the iterator


async def relay(job: Job, *, tick_s: float | None = None, stop: asyncio.Event | None = None) -> AsyncIterator[list]:
    """Start `job(emit)` as a task and yield what it emits, in order, a batch at a time: everything that came since
    the last batch, or `[]` after `tick_s` seconds with nothing. Its exception is raised after its last batch; its
    result is dropped (a job that hands one over emits it last). Setting `stop` ends the iteration, and so does
    leaving it (break, an error, a cancelled consumer): the job is cancelled and awaited first (it may save itself
    as cancelled). A plain `break` cancels it once the iterator is collected; `contextlib.aclosing` at once."""
    queue: asyncio.Queue = asyncio.Queue()
    task = asyncio.create_task(job(queue.put_nowait))
    task.add_done_callback(lambda _: queue.put_nowait(_WAKE))
    watch = asyncio.ensure_future(stop.wait()) if stop is not None else None
    if watch is not None:
        watch.add_done_callback(lambda w: w.cancelled() or queue.put_nowait(_WAKE))
    try:
        while not task.done():
            if stop is not None and stop.is_set():
                return
            taken = await _taken(queue, tick_s)
            batch = [x for x in taken if x is not _WAKE]
            if batch or not taken:
                yield batch
        batch = [x for x in _taken_now(queue) if x is not _WAKE]
        if batch:
            yield batch
        task.result()
    finally:
        if watch is not None:
            watch.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})  # the job ends its own way: it may save what it has as cancelled
        if not task.cancelled():
            task.exception()  # retrieved: a job that failed after its consumer left is not logged as lost


async def _taken(queue: asyncio.Queue, wait_s: float | None) -> list:
    """Everything on the queue, waiting up to `wait_s` seconds (None: as long as it takes) for the first; [] if
    nothing came."""
    try:
        async with asyncio.timeout(wait_s):
            first = await queue.get()
    except TimeoutError:
        return []
    return [first, *_taken_now(queue)]


def _taken_now(queue: asyncio.Queue) -> list:
    return [queue.get_nowait() for _ in range(queue.qsize())]


def at_most_every(seconds: float, hand: Callable[[Any], None]) -> Callable[[Any], None]:
    """`hand`, called at most once every `seconds`: the calls between are dropped (live text, where each carries
    everything so far)."""
    last = [float("-inf")]

    def throttled(item: Any) -> None:
        now = time.monotonic()
        if now - last[0] >= seconds:
            last[0] = now
            hand(item)
    return throttled
