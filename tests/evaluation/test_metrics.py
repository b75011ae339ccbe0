"""Metrics on tiny hand-made transcripts (3 agents, up to 3 rounds, multiple choice, gold "B");
every expected figure is worked out by hand in the comments."""
import math

import pytest

from r2mad.evaluation import metrics as m
from r2mad.grading.answers import plurality_vote
from r2mad.types import AuxCall
from tests.helpers import ABSTAIN
from tests.helpers import metric_answer as answer
from tests.helpers import metric_debate as debate

# T1: the correct agent 0 is persuaded, agent 2 recovers.
#   r0 [B,A,A]  r1 [A,A,B]  r2 [A,A,B]; final plurality A (wrong)
#   r0->r1: a0 C->W, a1 W->W, a2 W->C;  r1->r2: a0 W->W, a1 W->W, a2 C->C
#   => c2w 1, w2c 1, c2c 1, w2w 3.  Round 0 has 2 of 3 wrong -> shared misconception.
T1 = debate([["B", "A", "A"], ["A", "A", "B"], ["A", "A", "B"]], final="A", qid="t1")
# T2: stopped early after round 1 (everyone agreed on B). r0 [B,B,A] r1 [B,B,B]; final B.
#   r0->r1: C->C, C->C, W->C => c2c 2, w2c 1.  Round 0 has 1 of 3 wrong -> not shared.
T2 = debate([["B", "B", "A"], ["B", "B", "B"]], final="B", qid="t2")
# T3: three-way split every round, [B,A,C]; plurality takes agent 0's B (correct) but only 1 of 3
#   agents is correct, so the strict majority fails. Transitions: c2c 2 (a0), w2w 4 (a1, a2).
T3 = debate([["B", "A", "C"]] * 3, final="B", qid="t3")


def test_shared_misconception_flags_a_wrong_round0_majority():
    assert m.shared_misconception(T1) is True  # [B,A,A]: 2 wrong > 3/2
    assert m.shared_misconception(T2) is False  # [B,B,A]: 1 wrong
    assert m.shared_misconception(T3) is True  # [B,A,C]: 2 wrong


def test_shared_misconception_counts_unparsed_as_wrong():
    t = debate([[None, "B", None]], final="B")  # 2 UNPARSED of 3 -> wrong majority
    assert m.shared_misconception(t) is True


def test_shared_misconception_is_undefined_without_gold_or_for_one_agent():
    assert m.shared_misconception(debate([["A", "A", "B"]], final="A", gold=None)) is None
    assert m.shared_misconception(debate([["A"]], final="A", method="cot")) is None


def test_transitions_count_a_persuaded_agent_and_a_recovering_one():
    assert m.transitions(T1) == m.Transitions(c2w=1, w2c=1, c2c=1, w2w=3)
    assert m.transitions(T2) == m.Transitions(c2w=0, w2c=1, c2c=2, w2w=0)


def test_transitions_skip_abstentions():
    # r0 [U,B,U] r1 [B,abstain,B]: a0 W->C, a1 skipped (failed call), a2 W->C.
    t = debate([[None, "B", None], ["B", ABSTAIN, "B"]], final="B")
    assert m.transitions(t) == m.Transitions(w2c=2)


def test_transition_rates_condition_on_the_state_before():
    # Totals over T1+T2+T3: c2w 1, w2c 1+1+0 = 2, c2c 1+2+2 = 5, w2w 3+0+4 = 7.
    # C->W = 1 / (1+5) = 1/6;  W->C = 2 / (2+7) = 2/9.
    rates = m.transition_rates([T1, T2, T3])
    assert rates["c2w"] == pytest.approx(1 / 6)
    assert rates["w2c"] == pytest.approx(2 / 9)
    assert (rates["correct_before"], rates["wrong_before"]) == (6, 9)
    # Shared subset = T1 + T3: c2w 1, c2c 1+2 = 3 -> 1/4;  w2c 1, w2w 3+4 = 7 -> 1/8.
    shared = m.transition_rates([T1, T2, T3], subset="shared")
    assert shared["c2w"] == pytest.approx(1 / 4)
    assert shared["w2c"] == pytest.approx(1 / 8)


def test_agent_accuracy_by_round_carries_an_early_stop_forward():
    # T1 correct per round: [1,0,0] [0,0,1] [0,0,1];  T2: [1,1,0] [1,1,1] and (carried) [1,1,1].
    # round 0: (1+2)/6 = 0.5;  round 1: (1+3)/6;  round 2: (1+3)/6 (without carrying: 1/3).
    assert m.agent_accuracy_by_round([T1, T2]) == pytest.approx([0.5, 4 / 6, 4 / 6])


