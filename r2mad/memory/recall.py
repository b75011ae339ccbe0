"""One agent-round of R²-MAD retrieval over a memory bank: the policy's 3K candidates, K picked among them, and
each peer's confidence (Eq. 11). The policy maths lives in retrieval.py/confidence.py; the bank (bank.py) gives
the cases and their vectors."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from r2mad.memory.confidence import confidence_label, peer_confidence
from r2mad.memory.retrieval import (
    WHOLE_BANK,
    case_document,
    case_reward,
    policy_lambda,
    policy_pool,
    select_cases,
    uses_redundancy,
)
from r2mad.types import Case


@dataclass(frozen=True)
class Candidate:
    case: Case
    similarity: float  # cosine between the query state and the case's state
    state_vector: np.ndarray
    response_vectors: np.ndarray | None = None  # n_agents x dim, embeddings of Z^(t)


@dataclass(frozen=True)
class Retrieval:
    """What one agent retrieved in one round, and the peer confidences derived from it."""
    lam: float | None
    candidates: tuple[tuple[str, float, float], ...]  # (case id, similarity, reward), top-3K
    picked: tuple[tuple[str, float, float, float], ...]  # (case id, similarity, reward, policy score)
    cases: tuple[Case, ...]
    confidence: dict[int, tuple[float | None, str | None]]  # peer -> (c, "high" | "low" | None)
    seconds: float = 0.0


class Recalling:
    """The retrieval methods of the MemoryBank, which gives `candidates`, `embedder`, `_per_agent`, `_slots`,
    `_vectors` and `_lock`."""

    def retrieve(self, agent: int, state_text: str, peer_responses: dict[int, str], consensus: float,
                 k: int = 1, policy: str = "state-aware", gamma: float = 0.9, rng=None, **terms) -> Retrieval:
        """One agent-round: embed the state and the peers' responses (one encode call), then
        `retrieve_vectors`."""
        started = time.perf_counter()
        peers = sorted(peer_responses)
        vectors = self.embedder.encode([state_text] + [peer_responses[j] for j in peers])
        found = self.retrieve_vectors(agent, vectors[0], dict(zip(peers, vectors[1:])), consensus, k,
                                      policy, gamma, rng, **terms)
        return dataclasses.replace(found, seconds=time.perf_counter() - started)

    def retrieve_vectors(self, agent: int, state_vector: np.ndarray, peer_vectors: dict[int, np.ndarray],
                         consensus: float, k: int = 1, policy: str = "state-aware", gamma: float = 0.9,
                         rng=None, *, reward: str = "round", confidence_terms: str = "authors") -> Retrieval:
        """Take the policy's 3K candidates (the top-3K by state similarity; random: 3K drawn from the agent's
        whole bank; positive-only: its 3K most similar correct cases) and pick K among them by `policy`;
        then estimate each peer's confidence (Eq. 11).
        reward "round": r(e) is the case agent's correctness at the case's round; "final": at the end.
        confidence_terms "authors": over the 3K candidates, peer j's response at the case's previous round,
        weighted by the owner's correctness, no evidence = 0; "paper": over the K picked, peer j's response
        and correctness at the case's round, no evidence = no label."""
        started = time.perf_counter()
        rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
        if policy in WHOLE_BANK:
            everything = self.candidates(agent, state_vector, self._per_agent[agent])
            pool = [everything[i] for i in policy_pool(policy, [c.similarity for c in everything],
                                                       _rewards(everything, reward), 3 * k, rng)]
        else:
            pool = self.candidates(agent, state_vector, 3 * k)
        picks = []
        if pool:  # the redundancy term compares the case documents (only the second pick on reads it)
            documents = (np.stack(self._embedded([case_document(c.case) for c in pool]))
                         if uses_redundancy(policy, k) else np.zeros((len(pool), 1)))
            picks = select_cases(policy, [c.similarity for c in pool], _rewards(pool, reward),
                                 documents @ documents.T, consensus, k, gamma, rng)
        chosen = [pool[i] for i, _ in picks]
        if confidence_terms == "authors":  # one encode call for every peer's earlier responses
            self._embedded([t for peer in peer_vectors for c in pool
                            if (t := self._previous_response(c.case, peer)) is not None])
        confidence = {peer: self._confidence(peer, vector, pool if confidence_terms == "authors" else chosen,
                                             confidence_terms) for peer, vector in peer_vectors.items()}
        return Retrieval(
            lam=policy_lambda(policy, consensus, gamma),
            candidates=tuple((c.case.id, c.similarity, r) for c, r in zip(pool, _rewards(pool, reward))),
            picked=tuple((pool[i].case.id, pool[i].similarity, r, score)
                         for (i, score), r in zip(picks, _rewards(chosen, reward))),
            cases=tuple(c.case for c in chosen), confidence=confidence,
            seconds=time.perf_counter() - started)

    def _confidence(self, peer: int, vector: np.ndarray, cases: list[Candidate],
                    terms: str) -> tuple[float | None, str | None]:
        if terms == "paper":
            usable = [c for c in cases if peer < len(c.response_vectors)]
            value = peer_confidence([float(c.response_vectors[peer] @ vector) for c in usable],
                                    [c.case.correct[peer] for c in usable])
        else:
            earlier = [(c, self._previous_response(c.case, peer)) for c in cases]
            usable = [(c, text) for c, text in earlier if text is not None]
            vectors = self._embedded([text for _, text in usable])
            value = peer_confidence([float(v @ vector) for v in vectors],
                                    [c.case.own_correct for c, _ in usable], no_evidence=0.0)
        return value, confidence_label(value)

    def _previous_response(self, case: Case, peer: int) -> str | None:
        """Peer j's response at the case's previous round: what its own case of that round calls its
        previous response (the bank holds every agent's cases of a debate)."""
        with self._lock:
            twin = self._slots.get((case.question_id, peer, case.round))
        return None if twin is None else twin.previous_response

    def _embedded(self, texts: list[str]) -> list[np.ndarray]:
        """Embeddings of earlier responses and case documents, remembered by text (a pool repeats across
        rounds)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, self.embedder.encode(missing)))
        return [self._vectors[t] for t in texts]


def _rewards(candidates: Sequence[Candidate], reward: str) -> list[float]:
    return [case_reward(c.case, reward) for c in candidates]
