"""What every suggestion source shares: the Suggestion record (a taxonomy label for a run, with the turn
and the evidence) and the small helpers detectors read transcripts with. Pure; no detector here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from r2mad.grading.answers import is_correct
from r2mad.grading.kinds import kind_named
from r2mad.types import AgentTurn, Answer, Round, Transcript


@dataclass(frozen=True)
class Suggestion:
    """A machine's label for a run, with where it happened (round, 0-based agents) and why. `detector`
    names the source: a detector function, `counterfactual` (blame's replays), or another kind."""
    label: str
    detector: str
    round: int | None
    agents: tuple[int, ...]
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)


def answer_key(answer: Answer, kind: str) -> str | None:
    """A comparable form of a parsed answer; None for UNPARSED and abstentions."""
    if not answer.parsed or answer.how == "abstained":
        return None
    return kind_named(kind).key(answer.value)


def turns_by_agent(rnd: Round) -> dict[int, AgentTurn]:
    return {turn.agent: turn for turn in rnd.turns}


def right(t: Transcript, turn: AgentTurn | None) -> bool:
    """The turn exists, its call did not fail, and its answer matches the gold answer."""
    return turn is not None and turn.error is None and bool(is_correct(turn.answer, t.task, t.judged))


def span(text: str, limit: int = 240) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
