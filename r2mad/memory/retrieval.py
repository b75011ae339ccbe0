"""Which memory cases an agent sees: the debate-state text, consensus-aware MMR (R²-MAD Eq. 7-8) and the
ablation policies. Pure numpy on given similarities; no store, no embedder, no prompts."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from r2mad.types import Case

POLICIES = (
    "state-aware",  # MMR with lambda = 1 - gamma * Cons(Z^(t-1)) (the paper's policy; the default)
    "fixed-0.25",   # MMR with lambda fixed at 0.25
    "fixed-0.5",    # MMR with lambda fixed at 0.5
    "fixed-0.75",   # MMR with lambda fixed at 0.75
    "similarity",   # the k most similar cases, reward ignored
    "positive",     # the most similar cases with reward > 0 over the agent's whole bank (no fallback)
    "diversity",    # a random anchor among the candidates, then the least redundant ones (max-min)
    "random",       # k cases drawn uniformly from the agent's whole bank
)
WHOLE_BANK = ("positive", "random")  # policies that draw their own candidates from the agent's whole bank


def consensus_lambda(consensus: float, gamma: float = 0.9) -> float:
    """Eq. 8: lambda_t = 1 - gamma * Cons(Z^(t-1)). Low consensus -> large lambda -> relevant positives."""
    return 1.0 - gamma * consensus


def case_reward(case: Case, reward: str) -> float:
    """r(e): the case agent's correctness at the case's round ("round") or at the debate's end ("final")."""
    return float(case.own_correct) if reward == "round" else float(case.reward)


def policy_lambda(policy: str, consensus: float, gamma: float = 0.9) -> float | None:
    """The MMR trade-off a policy uses at this consensus; None for the policies that are not MMR."""
    if policy == "state-aware":
        return consensus_lambda(consensus, gamma)
    if policy.startswith("fixed-") and policy in POLICIES:
        return float(policy.removeprefix("fixed-"))
    return 0.0 if policy == "diversity" else None


def render_state(question: str, previous_response: str, summary: str, consensus: float) -> str:
    """The text embedded for a debate state s = <x, z_i^(t-1), h^(t-1), Cons> (stored cases and queries).

    Short parts come first so that an embedder which truncates long inputs (MiniLM keeps 256
    word pieces) still sees the consensus and the round summary."""
    return (f"Consensus of the previous round: {consensus:.2f}\n"
            f"Summary of the previous round: {summary.strip()}\n"
            f"Question: {question.strip()}\n"
            f"My previous response: {previous_response.strip()}")


def case_document(case: Case) -> str:
    """A case's own text, as MMR's redundancy term compares two cases (the authors embed their case
    documents): the question, the reference, the agent's response, its stance change and correctness."""
    reference = case.solution.strip() or case.gold
    stance = "changed its answer" if case.stance_changed else "kept its answer"
    return (f"Question: {case.question.strip()}\nReference: {reference}\nCorrect answer: {case.gold}\n"
            f"Response: {case.responses[case.agent].strip()}\nThe agent {stance}; it was "
            f"{'correct' if case.own_correct else 'wrong'}.")


def uses_redundancy(policy: str, k: int) -> bool:
    """Whether a policy's picks read the redundancy term: the MMR and diversity policies from the second pick on."""
    return k >= 2 and (policy_lambda(policy, 0.0) is not None)


