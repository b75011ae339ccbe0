"""Compute-matched baselines: Self-Consistency's stored samples subsampled to k = 1..N give accuracy against
tokens per question, a curve on which each debate method is a point, so a report can say whether a debate
beats voting at the same cost. Pure functions over `Transcript`s; no I/O, no model calls."""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

from r2mad.evaluation.metrics import final_correct, scored
from r2mad.grading.answers import is_correct, same_answer
from r2mad.types import Transcript


@dataclass(frozen=True)
class CurvePoint:
    k: int  # samples voted on
    accuracy: float  # expected plurality-vote accuracy over every k-subset of the stored samples
    tokens: float  # mean tokens per question for k samples


def subset_accuracy(t: Transcript, k: int) -> float:
    """Share of the k-subsets of a Self-Consistency run's samples whose plurality vote is correct (ties to
    the earliest sample, UNPARSED and failed samples never win): the accuracy of voting over k random
    samples of this question, computed exactly."""
    turns = t.rounds[0].turns
    answers = [None if turn.error else turn.answer for turn in turns]
    group: list[int] = []  # each sample's answer class: the first sample with the same answer (-1: none)
    for i, a in enumerate(answers):
        if a is None or not a.parsed:
            group.append(-1)
        else:
            group.append(next((j for j in range(i) if group[j] == j and same_answer(a, answers[j], t.task, t.judged)),
                              i))
    right = {g: bool(is_correct(answers[g], t.task, t.judged)) for g in set(group) if g >= 0}
    wins = total = 0
    for subset in combinations(range(len(answers)), k):
        counts: dict[int, int] = {}
        for i in subset:
            if group[i] >= 0:
                counts[group[i]] = counts.get(group[i], 0) + 1
        if counts:
            best = max(counts.values())
            winner = next(group[i] for i in subset if counts.get(group[i]) == best)
            wins += right[winner]
        total += 1
    return wins / total


def sc_curve(ts: Sequence[Transcript]) -> list[CurvePoint]:
    """Accuracy and tokens per question for k = 1..N samples, N the fewest samples any question kept.
    Tokens for k samples are k/N of the question's tokens (every call counted, answer-guard calls too):
    what k separate requests cost; with one request for n samples the prompt is paid once, so this is an
    upper bound there."""
    items = [t for t in scored(ts) if t.rounds and t.rounds[0].turns]
    if not items:
        return []
    depth = min(len(t.rounds[0].turns) for t in items)
    points = []
    for k in range(1, depth + 1):
        acc = sum(subset_accuracy(t, k) for t in items) / len(items)
        tokens = sum(t.usage().tokens * k / len(t.rounds[0].turns) for t in items) / len(items)
        points.append(CurvePoint(k, acc, tokens))
    return points


@dataclass(frozen=True)
class Matched:
    """A method's accuracy against Self-Consistency's at the same tokens per question."""
    tokens: float
    accuracy: float
    sc_accuracy: float  # interpolated on the curve; its end point beyond it
    where: str  # "on the curve", "beyond the curve" (costs more than N samples), "below the curve" (< 1)

    @property
    def difference(self) -> float:
        return self.accuracy - self.sc_accuracy


def matched(curve: Sequence[CurvePoint], ts: Sequence[Transcript]) -> Matched | None:
    """Where a method's (tokens per question, accuracy) sits against the curve; None without either."""
    items = scored(ts)
    if not curve or not items:
        return None
    tokens = sum(t.usage().tokens for t in items) / len(items)
    accuracy = sum(bool(final_correct(t)) for t in items) / len(items)
    return Matched(tokens, accuracy, *interpolate(curve, tokens))


def interpolate(curve: Sequence[CurvePoint], tokens: float) -> tuple[float, str]:
    """Self-Consistency's accuracy at `tokens` per question: linear between neighbouring k, clamped at the
    ends (and said so)."""
    if tokens <= curve[0].tokens:
        return curve[0].accuracy, "on the curve" if math.isclose(tokens, curve[0].tokens) else "below the curve"
    if tokens >= curve[-1].tokens:
        return curve[-1].accuracy, "on the curve" if math.isclose(tokens, curve[-1].tokens) else "beyond the curve"
    for lo, hi in zip(curve, curve[1:]):
        if lo.tokens <= tokens <= hi.tokens:
            share = (tokens - lo.tokens) / (hi.tokens - lo.tokens) if hi.tokens > lo.tokens else 0.0
            return lo.accuracy + share * (hi.accuracy - lo.accuracy), "on the curve"
    return curve[-1].accuracy, "beyond the curve"
