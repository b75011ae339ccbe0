"""Who moved whom in a debate, and two runs round against round. An agent that changes its answer at
round t to one that other agents held at t-1 was moved by them (one edge from each holder). Pure."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from r2mad.annotation.detectors import answer_key, turns_by_agent
from r2mad.types import Transcript


@dataclass(frozen=True)
class Move:
    round: int
    source: int  # the agent that held the answer at round - 1 (0-based)
    target: int  # the agent that switched to it at round
    answer: str


def moves(t: Transcript) -> list[Move]:
    t, kind, out = t.finished(), t.task.kind, []
    for index in range(1, len(t.rounds)):
        before, after = turns_by_agent(t.rounds[index - 1]), turns_by_agent(t.rounds[index])
        for agent, turn in sorted(after.items()):
            new = answer_key(turn.answer, kind)
            old = answer_key(before[agent].answer, kind) if agent in before else None
            if new is None or new == old:
                continue
            out += [Move(index, j, agent, str(turn.answer)) for j, prev in sorted(before.items())
                    if j != agent and answer_key(prev.answer, kind) == new]
    return out


def edge_counts(t: Transcript) -> dict[tuple[int, int], int]:
    """(source, target) -> how many times source's answer was adopted by target."""
    return dict(Counter((m.source, m.target) for m in moves(t)))


def compare_rows(a: Transcript, b: Transcript) -> list[list[str]]:
    """Round against round: each run's answers (agent order), consensus, and correct agents."""
    def cells(t: Transcript, index: int) -> list[str]:
        rounds = t.finished().rounds
        if index >= len(rounds):
            return ["—", "—"]
        rnd = rounds[index]
        answers = " ".join(str(x.answer) for x in sorted(rnd.turns, key=lambda x: x.agent))
        return [answers, f"{rnd.consensus:.2f}"]
    n = max(len(a.finished().rounds), len(b.finished().rounds))
    rows = [[str(i), *cells(a, i), *cells(b, i)] for i in range(n)]
    rows.append(["final", str(a.final), _verdict(a), str(b.final), _verdict(b)])
    return rows


def _verdict(t: Transcript) -> str:
    return "—" if t.correct is None else ("correct" if t.correct else "wrong")