def _greedy_mmr(relevance_term: np.ndarray, pairwise: np.ndarray, lam: float, k: int,
                picked: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Extend `picked` greedily by argmax of lam*relevance_term - (1-lam)*max sim to picked."""
    count = len(relevance_term)
    chosen = np.zeros(count, dtype=bool)
    redundancy = np.zeros(count)  # max over the picked set; 0 while it is empty
    for index, _ in picked:
        chosen[index] = True
        redundancy = np.maximum(redundancy, pairwise[:, index])
    while len(picked) < min(k, count):
        scores = lam * relevance_term - (1.0 - lam) * redundancy
        scores[chosen] = -np.inf
        best = int(np.argmax(scores))  # argmax returns the first maximum: ties go to the lower index
        picked.append((best, float(scores[best])))
        chosen[best] = True
        redundancy = np.maximum(redundancy, pairwise[:, best])
    return picked


def mmr_select(relevance: Sequence[float], rewards: Sequence[float], pairwise: np.ndarray,
               lam: float, k: int) -> list[tuple[int, float]]:
    """Eq. 7: pick k candidates greedily by lam*sim(e,s)*r(e) - (1-lam)*max_{e' in E} sim(e,e').

    Returns (candidate index, its MMR score when picked) in pick order. The first pick has no
    redundancy term, so with k = 1 it is the most similar positive case for every lambda > 0."""
    relevance, rewards = np.asarray(relevance, float), np.asarray(rewards, float)
    pairwise = np.asarray(pairwise, float).reshape(len(relevance), len(relevance))
    return _greedy_mmr(relevance * rewards, pairwise, lam, k, [])


def policy_pool(policy: str, relevance: Sequence[float], rewards: Sequence[float], size: int,
                rng: np.random.Generator | int | None = None) -> list[int]:
    """The candidates a WHOLE_BANK policy takes from the agent's whole bank (indices, in order), as the
    authors' code does: random -> `size` cases drawn uniformly; positive -> the `size` most similar cases
    with reward > 0. Peer confidence is computed over these, and the policy picks its K among them."""
    relevance, rewards = np.asarray(relevance, float), np.asarray(rewards, float)
    if policy == "random":
        count = len(relevance)
        return [int(i) for i in _generator(rng).choice(count, size=min(size, count), replace=False)]
    if policy == "positive":
        return _top_by_relevance(relevance, np.flatnonzero(rewards > 0))[:size]
    raise ValueError(f"Policy {policy!r} takes the top-3K by similarity; only {', '.join(WHOLE_BANK)} draw "
                     "their own candidates.")


def _top_by_relevance(relevance: np.ndarray, indices: np.ndarray) -> list[int]:
    order = np.lexsort((indices, -relevance[indices]))  # most relevant first, ties -> lower index
    return [int(indices[i]) for i in order]


def _generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def select_cases(policy: str, relevance: Sequence[float], rewards: Sequence[float],
                 pairwise: np.ndarray, consensus: float, k: int, gamma: float = 0.9,
                 rng: np.random.Generator | int | None = None) -> list[tuple[int, float]]:
    """Apply one retrieval policy to a candidate set; returns (candidate index, score) in pick order.
    The caller passes the top-3K pool, or a WHOLE_BANK policy's own candidates (policy_pool).

    The score is the MMR score for the MMR policies and the similarity for the others."""
    relevance, rewards = np.asarray(relevance, float), np.asarray(rewards, float)
    count = len(relevance)
    pairwise = np.asarray(pairwise, float).reshape(count, count)
    if count == 0 or k <= 0:
        return []
    if policy == "state-aware" or (policy.startswith("fixed-") and policy in POLICIES):
        return mmr_select(relevance, rewards, pairwise, policy_lambda(policy, consensus, gamma), k)
    if policy == "similarity":
        order = _top_by_relevance(relevance, np.arange(count))
    elif policy == "positive":  # no fallback: fewer than k positive cases give fewer cases
        order = _top_by_relevance(relevance, np.flatnonzero(rewards > 0))
    elif policy == "diversity":  # the anchor scores 0: it was drawn, not ranked
        anchor = int(_generator(rng).integers(count))
        return _greedy_mmr(relevance, pairwise, 0.0, k, [(anchor, 0.0)])
    elif policy == "random":
        order = [int(i) for i in _generator(rng).choice(count, size=min(k, count), replace=False)]
    else:
        raise ValueError(f"Unknown retrieval policy {policy!r}; choose one of {', '.join(POLICIES)}.")
    return [(i, float(relevance[i])) for i in order[:k]]
