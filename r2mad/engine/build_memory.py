"""Building a memory bank from debates: full-length R²-MAD debates on tasks not yet in the bank, each finished one
turned into cases (r2mad/memory/from_debates.py); a failed or partial debate is never written into a bank."""
from __future__ import annotations

import asyncio
import time

from r2mad.debate import Debate
from r2mad.grading.tasks import within_bound
from r2mad.memory.from_debates import cases_from_transcript, complete
from r2mad.memory.summaries import SummaryCache
from r2mad.methods.r2mad import R2MAD


async def build(tasks, bank, backend, settings, *, concurrency: int = 1, progress=None, summaries=None) -> dict:
    """Debate every task not yet in the bank and add its cases; returns a summary. `summaries`: R²-MAD's
    summary cache, shared by the debates."""
    summaries = summaries if summaries is not None else SummaryCache()
    settings = settings.replace(early_stop=False, use_memory=False)
    bounded, refused = within_bound(tasks, settings.max_question_chars)  # refused: one sentence, in the stats
    todo = [task for task in bounded if not bank.has_question(task.id)]
    gate = asyncio.Semaphore(concurrency)
    stats = {"questions": 0, "skipped_existing": len(bounded) - len(todo), "failed": 0, "tokens": 0,
             "skipped_too_long": len(tasks) - len(bounded), "refused": refused}
    started = time.monotonic()

    async def one(task):
        async with gate:
            debate = Debate(backend, R2MAD(settings, None, summarize=True, summaries=summaries))
            transcript = await debate.run(task)
        if complete(transcript):
            bank.add(cases_from_transcript(transcript))
            stats["questions"] += 1
        else:
            stats["failed"] += 1
        stats["tokens"] += transcript.usage().tokens
        if progress:
            progress(transcript)

    await asyncio.gather(*(one(task) for task in todo))
    stats["seconds"] = round(time.monotonic() - started, 1)
    return stats
