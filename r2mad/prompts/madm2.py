"""MAD-M² subjective masking: ask the model whether a previous response is correct."""
from __future__ import annotations

from r2mad.prompts.common import clip, format_task
from r2mad.types import Message, Task

JUDGE_SYSTEM = "You review answers to questions strictly and briefly."


def judge_messages(task: Task, response: str) -> list[Message]:
    return [Message("system", JUDGE_SYSTEM), Message("user", (
        f"Question:\n{format_task(task)}\n\nA proposed response:\n<response>\n{clip(response)}\n</response>\n\n"
        "Is the reasoning and the final answer of this response correct? Start your reply with exactly "
        "one verdict word: YES, NO, or NOT SURE. Then give one short sentence of reason."))]


def resolve_alone_prompt(task: Task) -> str:
    return ("None of the previous answers held up under review. Solve the question again from the start, "
            f"on your own.\n\n{format_task(task)}")
