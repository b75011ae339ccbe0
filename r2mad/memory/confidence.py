"""Memory-derived peer confidence (R²-MAD Eq. 11), its high/low label and the <confidence> annotation
added after a peer's response. Pure functions; retrieval and embedding happen elsewhere."""
from __future__ import annotations

from typing import Literal, Sequence

Label = Literal["high", "low"]

HIGH_NOTE = ("<confidence>High: in similar past debate states, this agent's stance was usually "
             "correct.</confidence>")
LOW_NOTE = ("<confidence>Low: in similar past debate states, this agent's stance was usually wrong "
            "or had little support.</confidence>")


def peer_confidence(similarities: Sequence[float], correct: Sequence[bool],
                    no_evidence: float | None = None) -> float | None:
    """c = sum_k sim_k * zeta_k / sum_k sim_k over the cases given (Eq. 11).

    `no_evidence` when there are no cases or no positive similarity (nothing to weigh): None (no label,
    the paper text) or 0.0 (low, the authors' code)."""
    if len(similarities) != len(correct):
        raise ValueError(f"peer_confidence got {len(similarities)} similarities but "
                         f"{len(correct)} correctness flags; pass one of each per retrieved case.")
    # Cosine similarity can be negative; a negative weight would flip a case's vote and could push
    # c outside [0, 1], so a dissimilar past response counts as zero evidence instead.
    weights = [max(0.0, float(s)) for s in similarities]
    total = sum(weights)
    if total <= 0.0:
        return no_evidence
    return sum(w for w, ok in zip(weights, correct) if ok) / total


def confidence_label(c: float | None, high: float = 0.55, low: float = 0.45) -> Label | None:
    """'high' when c > high, 'low' when c < low, otherwise (or without evidence) no label."""
    if c is None:
        return None
    if c > high:
        return "high"
    if c < low:
        return "low"
    return None


def annotate(response: str, label: Label | None) -> str:
    """The peer's response followed by our confidence note; unchanged when there is no label."""
    if label == "high":
        return f"{response.rstrip()}\n{HIGH_NOTE}"
    if label == "low":
        return f"{response.rstrip()}\n{LOW_NOTE}"
    return response
