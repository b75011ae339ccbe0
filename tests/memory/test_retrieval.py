"""Consensus-aware MMR and the ablation policies on a tiny hand-computed candidate set."""
import numpy as np
import pytest

from r2mad.memory.retrieval import (
    POLICIES,
    consensus_lambda,
    mmr_select,
    render_state,
    select_cases,
)

# Query state s = (1, 0). Four candidate states (unit 2-D vectors) and their outcome rewards:
#   c0 = (1.0,  0.0)  reward 0   sim(c0, s) = 1.0
#   c1 = (0.8,  0.6)  reward 1   sim(c1, s) = 0.8
#   c2 = (0.6,  0.8)  reward 1   sim(c2, s) = 0.6
#   c3 = (0.8, -0.6)  reward 0   sim(c3, s) = 0.8
# Pairwise sims: c0c1 .8, c0c2 .6, c0c3 .8, c1c2 .96, c1c3 .28, c2c3 0.
STATES = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.8, -0.6]])
QUERY = np.array([1.0, 0.0])
RELEVANCE = STATES @ QUERY
REWARDS = np.array([0.0, 1.0, 1.0, 0.0])
PAIRWISE = STATES @ STATES.T


def picks(result):
    return [index for index, _ in result]


def scores(result):
    return [score for _, score in result]


@pytest.mark.parametrize("consensus, expected", [(1 / 3, 0.7), (2 / 3, 0.4), (1.0, 0.1)])
def test_lambda_falls_as_consensus_rises(consensus, expected):
    assert consensus_lambda(consensus, gamma=0.9) == pytest.approx(expected)


def test_low_consensus_picks_relevant_positive_cases():
    # lambda = 0.7. Step 1: 0.7*sim*r = [0, .56, .42, 0] -> c1 (.56); c0 is most similar but negative.
    # Step 2: minus 0.3*max sim to c1 = [.24, -, .288, .084] -> [-.24, -, .132, -.084] -> c2 (.132).
    result = select_cases("state-aware", RELEVANCE, REWARDS, PAIRWISE, consensus=1 / 3, k=2)
    assert picks(result) == [1, 2]
    assert scores(result) == pytest.approx([0.56, 0.132])


def test_high_consensus_lets_a_contrastive_case_in():
    # lambda = 0.1. Step 1: [0, .08, .06, 0] -> c1 (.08).
    # Step 2: [0-.72, -, .06-.864, 0-.252] -> c3 (-.252), a negative case unlike c1.
    result = select_cases("state-aware", RELEVANCE, REWARDS, PAIRWISE, consensus=1.0, k=2)
    assert picks(result) == [1, 3]
    assert scores(result) == pytest.approx([0.08, -0.252])


def test_a_negative_case_is_never_picked_first_at_low_consensus():
    for consensus in (0.0, 1 / 3, 0.5):
        assert picks(select_cases("state-aware", RELEVANCE, REWARDS, PAIRWISE, consensus, k=1)) == [1]


def test_k_larger_than_the_pool_returns_every_candidate_in_mmr_order():
    # lambda = 0.7 after c1, c2: c0 -> 0 - .3*.8 = -.24, c3 -> 0 - .3*.28 = -.084 -> c3, then c0.
    result = mmr_select(RELEVANCE, REWARDS, PAIRWISE, lam=0.7, k=10)
    assert picks(result) == [1, 2, 3, 0]
    assert scores(result) == pytest.approx([0.56, 0.132, -0.084, -0.24])


def test_ties_go_to_the_lower_index():
    same = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert mmr_select(same @ QUERY, [1, 1], same @ same.T, lam=0.5, k=1) == [(0, 0.5)]


@pytest.mark.parametrize("policy, k, expected_picks, expected_scores", [
    # fixed-0.25: [0,.2,.15,0] -> c1; then -.75*[.8,-,.96,.28] + [0,-,.15,0] -> c3 (-.21)
    ("fixed-0.25", 2, [1, 3], [0.2, -0.21]),
    # fixed-0.5: c1 (.4); then [-.4, -, .3-.48, -.14] -> c3 (-.14)
    ("fixed-0.5", 2, [1, 3], [0.4, -0.14]),
    # fixed-0.75: c1 (.6); then [-.2, -, .45-.24, -.07] -> c2 (.21)
    ("fixed-0.75", 2, [1, 2], [0.6, 0.21]),
    # similarity: c0 (1.0), then c1 and c3 tie at .8 -> c1
    ("similarity", 2, [0, 1], [1.0, 0.8]),
    # positive: positives by similarity c1 (.8), c2 (.6), and no negative case to fill k = 3
    ("positive", 3, [1, 2], [0.8, 0.6]),
    # diversity: seed 1 draws the anchor c1 (score 0, drawn not ranked); then -max sim: c0 -.8,
    # c2 -.96, c3 -.28 -> c3; then max(sim to c1, c3): c0 .8, c2 .96 -> c0 (-.8)
    ("diversity", 3, [1, 3, 0], [0.0, -0.28, -0.8]),
])
def test_each_policy_on_the_same_candidates(policy, k, expected_picks, expected_scores):
    result = select_cases(policy, RELEVANCE, REWARDS, PAIRWISE, consensus=2 / 3, k=k, rng=1)
    assert picks(result) == expected_picks
    assert scores(result) == pytest.approx(expected_scores)


def test_state_aware_at_two_thirds_consensus():
    # lambda = 0.4: c1 (.32); then [-.48, -, .24-.576, -.168] -> c3 (-.168)
    result = select_cases("state-aware", RELEVANCE, REWARDS, PAIRWISE, consensus=2 / 3, k=2)
    assert picks(result) == [1, 3]
    assert scores(result) == pytest.approx([0.32, -0.168])


def test_diversity_anchor_is_random_so_k1_is_not_similarity_only():
    anchors = {picks(select_cases("diversity", RELEVANCE, REWARDS, PAIRWISE, 0.5, k=1, rng=seed))[0]
               for seed in range(40)}
    assert anchors == {0, 1, 2, 3}


def test_random_policy_is_uniform_over_candidates_and_seedable():
    first = select_cases("random", RELEVANCE, REWARDS, PAIRWISE, 0.5, k=2, rng=np.random.default_rng(7))
    again = select_cases("random", RELEVANCE, REWARDS, PAIRWISE, 0.5, k=2, rng=np.random.default_rng(7))
    assert first == again and len(set(picks(first))) == 2
    seen = {i for seed in range(40) for i in picks(select_cases("random", RELEVANCE, REWARDS, PAIRWISE,
                                                                0.5, k=1, rng=seed))}
    assert seen == {0, 1, 2, 3}


def test_every_policy_is_listed_and_unknown_ones_are_refused():
    for policy in POLICIES:
        assert len(select_cases(policy, RELEVANCE, REWARDS, PAIRWISE, 0.5, k=2, rng=0)) == 2
    assert select_cases("state-aware", [], [], np.zeros((0, 0)), 0.5, k=1) == []
    with pytest.raises(ValueError, match="Unknown retrieval policy 'fixed-0.3'"):
        select_cases("fixed-0.3", RELEVANCE, REWARDS, PAIRWISE, 0.5, k=1)


def test_state_text_labels_every_part():
    text = render_state("What is 2+2?", "I think \\boxed{4}.", "Two agents agree.", 2 / 3)
    assert "Consensus of the previous round: 0.67" in text
    assert "Question: What is 2+2?" in text
    assert "My previous response: I think \\boxed{4}." in text
    assert "Summary of the previous round: Two agents agree." in text
