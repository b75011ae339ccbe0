"""Single-agent baselines on the same loop: CoT (one agent, one round), Self-Consistency (n independent
samples, majority vote) and ICL-CoT (one agent with K cases from a memory bank as examples)."""
from __future__ import annotations

from r2mad.budget import fit_head, method_room, trimmed
from r2mad.methods.base import Method
from r2mad.prompts import common, single
from r2mad.types import Message, Task


class CoT(Method):
    name = "cot"
    solo = True

    def n_agents(self) -> int:
        return 1

    def n_rounds(self) -> int:
        return 1


class SelfConsistency(Method):
    """`samples` calls of one prompt (the first debater's persona) with different seeds; the plurality vote is
    the majority vote (9 samples = the call budget of 3 agents x 3 rounds)."""
    name = "sc"
    solo = True  # every sample gets the first debater's persona

    def n_agents(self) -> int:
        return self.settings.samples

    def n_rounds(self) -> int:
        return 1


class ICLCoT(CoT):
    """CoT with K solved cases from the bank, retrieved by similarity to the task (a single agent has
    no debate state)."""
    name = "icl-cot"

    def __init__(self, settings, bank=None):
        super().__init__(settings)
        self.bank = bank
        self.examples: list = []
        self.left_out = 0  # examples left out to keep the prompt's bound (budget.py), said as round 0 starts

    def opening(self, task: Task, agent: int, system: str) -> list[Message]:
        if self.bank is not None:  # agent 0's cases, ranked by similarity to the task itself
            query = self.bank.embedder.encode([common.format_task(task)])[0]
            self.examples = [c.case for c in self.bank.candidates(0, query, self.settings.r2mad.k)]
        opening = super().opening(task, agent, system)  # the format once: in the system prompt or here
        if not self.examples:
            return opening
        budget = self.settings.r2mad.case_tokens if self.clips else None
        room = method_room(len(common.format_task(task)), 0)  # budget.py: the examples give way to the bound
        examples, self.left_out = fit_head(self.examples, lambda kept: single.icl_prompt("", kept, budget), room)
        if not examples:
            return opening
        return [*opening[:-1], Message("user", single.icl_prompt(opening[-1].content, examples, budget))]

    def round_started(self, ctx) -> None:
        if self.left_out:
            ctx.notice(trimmed("memory case", self.left_out, 0))
