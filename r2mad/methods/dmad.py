"""DMAD (Liu et al., ICLR 2025): MAD in which each agent keeps its own reasoning method throughout —
chain of thought, step-back prompting, program of thought — so the debate does not share one mental set.
Prompts are ours (prompts/dmad.py)."""
from __future__ import annotations

from r2mad.methods.base import Method, RoundContext
from r2mad.prompts import dmad as prompts
from r2mad.types import Message, Task


class DMAD(Method):
    name = "dmad"
    shares_round0 = False  # each agent opens with its own reasoning method, unlike the shared round 0

    def persona(self, task: Task, agent: int) -> tuple[str, str]:
        name, system = super().persona(task, agent)
        return f"{name}, {prompts.reasoning_method(agent)[0].lower()}", system

    def opening(self, task: Task, agent: int, system: str) -> list[Message]:
        messages = super().opening(task, agent, system)
        note = prompts.opening_note(agent)
        return [*messages[:-1], Message("user", f"{note}\n\n{messages[-1].content}")]

    def debate_message(self, ctx: RoundContext, agent: int) -> str:
        return f"{prompts.debate_note(agent)}\n\n{super().debate_message(ctx, agent)}"
