"""Blind comparisons waiting for their vote, process-wide: their runs stay out of the Inspect tab and the API
(their method and final answer would unblind the vote) until the vote, a skip, or SEAL_S. Kept in memory only."""
from __future__ import annotations

import threading
import time

SEAL_S = 3600.0  # a comparison nobody votes on is unsealed after this long


class Sealed:
    """Run ids of blind comparisons waiting for their vote, process-wide: the Inspect tab lists and opens none
    of them (their method and final answer would unblind the vote) until the vote, a skip, or SEAL_S."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def seal(self, run_ids) -> None:
        with self._lock:
            self._until.update({r: time.monotonic() + SEAL_S for r in run_ids})

    def unseal(self, run_ids) -> None:
        with self._lock:
            for r in run_ids:
                self._until.pop(r, None)

    def __contains__(self, run_id: object) -> bool:
        with self._lock:
            until = self._until.get(run_id)  # type: ignore[arg-type]
            if until is not None and until < time.monotonic():
                del self._until[run_id]  # type: ignore[arg-type]
                until = None
        return until is not None


SEALED_WORDS = ("This run belongs to a blind comparison waiting for its vote; vote or skip in the Debate tab, "
                "then open it here.")
