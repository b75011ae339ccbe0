"""Blame by counterfactual: for a failed debate, replay it with one wrong turn neutralised (masked from
the peers, or replaced by the agent's own answer of the round before) and see whether that alone turns
the final answer correct; with --pairs, two turns of one round together when no single one does. Cheapest
replays first, within a strict budget of model calls: every call the
replays make goes through one CallMeter, which refuses any call past the budget."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from r2mad.backends.base import BackendError, ChatBackend, Wrapped
from r2mad.grading.answers import is_correct
from r2mad.steer.fork import Change, ForkSpec, live_usage
from r2mad.steer.links import Blame
from r2mad.types import Transcript

Wrap = Callable[[ChatBackend], ChatBackend]
RunFork = Callable[[ForkSpec, Wrap], Awaitable[tuple[str | None, Transcript]]]  # -> (saved run id, transcript)


class CallMeter:
    """Counts the model calls of every backend it wraps, and refuses (BackendError) any call that would
    pass `budget`: a replay that needs more than is left is cut there, never finished over budget."""

    def __init__(self, budget: int):
        self.budget, self.used, self.refused = budget, 0, 0

    @property
    def left(self) -> int:
        return self.budget - self.used

    def wrap(self, backend: ChatBackend) -> ChatBackend:
        return _Metered(backend, self)


class _Metered(Wrapped):
    """`backend` with every chat() counted by its meter."""

    def __init__(self, backend: ChatBackend, meter: CallMeter):
        super().__init__(backend)
        self._meter = meter

    async def chat(self, messages, **kw):
        meter = self._meter
        if meter.used >= meter.budget:
            meter.refused += 1
            raise BackendError(f"Blame's budget of {meter.budget} model calls is spent; this replay was cut here.")
        meter.used += 1
        return await self.inner.chat(messages, **kw)


@dataclass(frozen=True)
class Candidate:
    round: int
    agent: int
    neutraliser: str  # "mask" | "previous"
    spec: ForkSpec
    estimated_calls: int  # the parent's calls after the round (what replaying them live costs)
    also: tuple[tuple[int, int, str], ...] = ()  # a pair's second turn: (round, agent, neutraliser)


def candidates(parent: Transcript) -> list[Candidate]:
    """Every wrong turn of a finished run, each neutralised each way that changes something, cheapest
    first (late rounds cost fewer live calls; the last round's costs none: only the vote changes)."""
    rounds = parent.finished().rounds
    cost_after = [sum(len([x for x in r.turns if x.error is None and not x.details.get("human")])
                      + len([c for c in r.aux if c.kind != "human"]) for r in rounds[i + 1:])  # a person's: no call
                  for i in range(len(rounds))]
    found = []
    for rnd in rounds:
        for turn in rnd.turns:
            if turn.error is not None or is_correct(turn.answer, parent.task, parent.judged):
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


def pair_candidates(parent: Transcript) -> list[Candidate]:
    """Two wrong turns of the same round neutralised together (a fork changes one recorded round, so a
    pair never spans two rounds), each way either can be neutralised; cheapest first. `also` carries the
    second turn."""
    singles = candidates(parent)
    found = []
    for i, a in enumerate(singles):
        for b in singles[i + 1:]:
            if a.round != b.round or a.agent == b.agent:
                continue
            first, second = sorted((a, b), key=lambda c: (c.agent, c.neutraliser))
            spec = ForkSpec(first.round + 1, first.spec.changes + second.spec.changes)
            found.append(Candidate(first.round, first.agent, first.neutraliser, spec, first.estimated_calls,
                                   ((second.round, second.agent, second.neutraliser),)))
    return sorted(found, key=lambda c: (c.estimated_calls, -c.round, c.agent, c.also, c.neutraliser))


async def blame(parent: Transcript, run_id: str, run_fork: RunFork, budget: int,
                pairs: bool = False) -> tuple[list[Blame], list[Candidate]]:
    """(the replays run, the candidates left out for the budget). A replay starts only when the parent's
    cost of the rounds it re-runs fits in what is left; one that needs more (answer-guard calls, say) is
    cut where the budget ends and saved as incomplete (correct None, no final answer), and no replay
    that would make a call starts after it. With `pairs`, when no single turn turns the answer correct,
    pairs of turns of one round are tried next, within what is left of the same budget."""
    if parent.task.gold is None or parent.correct is not False:
        raise ValueError("Blame needs a finished run with a wrong final answer and a gold answer; "
                         "choose a failed run (python -m r2mad export lists them with their outcome).")
    meter, results, skipped = CallMeter(budget), [], []
    await _replay(candidates(parent), parent, run_id, run_fork, meter, results, skipped)
    if pairs and not any(b.correct for b in results):
        await _replay(pair_candidates(parent), parent, run_id, run_fork, meter, results, skipped)
    return results, skipped


async def _replay(cands: list[Candidate], parent: Transcript, run_id: str, run_fork: RunFork, meter: CallMeter,
                  results: list[Blame], skipped: list[Candidate]) -> None:
    for cand in cands:
        if cand.estimated_calls > meter.left:
            skipped.append(cand)
            continue
        used, refused = meter.used, meter.refused
        fork_id, t = await run_fork(cand.spec, meter.wrap)
        cut = meter.refused > refused
        results.append(Blame(run_id, cand.round, cand.agent, cand.neutraliser, fork_id,
                             None if cut else t.final.value, None if cut else t.correct, meter.used - used,
                             live_usage(t).tokens, time.time(), cand.also))