def test_wilson_interval_for_7_of_10():
    # p = .7, z^2 = 3.8415, z^2/n = .38415, denominator 1.38415
    # centre = (.7 + .19207) / 1.38415 = .64449
    # half = 1.96 * sqrt(.7*.3/10 + 3.8415/400) / 1.38415 = 1.96 * sqrt(.030604) / 1.38415 = .24772
    # -> [.39678, .89221]
    low, high = m.wilson_interval(7, 10)
    assert low == pytest.approx(0.39678, abs=1e-4)
    assert high == pytest.approx(0.89221, abs=1e-4)
    est = m.accuracy([T2] * 7 + [T1] * 3)  # 7 correct finals of 10
    assert (est.value, est.n) == (0.7, 10)
    assert (est.low, est.high) == pytest.approx((low, high))


def test_strict_majority_differs_from_plurality():
    last = [answer(v) for v in ("B", "A", "C")]
    assert plurality_vote(last, "mcq").value == "B"  # three-way tie broken towards agent 0
    assert m.final_correct(T3) is True
    assert m.strict_majority_correct(T3) is False  # 1 of 3 correct is not more than half
    assert m.strict_majority_correct(T2) is True  # 3 of 3
    # Finals: T1 wrong, T2 right, T3 right -> 2/3;  strict majority: F, T, F -> 1/3.
    assert m.accuracy([T1, T2, T3]).value == pytest.approx(2 / 3)
    assert m.strict_majority_accuracy([T1, T2, T3]).value == pytest.approx(1 / 3)


def test_shared_misconception_accuracy_uses_the_subset():
    # Subset = T1 (final wrong) + T3 (final right) -> 1/2 on n = 2.
    est = m.shared_misconception_accuracy([T1, T2, T3])
    assert (est.value, est.n) == (0.5, 2)
    # A single-agent baseline placed on the subset through the debate runs of the same questions.
    cot = [debate([["B"]], final="B", method="cot", qid=q) for q in ("t1", "t2", "t3")]
    est = m.shared_misconception_accuracy(cot, reference=[T1, T2, T3])
    assert (est.value, est.n) == (1.0, 2)


def test_unparsed_is_never_correct():
    t = debate([[None, None, "B"]], final=None)
    assert m.agent_correct(t, 0) == [False, False, True]
    assert m.final_correct(t) is False
    assert m.accuracy([t]).value == 0.0


def test_parse_failures_do_not_count_abstentions():
    # r0 [U,B,U] r1 [B,abstain,B]: 2 UNPARSED among 5 answered turns.
    t = debate([[None, "B", None], ["B", ABSTAIN, "B"]], final="B")
    assert m.parse_failures(t) == 2
    assert m.parse_failure_rate([t]) == pytest.approx(2 / 5)
    assert m.strict_majority_correct(t) is True  # [B, abstain, B]: 2 of 3


def test_consensus_trajectory_and_rounds_used():
    assert m.consensus_trajectory(T2) == pytest.approx([2 / 3, 1.0])
    # UNPARSED agrees with nothing: [U, B, U] -> 1/3
    assert m.consensus_trajectory(debate([[None, "B", None]], final="B")) == pytest.approx([1 / 3])
    assert (m.rounds_used(T1), m.rounds_used(T2)) == (3, 2)


def test_token_split_separates_summary_and_advice():
    aux = (AuxCall("summary", 0, "s", 100, 20), AuxCall("summary", 1, "s", 80, 20),
           AuxCall("advice", 1, "adv", 30, 10, source=0, target=1),
           AuxCall("judge", 1, "YES", 5, 5),
           AuxCall("summary", 2, "", 999, 999, error="timeout"))  # failed: not counted
    t = debate([["B", "A", "A"], ["B", "B", ABSTAIN]], final="B", aux=aux, seconds=4.0)
    # debate: 5 answered turns * (10 + 5) = 75 (the abstained turn spent nothing)
    # summary: (100+20) + (80+20) = 220;  auxiliary: advice 40 + judge 10 = 50
    assert m.token_split(t) == {"debate": 75, "summary": 220, "auxiliary": 50}
    # cost over [t, T2]: T2 has 6 turns * 15 = 90 debate tokens, no aux, 0 s.
    assert m.cost([t, T2]) == pytest.approx({"debate_tokens": (75 + 90) / 2,
                                             "summary_tokens": 110.0,
                                             "auxiliary_tokens": 25.0, "seconds": 2.0})


def test_no_gold_is_left_out_of_accuracy_and_rejected_by_agent_correct():
    no_gold = debate([["A", "A", "B"]], final="A", gold=None)
    assert m.accuracy([no_gold, T2]).n == 1
    assert m.strict_majority_correct(no_gold) is None
    with pytest.raises(ValueError, match="no gold answer"):
        m.agent_correct(no_gold, 0)
    assert math.isnan(m.accuracy([]).value)
