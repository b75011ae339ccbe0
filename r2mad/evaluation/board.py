"""The method board: visitors' blind votes (r2mad.runs.votes) aggregated with a Bradley-Terry model, with
bootstrap intervals, next to each method's accuracy in the same comparisons. A vote for one debate of k counts
as k - 1 pairwise wins of its method over the others of that comparison. The model is fitted with choix
(iterative Luce spectral ranking, `choix.ilsr_pairwise`); strengths are natural-log Bradley-Terry parameters
centred on 0, so that P(i is preferred to j) = 1 / (1 + exp(s_j - s_i)). Pure: no I/O, no Gradio."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Mapping, Sequence

import choix
import numpy as np

from r2mad.types import Vote

ALPHA = 0.1  # choix's regularisation: keeps a method that never won (or never lost) at a finite strength
BOOTSTRAP = 200  # resamples of the votes for the 95% intervals
MIN_VOTES = 1


@dataclass(frozen=True)
class BoardRow:
    method: str
    strength: float  # Bradley-Terry log strength, 0 = the average method on the board
    low: float | None  # 95% bootstrap interval of the strength (None: too few votes to resample)
    high: float | None
    votes: int  # comparisons voted on that held this method
    wins: int  # of those, how many it won
    correct: int  # its runs in those comparisons with a right final answer
    scored: int  # its runs in those comparisons that had a gold answer

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None


def pairwise(votes: Sequence[Vote]) -> list[tuple[str, str]]:
    """(winner, loser) per vote and per other method of its comparison."""
    return [(v.winner_method, other) for v in votes for other in v.runs if other != v.winner_method]


def bradley_terry(methods: Sequence[str], pairs: Sequence[tuple[str, str]], alpha: float = ALPHA) -> dict[str, float]:
    """Bradley-Terry log strengths (mean 0) of `methods` from (winner, loser) pairs; alpha 0 is the plain
    maximum-likelihood fit (it exists when every method both won and lost within a connected table)."""
    index = {m: i for i, m in enumerate(methods)}
    data = [(index[w], index[loser]) for w, loser in pairs]
    if len(methods) < 2 or not data:
        return {m: 0.0 for m in methods}
    params = choix.ilsr_pairwise(len(methods), data, alpha=alpha)
    params = params - params.mean()
    return {m: float(params[index[m]]) for m in methods}


def method_board(votes: Sequence[Vote], correct: Mapping[str, bool | None], *, alpha: float = ALPHA,
                 resamples: int = BOOTSTRAP, seed: int = 0) -> list[BoardRow]:
    """One row per method that appears in a vote, strongest first. `correct`: run id -> whether its final
    answer was right (None or missing: not scored). Intervals: percentiles 2.5 and 97.5 of the strengths
    refitted on `resamples` resamples of the votes (with replacement, a fixed seed)."""
    methods = sorted({m for v in votes for m in v.runs})
    if not methods:
        return []
    strengths = bradley_terry(methods, pairwise(votes), alpha)
    spread: dict[str, list[float]] = {m: [] for m in methods}
    rng = random.Random(seed)
    for _ in range(resamples if len(votes) > 1 else 0):
        sample = [votes[rng.randrange(len(votes))] for _ in votes]
        present = sorted({m for v in sample for m in v.runs})
        for m, s in bradley_terry(present, pairwise(sample), alpha).items():
            spread[m].append(s)
    rows = []
    for m in methods:
        held = [v for v in votes if m in v.runs]
        marks = [correct.get(v.runs[m]) for v in held]
        low, high = (float(np.percentile(spread[m], 2.5)), float(np.percentile(spread[m], 97.5))) \
            if len(spread[m]) >= 20 else (None, None)
        rows.append(BoardRow(m, strengths[m], low, high, len(held), sum(v.winner_method == m for v in held),
                             sum(x is True for x in marks), sum(x is not None for x in marks)))
    return sorted(rows, key=lambda r: (-r.strength, r.method))
