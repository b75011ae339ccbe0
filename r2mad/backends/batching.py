"""Identical single-sample calls gathered into one request for n samples (a backend's `native_n`). Not for
transport: the backend hands in the coroutine that sends one request."""
from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from r2mad.types import Completion, Message

BATCH_WINDOW_S = 0.005  # identical prompts asked this close together share one request
Request = Callable[[tuple[Message, ...], int, tuple, "int | None", "Callable[[str], None] | None"],
                  Awaitable[list[Completion]]]


class SampleBatcher:
    """`sample()` waits BATCH_WINDOW_S for calls with the same prompt and sampling settings, then one
    `request(messages, n, sampling, seed, on_text)` answers them all. Seeded calls join a batch only as its
    next seed (s, s+1, ...), so a batch is exactly n samples seeded with s and sample i stands for seed s + i,
    whatever else runs at the time (another seed's identical prompts, say)."""

    def __init__(self, request: Request):
        self.request = request
        self._pending: dict[tuple, tuple] = {}  # (loop, prompt, sampling, next seed) -> batch being collected
        self._flushing: set[asyncio.Task] = set()

    async def sample(self, messages: tuple[Message, ...], sampling: tuple, seed: int | None,
                     on_text: Callable[[str], None] | None) -> Completion:
        loop = asyncio.get_running_loop()
        batch = self._pending.pop((loop, messages, sampling, seed), None)
        if batch is None:
            batch = (loop, messages, sampling, [])
            loop.call_later(BATCH_WINDOW_S, self._start_flush, batch, on_text)
        future = loop.create_future()
        batch[3].append((seed, future))
        self._pending[(loop, messages, sampling, None if seed is None else seed + 1)] = batch
        return await future

    def _start_flush(self, batch: tuple, on_text: Callable[[str], None] | None) -> None:
        loop, messages, sampling, waiters = batch
        for key in [k for k, b in self._pending.items() if b is batch]:  # closed to late callers
            del self._pending[key]
        task = loop.create_task(self._flush(messages, sampling, waiters, on_text))
        self._flushing.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._flushing.discard)

    async def _flush(self, messages: tuple[Message, ...], sampling: tuple, waiters: list,
                     on_text: Callable[[str], None] | None) -> None:
        if all(future.done() for _, future in waiters):  # every caller was cancelled
            return
        try:
            results = await self.request(messages, len(waiters), sampling, waiters[0][0],
                                         on_text if len(waiters) == 1 else None)
        except BaseException as exc:  # noqa: BLE001 - every caller gets the request's failure
            for _, future in waiters:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), completion in zip(waiters, results):
            if not future.done():
                future.set_result(completion)
