"""Detectors of how a debate's outcome went wrong at its end: a right answer some agent held and the
vote discarded (the oracle gap), and an early stop on a unanimous wrong round. Exact, pure; registered
in detectors.DETECTORS."""
from __future__ import annotations

from r2mad.annotation.suggestion import Suggestion, answer_key, right, turns_by_agent
from r2mad.types import Transcript

EARLY_STOP = "All agents agree after round"


def correct_answer_outvoted(t: Transcript) -> list[Suggestion]:
    """The final (voted) answer is wrong while some agent's last-round answer was right."""
    if t.task.gold is None or t.correct is not False or not t.rounds:
        return []
    last = t.rounds[-1]
    holders = tuple(a for a, turn in sorted(turns_by_agent(last).items()) if right(t, turn))
    if not holders:
        return []
    held = str(turns_by_agent(last)[holders[0]].answer)
    return [Suggestion("correct_answer_outvoted", "correct_answer_outvoted", last.index, holders,
                       f"agent(s) {', '.join(str(a + 1) for a in holders)} ended on the right {held}; "
                       f"the vote chose {t.final}",
                       {"right_agents": [a + 1 for a in holders], "right_answer": held, "final": str(t.final),
                        "gold": t.task.gold})]


def premature_consensus_stop(t: Transcript) -> list[Suggestion]:
    """The debate stopped before its configured rounds because every agent agreed, on a wrong answer."""
    planned = (t.settings or {}).get("rounds")
    stopped = any(n.startswith(EARLY_STOP) for n in t.notices)  # the loop's own notice (debate.py)
    if t.task.gold is None or not t.rounds or not stopped:
        return []
    last = t.rounds[-1]
    turns = turns_by_agent(last)
    keys = {answer_key(turn.answer, t.task.kind) for turn in turns.values() if turn.error is None}
    if len(turns) < 2 or len(keys) != 1 or None in keys or any(right(t, turn) for turn in turns.values()):
        return []
    answer = str(next(iter(turns.values())).answer)
    return [Suggestion("premature_consensus_stop", "premature_consensus_stop", last.index, tuple(sorted(turns)),
                       f"all {len(turns)} agents agreed on the wrong {answer} in round {last.index}; the debate "
                       f"stopped after {len(t.rounds)} of {planned or '?'} rounds",
                       {"answer": answer, "gold": t.task.gold, "rounds_run": len(t.rounds),
                        "rounds_planned": planned})]
