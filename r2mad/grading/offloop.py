"""Answer extraction and each kind's slow agreement work (math checks, embeddings) awaited off the event loop,
then the judge on what the rules leave undecided, so that async code (the debate loop, a fork, the app's handlers)
only awaits them. Not the checks themselves (answers.py, mathcheck.py), which stay plain functions for sync
callers."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Sequence

from r2mad.grading.answers import extract_answer
from r2mad.grading.judge import Judge
from r2mad.grading.kinds import kind_of
from r2mad.types import Answer, AuxCall, Judged, Task


async def extract(text: str, task: Task, cut: bool = False) -> Answer:
    """extract_answer in a thread (a long reply takes a while to read)."""
    return await asyncio.to_thread(lambda: extract_answer(text, task, cut=cut))


@dataclass
class Settled:
    """What settling a round's answers gave: notices for pairs that could not be checked, the judge's verdicts
    on the pairs the rules left undecided, and the judge's calls (for the round's cost)."""
    notices: list[str] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)
    calls: list[AuxCall] = field(default_factory=list)


async def settle(answers: Sequence[Answer], task: Task, *, judge: Judge | None = None,
                 judged: Sequence[Judged] = (), round_index: int = 0) -> Settled:
    """Do the kind's slow work on these parsed answers and the task's references in a thread (math: every pair
    checked, each under mathworker's bound; short: each answer embedded), so that the agreement functions
    called next on them (same_answer, consensus_ratio, plurality_vote, is_unanimous, is_correct) return at once;
    then, with a `judge`, grade each pair the rules leave undecided and `judged` does not hold yet."""
    kind = kind_of(task)
    references = kind.references(task)
    values = sorted({a.value for a in answers if a.parsed} | set(references))
    if len(values) < 2:
        return Settled()
    out = Settled(await asyncio.to_thread(kind.settle, values))
    if judge is None:
        return out
    pairs = [(a, b) for i, a in enumerate(values) for b in values[i + 1:]
             if not (a in references and b in references)]
    undecided = await asyncio.to_thread(lambda: [p for p in pairs if kind.ruling(*p, judged).same is None])
    for verdict, calls in await asyncio.gather(*(
            judge.pair(task.question, a, b, reference=next((r for r in (a, b) if r in references), None),
                       both_ways=kind.judge_both_ways(), round_index=round_index) for a, b in undecided)):
        out.judged.append(verdict)
        out.calls.extend(calls)
    return out
