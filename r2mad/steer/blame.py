"""Blame by counterfactual: for a failed debate, replay it with one wrong turn neutralised (masked from
the peers, or replaced by the agent's own answer of the round before) and see whether that alone turns
the final answer correct. Cheapest replays first, within a budget of model calls."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from r2mad.answers import is_correct
from r2mad.steer.fork import Change, ForkSpec, live_usage
from r2mad.steer.links import Blame
from r2mad.types import Transcript

RunFork = Callable[[ForkSpec], Awaitable[tuple[str | None, Transcript]]]  # -> (saved run id, transcript)


@dataclass(frozen=True)
class Candidate:
    round: int
    agent: int
    neutraliser: str  # "mask" | "previous"
    spec: ForkSpec
    estimated_calls: int  # the parent's calls after the round (what replaying them live costs)


def candidates(parent: Transcript) -> list[Candidate]:
    """Every wrong turn of a finished run, each neutralised each way that changes something, cheapest
    first (late rounds cost fewer live calls; the last round's costs none: only the vote changes)."""
    rounds = parent.finished().rounds
    cost_after = [sum(len([x for x in r.turns if x.error is None]) + len(r.aux) for r in rounds[i + 1:])
                  for i in range(len(rounds))]
    found = []
    for rnd in rounds:
        for turn in rnd.turns:
            if turn.error is not None or is_correct(turn.answer, parent.task):
                continue
            last = rnd.index == len(rounds) - 1
            if not last:  # a mask only matters to the rounds after; the last round's turns are only voted
                spec = ForkSpec(rnd.index + 1, (Change("mask", turn.agent),))
                found.append(Candidate(rnd.index, turn.agent, "mask", spec, cost_after[rnd.index]))
            before = rounds[rnd.index - 1].turns[turn.agent] if rnd.index > 0 else None
            if before is not None and before.answer.parsed and before.answer.value != turn.answer.value:
                found.append(Candidate(rnd.index, turn.agent, "previous",
                                       ForkSpec(rnd.index + 1, (Change("edit", turn.agent, before.text),)),
                                       cost_after[rnd.index]))
    return sorted(found, key=lambda c: (c.estimated_calls, -c.round, c.agent, c.neutraliser))


async def blame(parent: Transcript, run_id: str, run_fork: RunFork,
                budget: int) -> tuple[list[Blame], list[Candidate]]:
    """(the replays run, the candidates left out because the budget of model calls would not cover them).
    A replay is started only when the parent's cost of the rounds it re-runs fits in what is left."""
    if parent.task.gold is None or parent.correct is not False:
        raise ValueError("Blame needs a finished run with a wrong final answer and a gold answer; "
                         "choose a failed run (python -m r2mad export lists them with their outcome).")
    left, results, skipped = budget, [], []
    for cand in candidates(parent):
        if cand.estimated_calls > left:
            skipped.append(cand)
            continue
        fork_id, t = await run_fork(cand.spec)
        used = live_usage(t)
        left -= used.calls
        results.append(Blame(run_id, cand.round, cand.agent, cand.neutraliser, fork_id, t.final.value,
                             t.correct, used.calls, used.tokens, time.time()))
    return results, skipped
