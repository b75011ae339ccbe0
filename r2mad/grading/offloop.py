"""Answer extraction and each kind's slow agreement work (math checks, embeddings) awaited off the event loop,
so that async code (the debate loop, a fork, the app's handlers) only awaits them. Not the checks themselves
(answers.py, mathcheck.py), which stay plain functions for sync callers."""
from __future__ import annotations

import asyncio
from typing import Sequence

from r2mad.grading.answers import extract_answer
from r2mad.grading.kinds import kind_of
from r2mad.types import Answer, Task


async def extract(text: str, task: Task) -> Answer:
    """extract_answer in a thread (a long reply takes a while to read)."""
    return await asyncio.to_thread(extract_answer, text, task)


async def settle(answers: Sequence[Answer], task: Task) -> list[str]:
    """Do the kind's slow work on these parsed answers and the task's gold in a thread (math: every pair
    checked, each under mathworker's bound; short and open: each answer embedded), so that the agreement
    functions called next on them (same_answer, consensus_ratio, plurality_vote, is_unanimous, is_correct)
    read cached verdicts and return at once. Returns a notice for each pair that was treated as different
    without an answer (too large, or past the bound)."""
    values = sorted({a.value for a in answers if a.parsed} | ({task.gold} if task.gold is not None else set()))
    if len(values) < 2:
        return []
    return await asyncio.to_thread(kind_of(task).settle, values)
