"""Blame with intervals: each counterfactual of a failed run replayed K times with other seeds, beside K
replays of the same fork point with nothing changed, and the change in P(correct) reported with a
Newcombe interval built from the two Wilson intervals (statsmodels). Within blame's strict call budget
(its CallMeter); a pair may span two rounds (the later turn is neutralised in the replay of the earlier
change, by a second fork of it). Running a fork is the caller's `run_fork`."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from r2mad.runs.counterfactuals import SampledBlame
from r2mad.steer.blame import CallMeter, Candidate, candidates, pair_candidates
from r2mad.steer.fork import Change, ForkSpec
from r2mad.types import Transcript

SEED_STRIDE = 100_000  # sample k runs with seed + (k + 1) * SEED_STRIDE: apart from every seed_for of the run
# -> (saved run id, transcript); `parent`: fork this transcript instead of the saved run (a pair's second step)
SampleFork = Callable[..., Awaitable[tuple[str | None, Transcript]]]


def sample_seeds(parent_seed: int | None, k: int) -> list[int]:
    base = parent_seed or 0
    return [(base + (i + 1) * SEED_STRIDE) % 2**31 for i in range(k)]


def wilson(correct: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(correct, n, alpha=alpha, method="wilson")
    return float(low), float(high)


def change_interval(x1: int, n1: int, x0: int, n0: int, alpha: float = 0.05) -> tuple[float, float, float]:
    """(p1 - p0, low, high): Newcombe's hybrid score interval for a difference of two proportions, from
    each one's Wilson interval (Newcombe 1998, method 10)."""
    p1, p0 = x1 / n1, x0 / n0
    l1, u1 = wilson(x1, n1, alpha)
    l0, u0 = wilson(x0, n0, alpha)
    d = p1 - p0
    return d, d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)


@dataclass(frozen=True)
class Plan:
    """One counterfactual to sample: a Candidate, or a pair across two rounds (first change, then the later
    turn neutralised in each replay of it)."""
    turns: tuple[tuple[int, int, str], ...]
    spec: ForkSpec
    calls: int  # the parent's cost of the replayed rounds, per sample
    then: Change | None = None  # a cross-round pair: masked in round `then_round` of each replay
    then_round: int = 0


def plans(parent: Transcript, pairs: bool = False) -> list[Plan]:
    """Single turns cheapest first; with `pairs`, then pairs of one round and pairs across two rounds
    (an earlier turn's change with a later wrong turn masked), cheapest first."""
    def of(c: Candidate) -> Plan:
        return Plan(((c.round, c.agent, c.neutraliser), *c.also), c.spec, c.estimated_calls)
    found = [of(c) for c in candidates(parent)]
    if pairs:
        found += [of(c) for c in pair_candidates(parent)]
        singles = candidates(parent)
        # the earlier change replayed up to the later round only, then that round's turn masked and on to the end
        cross = [Plan(((a.round, a.agent, a.neutraliser), (b.round, b.agent, "mask")),
                      ForkSpec(a.spec.from_round, a.spec.changes, rounds=b.round + 1), a.estimated_calls,
                      Change("mask", b.agent), b.round)
                 for a in singles for b in singles if b.neutraliser == "mask" and a.round < b.round]
        found += sorted(cross, key=lambda p: (p.calls, p.turns))
    return found


async def sampled_blame(parent: Transcript, run_id: str, run_fork: SampleFork, budget: int, samples: int,
                        pairs: bool = False) -> tuple[list[SampledBlame], list[tuple], int]:
    """(one row per counterfactual sampled, the turns of those left out for the budget, the calls made, the
    baselines' included). For each fork
    round, K plain replays first (the baseline P(correct) after that round as it was), then each
    counterfactual K times; one that does not fit whole in what is left is left out, so every row has K
    complete samples or is cut (its samples so far, `cut` True). A counterfactual with no live round (the
    last round's answer replaced) is deterministic: one replay, no call."""
    if parent.task.gold is None or parent.correct is not False:
        raise ValueError("Blame needs a finished run with a wrong final answer and a gold answer; "
                         "choose a failed run (python -m r2mad export lists them with their outcome).")
    if samples < 1:
        raise ValueError("--samples must be 1 or more; give how many replays each counterfactual gets.")
    meter, seeds = CallMeter(budget), sample_seeds(parent.settings.get("seed"), samples)
    baselines: dict[int, tuple[int, int]] = {}  # from_round -> (correct, n) of the plain replays
    rows, skipped = [], []
    last = len(parent.finished().rounds)
    for plan in plans(parent, pairs):
        f = plan.spec.from_round
        deterministic = f == last and plan.then is None
        need = plan.calls * (1 if deterministic else samples)
        base_need = 0 if deterministic or f in baselines else plan.calls * samples
        if need + base_need > meter.left:
            skipped.append(plan.turns)
            continue
        if deterministic:
            base = (0, 1)  # the parent itself: wrong, and nothing random after it
        else:
            if f not in baselines:
                ok, n, _, cut, _ = await _sample(ForkSpec(f), None, seeds, run_fork, meter)
                if cut:
                    skipped.append(plan.turns)
                    break  # the budget ended inside the baseline: nothing starts after a cut replay
                baselines[f] = (ok, n)
            base = baselines[f]
        ok, n, used, cut, forks = await _sample(plan.spec, plan, seeds[:1] if deterministic else seeds,
                                                run_fork, meter)
        if deterministic:
            d = low = high = float(ok)
        elif n:
            d, low, high = change_interval(ok, n, base[0], base[1])
        else:
            d = low = high = None
        rows.append(SampledBlame(run_id, plan.turns, n, ok, base[1], base[0], d, low, high, used, tuple(forks),
                                 cut, deterministic, time.time()))
        if cut:
            break  # the budget is spent: nothing starts after a cut replay
    return rows, skipped, meter.used


async def _sample(spec: ForkSpec, plan: Plan | None, seeds: list[int], run_fork: SampleFork, meter: CallMeter):
    """(correct, complete samples, calls, cut, fork ids) of `spec` replayed once per seed."""
    ok = n = 0
    used, forks = meter.used, []
    for seed in seeds:
        refused = meter.refused
        fork_id, t = await run_fork(spec, meter.wrap, seed=seed)
        if (plan is not None and plan.then is not None and meter.refused == refused
                and len(t.finished().rounds) > plan.then_round):  # else it stopped early: that is its outcome
            then = ForkSpec(plan.then_round + 1, (plan.then,))  # the later turn, as this replay wrote it
            fork_id, t = await run_fork(then, meter.wrap, seed=seed, parent=(fork_id, t))
        if meter.refused > refused:
            return ok, n, meter.used - used, True, forks
        forks.append(fork_id)
        n += 1
        ok += bool(t.correct)
    return ok, n, meter.used - used, False, forks


def verdict(row: SampledBlame) -> str:
    """In words: the change in P(correct) and its interval, or why there is none."""
    if row.cut and not row.samples:
        return "cut by the budget before a sample finished"
    if row.deterministic:
        return f"deterministic (no live call): the answer {'turns correct' if row.correct else 'stays wrong'}"
    return (f"P(correct) {row.correct}/{row.samples} vs {row.base_correct}/{row.base_samples} as it was: "
            f"change {row.change:+.2f} [95% CI {row.low:+.2f}, {row.high:+.2f}]" + (" (cut)" if row.cut else ""))
