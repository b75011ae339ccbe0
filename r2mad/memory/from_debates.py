"""Memory from debates: each finished debate as memory cases (one per agent per round t > 0, round 0 excluded).
Running the debates that build a bank is r2mad/engine/build_memory.py; the command is r2mad/commands/build_memory.py."""
from __future__ import annotations

from r2mad.grading.answers import is_correct, strip_think
from r2mad.prompts.common import format_task
from r2mad.types import Case, Transcript


def cases_from_transcript(t: Transcript) -> list[Case]:
    """Eq. 6: e_i^(t) = <s_i^(t), Z^(t), y, zeta_i^(t), r_i> for every agent i and round t > 0.
    r_i is agent i's outcome: 1 when its answer in the last round is correct, else 0."""
    rounds = t.rounds
    final_ok = [bool(is_correct(turn.answer, t.task, t.judged)) for turn in rounds[-1].turns]
    cases = []
    for r in range(1, len(rounds)):
        before, now = rounds[r - 1], rounds[r]
        responses = tuple(strip_think(turn.text) for turn in now.turns)
        answers = tuple(turn.answer.value for turn in now.turns)
        correct = tuple(bool(is_correct(turn.answer, t.task, t.judged)) for turn in now.turns)
        for i, turn in enumerate(now.turns):
            cases.append(Case(
                id=f"{t.task.id}:a{i}:r{r}", question_id=t.task.id, task_kind=t.task.kind, agent=i, round=r,
                question=format_task(t.task), previous_response=strip_think(before.turns[i].text),
                summary=now.details.get("summary", ""), consensus=before.consensus, responses=responses,
                answers=answers, gold=t.task.gold, correct=correct, reward=1.0 if final_ok[i] else 0.0,
                stance_changed=turn.answer.value != before.turns[i].answer.value, solution=t.task.solution))
    return cases


def complete(t: Transcript) -> bool:
    """Only whole debates become memory: every round ran and no agent abstained."""
    return (t.status == "done" and len(t.rounds) == t.settings["rounds"]
            and all(turn.error is None for r in t.rounds for turn in r.turns))
