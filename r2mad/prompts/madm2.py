"""MAD-M²: the judge that evaluates a previous response, and the agents' prompts after masking."""
from __future__ import annotations

from r2mad.prompts.common import clip, format_instruction, format_task
from r2mad.prompts.mad import peer_block
from r2mad.types import Message, Task

JUDGE_SYSTEM = "You review answers to questions strictly."


def judge_messages(task: Task, response: str, clipped: bool = True) -> list[Message]:
    """The judge evaluates first and ends with its verdict in a tag (the last tag is the one read);
    `clipped`: it reads the response's end only (the demo), else the whole response."""
    shown = clip(response) if clipped else response.strip()
    return [Message("system", JUDGE_SYSTEM), Message("user", (
        f"Question:\n{format_task(task)}\n\nA proposed response:\n<response>\n{shown}\n</response>\n\n"
        "Evaluate this response: check its reasoning step by step and its final answer. Then end your reply "
        "with one verdict word in tags: <label>YES</label> if the response is correct, <label>NO</label> "
        "if it is wrong, or <label>NOT SURE</label> if you cannot tell."))]


def fresh_prompt(task: Task, shown: list[tuple[str, str]]) -> str:
    """A round's whole prompt (no chat history): the question and the responses that passed review,
    the agent's own among them when it passed."""
    return (f"{format_task(task)}\n\nThese answers from the previous round passed review:\n\n"
            f"{peer_block(shown)}\n\nUse them as extra information: check each against your own reasoning, "
            "keep what holds up and drop what does not, then give your answer to the question.\n\n"
            f"{format_instruction(task)}")


def resolve_alone_prompt(task: Task) -> str:
    return ("None of the previous answers held up under review. Solve the question again from the start, "
            f"on your own.\n\n{format_task(task)}")
