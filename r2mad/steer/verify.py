"""The right move, verified: an annotator's ideal text for a blamed turn put in place by a fork (the rest
of the debate replayed live after it), and whether that alone flips the run's outcome. The fork is the
caller's `run_fork`; the store keeps the text and the outcome (runs/counterfactuals.py)."""
from __future__ import annotations

from typing import Awaitable, Callable

from r2mad.runs.counterfactuals import Correction, corrections_of, record_verification
from r2mad.steer.fork import Change, ForkSpec
from r2mad.types import Transcript


def correction_spec(c: Correction) -> ForkSpec:
    """Replay rounds 0..c.round with agent c.agent's message there replaced by the ideal text; live after."""
    return ForkSpec(c.round + 1, (Change("edit", c.agent, c.ideal),))


async def verify(store, c: Correction, run_fork: Callable[[ForkSpec], Awaitable[tuple[str | None, Transcript]]]
                 ) -> Correction:
    """Fork the run with `c`'s text in place, keep what it ended with, and return the correction so verified."""
    fork_id, t = await run_fork(correction_spec(c))
    correct = t.correct if t.status == "done" else None
    record_verification(store, c, fork_id, t.final.value if correct is not None else None, correct)
    return next(x for x in corrections_of(store, c.run_id)
                if (x.round, x.agent, x.annotator) == (c.round, c.agent, c.annotator))


def outcome_words(c: Correction, run_correct: bool | None) -> str:
    """Verified: the fork's outcome against the run's ('flips wrong → right'); else 'not verified yet'."""
    if not c.verified:
        return "not verified yet"
    if c.correct is None:
        return "verification did not finish (the fork failed); verify again"
    was = {True: "right", False: "wrong", None: "unscored"}[run_correct]
    now = "right" if c.correct else "wrong"
    flipped = run_correct is not None and c.correct != run_correct
    return (f"**flips** {was} → {now} ({c.final_answer})" if flipped else f"does not flip: still {now} "
            f"({c.final_answer or 'UNPARSED'})")
