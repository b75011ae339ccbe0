"""What an answer kind is: how a task is shown and its answer asked for, how an answer is read from a
reply, when two answers agree, and — the same for every kind — how a round's answers are grouped, how
much they agree (consensus) and which one a vote picks. Not the registry (kinds/__init__.py)."""
from __future__ import annotations

from typing import Sequence

from r2mad.types import UNPARSED, Answer, AnswerShape, Task


class AnswerKind:
    """One kind of answer. A kind overrides `instruction`, `extract` and `same`; the grouping, consensus,
    vote and scoring below follow from `same` (a kind whose agreement is not exact may override them)."""
    name = ""
    label = ""  # what the app's chip and the CLI say: "short answer"
    agree = ""  # one line: what "the agents agree" means for this kind
    uses_meaning = False  # compares answers with the embedder (its work runs off the event loop)
    names_dissent = False  # the debate closes with a notice naming the groups the vote did not pick

    # --- showing the task ----------------------------------------------------------------------

    def show(self, task: Task) -> str:
        """The question, then one "(A) text" line per option."""
        return "\n".join([task.question, *(f"({letter}) {text}" for letter, text in task.options)])

    def instruction(self, task: Task) -> str:
        """How the agent should end its reply (a description of the form: small models copy samples)."""
        raise NotImplementedError

    def final_request(self, task: Task) -> str:
        """The answer guard's follow-up: the answer alone, in this kind's form."""
        return "Give only your final answer now, on one line, and nothing else."

    def shape(self, task: Task) -> AnswerShape | None:
        """The answers a backend may be held to when the guard asks again (None: the prompt alone)."""
        return None

    guard_tokens = 48  # the guard's budget for the answer alone

    def written(self, value: str) -> str:
        """A reply that commits to `value` and nothing else, in this kind's form (a fork's forced answer)."""
        return f"Final answer: {value}"

    def checked(self, value: str, task: Task) -> str:
        """`value` as this kind spells a reference or forced answer; ValueError (one sentence naming the fix)
        when it is not one."""
        value = value.strip()
        if not value:
            raise ValueError("The answer is empty; write one or leave it out.")
        return value

    # --- reading and comparing -------------------------------------------------------------------

    def extract(self, text: str, task: Task) -> Answer:
        """The answer the reply (reasoning already removed) commits to, or UNPARSED."""
        raise NotImplementedError

    def same(self, a: str, b: str) -> bool:
        """Whether two parsed answer values agree."""
        return a == b

    def key(self, value: str) -> str:
        """A canonical spelling of a value (what detectors and counts group by when they need a string)."""
        return value.strip()

    def settle(self, values: Sequence[str]) -> list[str]:
        """Slow work on these values (and the gold) done at once, in a worker thread, so that `same` on them
        then returns at once; notices for pairs that could not be checked. Default: nothing to do."""
        return []

    # --- a round's answers -----------------------------------------------------------------------

    def agrees(self, a: Answer, b: Answer) -> bool:
        return a.parsed and b.parsed and self.same(a.value, b.value)

    def groups(self, answers: Sequence[Answer]) -> list[int | None]:
        """For each answer, the index of the answer that leads its group (None for UNPARSED): each
        parsed answer joins the earliest group whose leader it agrees with, else leads a new one."""
        leaders: list[int] = []
        out: list[int | None] = []
        for i, a in enumerate(answers):
            if not a.parsed:
                out.append(None)
                continue
            leader = next((j for j in leaders if self.agrees(answers[j], a)), None)
            if leader is None:
                leaders.append(leader := i)
            out.append(leader)
        return out

    def group_sizes(self, answers: Sequence[Answer]) -> dict[int, int]:
        """{leader index: members}, leaders in agent order."""
        sizes: dict[int, int] = {}
        for leader in self.groups(answers):
            if leader is not None:
                sizes[leader] = sizes.get(leader, 0) + 1
        return sizes

    def consensus(self, answers: Sequence[Answer]) -> float:
        """Cons(Z): the largest group's share of all n answers (UNPARSED counts in n, agrees with none)."""
        sizes = self.group_sizes(answers)
        return max(sizes.values()) / len(answers) if sizes else 0.0

    def winner(self, answers: Sequence[Answer]) -> int | None:
        """The index of the largest group's leader; a tie goes to the group whose leader is the earliest
        agent (every group's earliest member is its leader). None when every answer is UNPARSED."""
        sizes = self.group_sizes(answers)
        best = max(sizes.values(), default=0)
        return next((i for i, n in sizes.items() if n == best), None)

    def vote(self, answers: Sequence[Answer]) -> Answer:
        """The plurality vote: the winner's answer. All UNPARSED -> UNPARSED: it never wins."""
        won = self.winner(answers)
        return UNPARSED if won is None else answers[won]

    def unanimous(self, answers: Sequence[Answer]) -> bool:
        return bool(answers) and all(self.agrees(answers[0], a) for a in answers)


    # --- scoring ---------------------------------------------------------------------------------

    def correct(self, answer: Answer, task: Task) -> bool | None:
        """Scored against the task's reference (None without one); UNPARSED is never correct."""
        if task.gold is None:
            return None
        return answer.parsed and self.same(answer.value, task.gold)
