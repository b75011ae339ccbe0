"""How a finished round reads: which agents hold the voted answer, the consensus, and the dissent (the
leaders of the other groups), in words for the CLI, the app and the loop's closing notices (a debate stopped
for time among them). Pure: it asks the task's kind; the embeddings it reads were made off the event loop as
the answers arrived."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from r2mad.grading.kinds import kind_of
from r2mad.text import quoted
from r2mad.types import AgentTurn, Answer, Judged, Task, Transcript


@dataclass(frozen=True)
class Outcome:
    final: Answer
    holders: tuple[int, ...]  # agents (0-based) in the voted answer's group
    n: int  # all agents of the round, unparsed ones included
    dissent: tuple[tuple[tuple[int, ...], Answer], ...]  # (agents, leader's answer) of every other group

    @property
    def consensus(self) -> float:
        return len(self.holders) / self.n if self.n else 0.0


def outcome(turns: Sequence[AgentTurn], task: Task, judged: Sequence[Judged] = ()) -> Outcome:
    kind, answers = kind_of(task), [t.answer for t in turns]
    groups, won = kind.groups(answers, judged), kind.winner(answers, judged)
    members: dict[int, list[int]] = {}
    for turn, leader in zip(turns, groups):
        if leader is not None:
            members.setdefault(leader, []).append(turn.agent)
    holders = tuple(members.get(won, ()))
    dissent = tuple((tuple(agents), answers[leader]) for leader, agents in members.items() if leader != won)
    return Outcome(kind.vote(answers, judged), holders, len(turns), dissent)


def _agents(agents: Sequence[int]) -> str:
    names = [f"{a + 1}" for a in agents]
    return f"agent {names[0]}" if len(names) == 1 else "agents " + ", ".join(names[:-1]) + " and " + names[-1]


def dissent_line(result: Outcome) -> str:
    """'agent 3 holds 'Learn Rust first'; agent 2 holds …' (empty when nobody dissents)."""
    return "; ".join(f"{_agents(agents)} {'holds' if len(agents) == 1 else 'hold'} {quoted(answer.value, 120)}"
                     for agents, answer in result.dissent)


def agreement_line(t: Transcript) -> str:
    """'2 of 3 agents hold the final answer (0.67); dissent: agent 3 holds '…'' (the last finished round)."""
    done = [r for r in t.rounds if not r.details.get("running")]
    if not done:
        return "no round finished"
    result = outcome(done[-1].turns, t.task, t.judged)
    if not result.holders:
        return f"no agent gave an answer the {kind_of(t.task).label} kind could read"
    line = f"{len(result.holders)} of {result.n} agents hold the final answer ({result.consensus:.2f})"
    dissent = dissent_line(result)
    return f"{line}; dissent: {dissent}" if dissent else line


DISSENT = "Dissent: "  # how the loop's closing notice on an open question starts
UNDECIDED = "No judge: "  # how the loop's closing notice on what the rules left undecided starts


def undecided_line(turns: Sequence[AgentTurn], final: Answer, task: Task, judged: Sequence[Judged] = ()) -> str | None:
    """The closing notice of a debate without a judge: the pairs of last-round answers the rules kept apart, and a
    verdict against the gold they could not give; None when the rules decided everything."""
    kind = kind_of(task)
    values = sorted({t.answer.value for t in turns if t.answer.parsed})
    apart = sum(kind.ruling(a, b, judged, task.question).same is None
                for i, a in enumerate(values) for b in values[i + 1:])
    graded = kind.grade(final, task, judged)
    unknown = graded is not None and graded.same is None
    if not apart and not unknown:
        return None
    pairs = f"{apart} pair of answers" if apart == 1 else f"{apart} pairs of answers"
    said = [f"{pairs} the rules could not tell apart stayed apart (not checked for meaning)"] if apart else []
    if unknown:
        said.append("the final answer against the gold answer is undecided")
    return f"{UNDECIDED}{'; '.join(said)}. A judge backbone (the judge setting) would grade them."


def kind_line(t: Transcript) -> str:
    """'Answer kind: open question · consensus 0.67 · Dissent: agent 3 holds '…'.' from what the transcript
    stored (each round's consensus, the closing notice): nothing is compared again."""
    done = [r for r in t.rounds if not r.details.get("running")]
    consensus = f" · consensus {done[-1].consensus:.2f}" if done else ""
    dissent = next((n for n in t.notices if n.startswith(DISSENT)), "")
    return f"Answer kind: {kind_of(t.task).label}{consensus}" + (f" · {dissent}" if dissent else "")


TIME_LIMIT = "to stay within the time limit"  # in the closing notice of a debate stopped for time


def closing_lines(turns: Sequence[AgentTurn], final: Answer, task: Task, judged: Sequence[Judged], *,
                  judge: bool) -> list[str]:
    """A debate's closing notices on its last round: for a kind with no single right answer (open), the positions
    the vote did not pick; with no `judge`, what the rules left undecided (undecided_line)."""
    lines = []
    if kind_of(task).names_dissent and (dissent := dissent_line(outcome(turns, task, judged))):
        lines.append(f"{DISSENT}{dissent}.")
    if not judge and (undecided := undecided_line(turns, final, task, judged)):
        lines.append(undecided)
    return lines


def stopped_for_time(done: int, last: int, deadline_s: float) -> str:
    """The closing notice of a debate that ended early to keep to its time limit, with round `done`'s vote."""
    return f"Stopped after round {done} of {last} {TIME_LIMIT} of {deadline_s:g} s; the answer is round {done}'s vote."
