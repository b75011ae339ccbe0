"""Paired comparisons on hand-made tables and transcripts: McNemar's exact test, the paired bootstrap
with a fixed generator, and the helped / hurt ledger. Expected figures are worked out in the comments."""
import math

import numpy as np
import pytest

from r2mad.evaluation import paired as p
from tests.helpers import metric_debate as debate


def test_mcnemar_exact_on_a_hand_table():
    # b = 10, c = 2: n = 12 discordant pairs, P(X <= 2 | 12, 1/2) = (1 + 12 + 66) / 4096 = 79/4096;
    # two-sided p = 2 * 79/4096 = 0.03857
    assert p.mcnemar_exact(10, 2) == pytest.approx(0.0386, abs=5e-5)
    assert p.mcnemar_exact(2, 10) == p.mcnemar_exact(10, 2)
    # b = c = 3: the observation sits in the middle, p = 1; no discordant pairs: nothing to test, p = 1
    assert p.mcnemar_exact(3, 3) == pytest.approx(1.0)
    assert p.mcnemar_exact(0, 0) == 1.0
    # b = 5, c = 0: 2 * (1/2)^5 = 0.0625
    assert p.mcnemar_exact(5, 0) == pytest.approx(0.0625)


def outcomes():
    # 20 questions: 6 where only A is right, 2 where only B is, 4 both right, 8 both wrong.
    a = [True] * 6 + [False] * 2 + [True] * 4 + [False] * 8
    b = [False] * 6 + [True] * 2 + [True] * 4 + [False] * 8
    return a, b


def test_paired_bootstrap_is_reproducible_and_near_the_normal_interval():
    a, b = outcomes()
    # d = a - b: six +1, two -1, twelve 0 -> mean 0.2; var(d) = 8/20 - 0.2² = 0.36, so the standard error
    # of the mean is 0.6 / sqrt(20) = 0.1342 and the normal 95% interval is 0.2 ± 0.263 = [-0.063, 0.463].
    low, high = p.paired_bootstrap(a, b, np.random.default_rng(7))
    assert (low, high) == p.paired_bootstrap(a, b, np.random.default_rng(7))
    assert low == pytest.approx(-0.063, abs=0.06) and high == pytest.approx(0.463, abs=0.06)
    assert low < 0.2 < high
    # Pairs resampled together: with B a copy of A shifted by nothing, the difference never varies.
    assert p.paired_bootstrap(a, a, np.random.default_rng(7)) == (0.0, 0.0)
    with pytest.raises(ValueError, match="same questions"):
        p.paired_bootstrap(a, b[:-1], np.random.default_rng(7))


def test_paired_bootstrap_is_narrower_than_an_unpaired_one():
    # Strongly correlated methods: 30 questions both right, 30 both wrong, 4 only A right. The paired
    # standard error is sqrt(4/64 - (1/16)²)/8 = 0.0303, while independent samples would give about
    # sqrt(2 * 0.25 / 64) = 0.088; the interval must reflect the pairing.
    a = [True] * 30 + [False] * 30 + [True] * 4
    b = [True] * 30 + [False] * 30 + [False] * 4
    low, high = p.paired_bootstrap(a, b, np.random.default_rng(1))
    assert high - low < 2 * 1.96 * 0.0303 + 0.03
    assert low >= 0.0  # A is never worse on any question


def test_compare_aligns_questions_and_counts_discordant_pairs():
    # gold B. A right on q1, q2, q3; B right on q2, q4; q5 only A has (left out of the pairing).
    a = [debate([["B"]], "B", method="cot", qid=q) for q in ("q1", "q2", "q3")] + [
        debate([["A"]], "A", method="cot", qid="q4"), debate([["B"]], "B", method="cot", qid="q5")]
    b = [debate([["B"]], "B", method="sc", qid="q4"), debate([["B"]], "B", method="sc", qid="q2"),
         debate([["A"]], "A", method="sc", qid="q1"), debate([["C"]], "C", method="sc", qid="q3")]
    c = p.compare("cot", a, "sc", b, np.random.default_rng(0))
    # pairs q1 (A only), q2 (both), q3 (A only), q4 (B only): n 4, accuracies 3/4 and 2/4, b 2, c 1
    assert (c.n, c.a_only, c.b_only) == (4, 2, 1)
    assert c.accuracy_a == 0.75 and c.accuracy_b == 0.5 and c.difference == pytest.approx(0.25)
    # McNemar b=2, c=1: P(X <= 1 | 3) = 4/8, two-sided 1.0
    assert c.p_value == pytest.approx(1.0)
    assert c.low <= 0.25 <= c.high


def test_ledger_reads_round0_vote_against_final():
    # gold B. helped: r0 vote A (A,A,B) -> final B.  hurt: r0 vote B (B,B,A) -> final A.
    # kept right: r0 B -> B.  kept wrong: r0 C (C,A,C) -> C.  Unparsed r0 (all UNPARSED) -> B: helped.
    ts = [debate([["A", "A", "B"], ["B", "B", "B"]], "B", qid="helped"),
          debate([["B", "B", "A"], ["A", "A", "B"]], "A", qid="hurt"),
          debate([["B", "B", "B"]], "B", qid="right"),
          debate([["C", "A", "C"], ["C", "C", "C"]], "C", qid="wrong"),
          debate([[None, None, None], ["B", "B", "B"]], "B", qid="unparsed"),
          debate([["B", "B", "B"]], "B", gold=None, qid="nogold")]
    entries = p.ledger(ts)
    assert [(e.question_id, e.kind) for e in entries] == [
        ("helped", "helped"), ("hurt", "hurt"), ("right", "kept right"), ("wrong", "kept wrong"),
        ("unparsed", "helped")]
    assert (entries[0].round0, entries[0].final, entries[4].round0) == ("A", "B", "UNPARSED")
    assert p.ledger_counts(entries) == {"helped": 2, "hurt": 1, "kept right": 1, "kept wrong": 1}


def test_compare_with_no_shared_questions_says_nan():
    c = p.compare("cot", [debate([["B"]], "B", qid="x")], "sc", [debate([["B"]], "B", qid="y")],
                  np.random.default_rng(0))
    assert c.n == 0 and math.isnan(c.accuracy_a) and math.isnan(c.low) and c.p_value == 1.0
