"""Compute-matched baselines on a hand example: Self-Consistency's stored samples subsampled to k = 1..3,
and debate methods placed on that curve. Every figure is worked out in the comments (gold B)."""
import pytest

from r2mad.evaluation import budget as b
from r2mad.evaluation.costs import Prices, format_dollars, prices_of
from tests.helpers import metric_debate as debate

# Every turn of tests.test_metrics.debate costs 10 + 5 = 15 tokens.
# Q1 samples [B, A, B]: k=1 -> B, A, B: 2/3.  k=2 -> {0,1} tie, earliest B ✓; {0,2} B ✓; {1,2} tie, earliest A ✗:
#   2/3.  k=3 -> B 2:1 ✓: 1.
# Q2 samples [B, UNPARSED, A]: k=1 -> B ✓, nothing ✗, A ✗: 1/3.  k=2 -> {0,1} B ✓; {0,2} tie, earliest B ✓;
#   {1,2} A ✗: 2/3.  k=3 -> tie B, A, earliest B ✓: 1.
SC = [debate([["B", "A", "B"]], "B", method="sc", qid="q1"), debate([["B", None, "A"]], "B", method="sc", qid="q2")]


def test_subset_accuracy_votes_over_every_k_subset():
    assert [b.subset_accuracy(SC[0], k) for k in (1, 2, 3)] == pytest.approx([2 / 3, 2 / 3, 1])
    assert [b.subset_accuracy(SC[1], k) for k in (1, 2, 3)] == pytest.approx([1 / 3, 2 / 3, 1])


def test_sc_curve_from_stored_samples():
    curve = b.sc_curve(SC)
    # accuracy per k: (2/3 + 1/3)/2 = 0.5, (2/3 + 2/3)/2 = 2/3, 1; tokens: 45 per question * k/3 = 15 k
    assert [p.k for p in curve] == [1, 2, 3]
    assert [p.accuracy for p in curve] == pytest.approx([0.5, 2 / 3, 1.0])
    assert [p.tokens for p in curve] == pytest.approx([15, 30, 45])


def test_debate_methods_are_points_against_the_curve():
    curve = b.sc_curve(SC)
    # MAD, 3 agents x 2 rounds = 90 tokens per question, 1 of 2 right: beyond the curve, against k=3's 1.0
    mad = [debate([["B", "A", "A"], ["A", "A", "B"]], "A", qid="q1"),
           debate([["B", "B", "A"], ["B", "B", "B"]], "B", qid="q2")]
    m = b.matched(curve, mad)
    assert (m.tokens, m.accuracy, m.sc_accuracy, m.where) == (90, 0.5, 1.0, "beyond the curve")
    assert m.difference == pytest.approx(-0.5)
    # 37.5 tokens sits halfway between k=2 (30, 2/3) and k=3 (45, 1): 2/3 + 0.5 * 1/3 = 5/6
    assert b.interpolate(curve, 37.5) == (pytest.approx(5 / 6), "on the curve")
    assert b.interpolate(curve, 10) == (0.5, "below the curve")
    assert b.matched([], mad) is None


def test_cost_arithmetic():
    # 1,200 prompt tokens at $0.20 per million + 300 completion tokens at $0.60 per million:
    # 1200 * 0.2e-6 + 300 * 0.6e-6 = 0.00024 + 0.00018 = $0.00042
    prices = Prices(0.20, 0.60)
    assert prices.dollars(1200, 300) == pytest.approx(0.00042)
    assert format_dollars(0.00042) == "$0.000420" and format_dollars(12.3) == "$12.30"
    assert format_dollars(None) == "–"

    class Backbone:
        price_input_per_m, price_output_per_m = None, 0.6

    assert prices_of(Backbone()) == Prices(0.0, 0.6)  # input free when only output is priced
    Backbone.price_output_per_m = None
    assert prices_of(Backbone()) is None


def test_the_report_says_where_a_method_sits_against_voting():
    from r2mad.evaluation.trust import _verdict

    curve = b.sc_curve(SC)  # (15, 0.5), (30, 2/3), (45, 1.0)
    assert _verdict(b.Matched(37.5, 0.9, 5 / 6, "on the curve"), curve) == "beats voting at the same cost"
    assert _verdict(b.Matched(37.5, 0.8, 5 / 6, "on the curve"), curve) == "does no better than voting at the same cost"
    # 90 tokens is twice what all 3 samples cost
    assert _verdict(b.Matched(90, 0.5, 1.0, "beyond the curve"), curve) == (
        "does no better than voting with all 3 samples, at 2.0× their tokens")
    assert _verdict(b.Matched(10, 0.6, 0.5, "below the curve"), curve) == "beats one sample, for fewer tokens"
