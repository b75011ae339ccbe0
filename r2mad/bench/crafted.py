"""`python -m r2mad bench`'s crafted-answer figures: how long the event loop waits while a debate checks an
answer built to stall a math parser, and how long a reply of unclosed boxes takes to read (issue 25's
targets; behaviour is tested in tests/grading/test_bounded_checks.py, the times are printed here)."""
from __future__ import annotations

import asyncio
import itertools
import time

from r2mad.debate import Debate
from r2mad.grading.answers import extract_math
from r2mad.methods import PLAIN, make_method
from r2mad.settings.config import DebateSettings
from r2mad.types import Task

HUGE = r"\binom{10^{9}}{500000}"
TASK = Task("math", "How many ways are there to choose 500000 of 10^9 items?", gold="5", id="bench-huge")
UNCLOSED = "\\boxed{" * 14_300  # 100 KB


async def _ticked(coroutine, every_s: float = 0.05) -> tuple[object, float, float]:
    """(result, wall s, the longest a ticker on the same loop waited past its tick)."""
    gaps, done = [], asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(every_s)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    started = time.monotonic()
    try:
        result = await coroutine
    finally:
        wall = time.monotonic() - started
        done.set()
        await ticking
    return result, wall, max(0.0, max(gaps, default=every_s) - every_s)


def crafted_figures() -> list[dict]:
    from r2mad.bench.scripted.server import FakeServer, ok
    from r2mad.bench.speed import _backend

    replies = itertools.count()  # the first agent to ask gets the binomial, the others a plain 5
    settings = DebateSettings(rounds=1, seed=1, deadline_s=120)

    def responder(body):
        return ok(f"It is \\boxed{{{HUGE}}}." if next(replies) == 0 else r"So \boxed{5}.")

    with FakeServer(models=["bench"], responder=responder) as server:
        debate = Debate(_backend(server.base_url, "bench"), make_method(PLAIN, settings))
        t, wall, gap = asyncio.run(_ticked(debate.run(TASK)))
    started = time.monotonic()
    extract_math(UNCLOSED)
    read = time.monotonic() - started
    return [
        {"figure": f"MAD debate (1 round) with an agent answering \\boxed{{{HUGE}}}: wall s (its deadline)",
         "value": f"{wall:.2f} ({settings.deadline_s:g}); {t.status}, final {t.final}, refused unchecked: "
                  + ("yes" if any("too large to check" in n for n in t.notices) else "no"), "target": "within it"},
        {"figure": "  longest a 0.05 s ticker on the same loop waited past its tick (s)", "value": f"{gap:.3f}",
         "target": "<= 0.2"},
        {"figure": f"{len(UNCLOSED) // 1000} KB of unclosed \\boxed{{ read by extract_math (s)",
         "value": f"{read:.3f}", "target": "<= 0.2"},
    ]
