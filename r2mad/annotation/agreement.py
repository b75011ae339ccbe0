"""Agreement between annotators, label by label (Cohen's κ, Fleiss' κ, Krippendorff's α from
scikit-learn, statsmodels and krippendorff), detector precision and recall against adjudicated final
labels, and the list of runs where annotators disagree. Pure functions over plain mappings."""
from __future__ import annotations

import math
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

MIN_RUNS = 20  # fewer runs labelled by two or more people: κ and α come with a caution
LabelsByRun = Mapping[str, Mapping[str, Sequence[str]]]  # run -> annotator -> labels


@dataclass(frozen=True)
class LabelAgreement:
    """One label's agreement over the runs two or more people labelled (n runs). Cohen's κ only when
    exactly two annotators labelled them all; Fleiss' κ over the runs with the most common number of
    annotators (it needs the same count on every run); α over every run, gaps allowed."""
    label: str
    n: int
    cohen: float | None
    fleiss: float | None
    alpha: float | None


@dataclass(frozen=True)
class DetectorScore:
    label: str
    precision: float | None
    recall: float | None
    true_pos: int
    false_pos: int
    false_neg: int


def _number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 4)


def _overlap(labels: LabelsByRun) -> dict[str, Mapping[str, Sequence[str]]]:
    return {run: by for run, by in labels.items() if len(by) >= 2}


def cohen(a: Sequence[int], b: Sequence[int]) -> float | None:
    from sklearn.metrics import cohen_kappa_score
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _number(cohen_kappa_score(a, b))


def fleiss(rows: Sequence[Sequence[int]]) -> float | None:
    """rows: per run, how many annotators gave each category (same total on every row)."""
    from statsmodels.stats.inter_rater import fleiss_kappa
    with warnings.catch_warnings(), __import__("numpy").errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _number(fleiss_kappa(rows, method="fleiss"))


def alpha(matrix: Sequence[Sequence[float]]) -> float | None:
    """matrix: annotators × runs, nan where an annotator did not label the run (nominal level)."""
    import krippendorff
    import numpy as np
    data = np.asarray(matrix, dtype=float)
    if len(set(data[~np.isnan(data)].tolist())) < 2:
        return None  # one value only: agreement is undefined, not perfect
    return _number(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def label_agreement(labels: LabelsByRun, taxonomy: Iterable[str]) -> list[LabelAgreement]:
    """Per taxonomy label: presence (1) or absence (0) of the label in each annotator's set."""
    runs = _overlap(labels)
    people = sorted({a for by in runs.values() for a in by})
    sizes = Counter(len(by) for by in runs.values())
    common = max(sizes, key=lambda k: (sizes[k], k)) if sizes else 0
    out = []
    for label in taxonomy:
        has = {run: {a: int(label in ls) for a, ls in by.items()} for run, by in runs.items()}
        kappa = None
        if len(people) == 2:
            kappa = cohen([has[r][people[0]] for r in has], [has[r][people[1]] for r in has])
        rows = [[common - sum(v.values()), sum(v.values())] for v in has.values() if len(v) == common]
        out.append(LabelAgreement(label, len(runs), kappa, fleiss(rows) if rows else None,
                                  alpha([[has[r].get(a, math.nan) for r in has] for a in people]) if has else None))
    return out


def disagreements(labels: LabelsByRun) -> list[tuple[str, dict[str, tuple[str, ...]]]]:
    """Runs labelled by two or more people whose label sets differ, with each person's labels."""
    return [(run, {a: tuple(ls) for a, ls in by.items()}) for run, by in _overlap(labels).items()
            if len({frozenset(ls) for ls in by.values()}) > 1]


def detector_scores(suggested: Mapping[str, Iterable[str]], final: Mapping[str, Iterable[str]],
                    labels: Iterable[str]) -> list[DetectorScore]:
    """Precision and recall of the detectors' labels against final labels, over the adjudicated runs.
    `suggested`: run -> labels some detector gave it."""
    from sklearn.metrics import precision_score, recall_score
    runs = sorted(final)
    out = []
    for label in labels:
        truth = [int(label in final[r]) for r in runs]
        guess = [int(label in set(suggested.get(r, ()))) for r in runs]
        tp = sum(t and g for t, g in zip(truth, guess))
        fp, fn = sum(guess) - tp, sum(truth) - tp
        precision = _number(precision_score(truth, guess, zero_division=math.nan)) if any(guess) else None
        recall = _number(recall_score(truth, guess, zero_division=math.nan)) if any(truth) else None
        out.append(DetectorScore(label, precision, recall, tp, fp, fn))
    return out


@dataclass(frozen=True)
class BlameAgreement:
    """How far people who gave a label agree on which turns caused it: the Jaccard overlap of their
    blamed sets, averaged over every pair of annotators on every run where both blamed turns for it."""
    label: str
    pairs: int
    mean_jaccard: float | None


def jaccard(a: Iterable, b: Iterable) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


def blame_agreement(blames: Mapping[str, Mapping[str, Mapping[str, Sequence]]],
                    taxonomy: Iterable[str]) -> list[BlameAgreement]:
    """blames: run -> annotator -> label -> blamed turns. One row per taxonomy label."""
    from itertools import combinations
    out = []
    for label in taxonomy:
        scores = [jaccard(x, y) for by in blames.values()
                  for x, y in combinations([turns.get(label) for turns in by.values() if turns.get(label)], 2)]
        out.append(BlameAgreement(label, len(scores), round(sum(scores) / len(scores), 4) if scores else None))
    return out
