"""Agreement figures on hand-computed tables (expected numbers worked out in the comments)."""
from __future__ import annotations

import pytest

from r2mad.annotation.agreement import (
    alpha,
    cohen,
    detector_scores,
    disagreements,
    fleiss,
    label_agreement,
)


def two_annotators():
    """Label X: ana on runs 1-4, bo on runs 1-3 and 5, runs 6-10 neither (both give 'other')."""
    runs = {}
    for i in range(1, 11):
        ana = ("x",) if i <= 4 else ("other",)
        bo = ("x",) if i <= 3 or i == 5 else ("other",)
        runs[f"r{i}"] = {"ana": ana, "bo": bo}
    return runs


def test_cohen_kappa_on_a_two_by_two_table():
    # yes/yes 3, yes/no 1, no/yes 1, no/no 5: po = 0.8, pe = 0.4*0.4 + 0.6*0.6 = 0.52,
    # kappa = (0.8 - 0.52) / 0.48 = 0.5833
    a = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    b = [1, 1, 1, 0, 1, 0, 0, 0, 0, 0]
    assert cohen(a, b) == pytest.approx(0.5833, abs=1e-4)


def test_krippendorff_alpha_nominal_two_coders():
    # coincidences o_11 = 6, o_00 = 10, o_01 = o_10 = 2; n = 20, n_1 = 8, n_0 = 12.
    # Do = 4/20 = 0.2; De = 2*12*8/(20*19) = 0.50526; alpha = 1 - 0.2/0.50526 = 0.6042
    a = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    b = [1, 1, 1, 0, 1, 0, 0, 0, 0, 0]
    assert alpha([a, b]) == pytest.approx(0.6042, abs=1e-4)
    assert alpha([[1, 1], [1, 1]]) is None  # one value only: undefined


def test_fleiss_kappa_three_raters():
    # present counts per run [3, 0, 2, 1, 3] of 3 raters: P_i = 1, 1, 1/3, 1/3, 1 -> mean 0.7333;
    # p(present) = 9/15 = 0.6, Pe = 0.36 + 0.16 = 0.52; kappa = (0.7333 - 0.52) / 0.48 = 0.4444
    rows = [[0, 3], [3, 0], [1, 2], [2, 1], [0, 3]]
    assert fleiss(rows) == pytest.approx(0.4444, abs=1e-4)


def test_label_agreement_per_label_and_disagreements():
    runs = two_annotators()
    runs["solo"] = {"ana": ("x",)}  # one annotator: not in any agreement figure
    x, other = label_agreement(runs, ["x", "other"])
    assert (x.label, x.n, x.cohen, x.alpha) == ("x", 10, pytest.approx(0.5833, abs=1e-4),
                                                pytest.approx(0.6042, abs=1e-4))
    # Fleiss with 2 raters: P_i = 1 on 8 runs, 0 on 2 -> 0.8; p = 8/20 -> Pe = 0.52; (0.8-0.52)/0.48
    assert x.fleiss == pytest.approx(0.5833, abs=1e-4)
    assert other.cohen == pytest.approx(0.5833, abs=1e-4)  # 'other' is the mirror image of 'x'
    assert [run for run, _ in disagreements(runs)] == ["r4", "r5"]
    assert dict(disagreements(runs))["r4"] == {"ana": ("x",), "bo": ("other",)}


def test_three_annotators_have_no_cohen_but_fleiss_and_alpha():
    counts = [3, 0, 2, 1, 3]
    runs = {f"r{i}": {p: (("x",) if j < c else ("other",)) for j, p in enumerate(("a", "b", "c"))}
            for i, c in enumerate(counts)}
    (x,) = label_agreement(runs, ["x"])
    assert x.cohen is None and x.fleiss == pytest.approx(0.4444, abs=1e-4)
    # alpha, nominal, 3 coders, no gaps: each unit has m=3 values, pairs weighted 1/(m-1) = 1/2.
    # disagreeing ordered pairs: unit [2 present,1 absent] has 2*1*2 = 4 -> 4/2 = 2 per such unit,
    # two such units -> o_01 + o_10 = 4; n = 15, n_1 = 9, n_0 = 6.
    # Do = 4/15 = 0.26667; De = 2*9*6/(15*14) = 0.51429; alpha = 1 - 0.26667/0.51429 = 0.4815
    assert x.alpha == pytest.approx(0.4815, abs=1e-4)


def test_detector_precision_and_recall_against_final_labels():
    # detector says x on r1, r2, r3; final x on r1, r2, r4; r6 is not adjudicated, so not counted.
    suggested = {"r1": ["x"], "r2": ["x"], "r3": ["x"], "r6": ["x"]}
    final = {"r1": ["x"], "r2": ["x", "y"], "r3": [], "r4": ["x"], "r5": []}
    x, y = detector_scores(suggested, final, ["x", "y"])
    assert (x.true_pos, x.false_pos, x.false_neg) == (2, 1, 1)
    assert x.precision == pytest.approx(2 / 3, abs=1e-4) and x.recall == pytest.approx(2 / 3, abs=1e-4)
    assert (y.precision, y.recall, y.false_neg) == (None, 0.0, 1)
