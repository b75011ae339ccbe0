"""A memory bank seen without the cases of some of its questions: what one debate reads when its question may be one
of them in another language (evaluation/leakage.py's maybe_translated), so that, refused or not, it never sees their
answers. Everything else is the bank's own."""
from __future__ import annotations

from collections import Counter

from r2mad.memory.recall import Candidate, Recalling


class Withheld(Recalling):
    """`bank` without the cases whose question id is in `question_ids`; retrieval (Recalling) runs on this view, so
    no candidate pool, pick or peer confidence reads a withheld case."""

    def __init__(self, bank, question_ids: frozenset[str]):
        self._bank, self.withheld = bank, frozenset(question_ids)
        self._hidden = Counter(c.agent for c in bank.cases() if c.question_id in self.withheld)  # per agent

    def __getattr__(self, name: str):
        return getattr(self._bank, name)

    def cases(self):
        return [c for c in self._bank.cases() if c.question_id not in self.withheld]

    def candidates(self, agent: int, query_vector, limit: int) -> list[Candidate]:
        found = self._bank.candidates(agent, query_vector, limit + self._hidden[agent])
        return [c for c in found if c.case.question_id not in self.withheld][:limit]
