"""TrueMAD: one agent writes one-to-one advice to another about that agent's current reasoning."""
from __future__ import annotations

from r2mad.prompts.common import clip, format_instruction, format_task
from r2mad.types import Message, Task

ADVICE_TYPES = ("support", "rebuttal", "refinement", "question")


def advice_messages(task: Task, system: str, own: str, target_label: str, target: str,
                    clipped: bool = True) -> list[Message]:
    """`clipped`: both answers are shown by their ends (the demo), else whole."""
    own, target = (clip(own), clip(target)) if clipped else (own.strip(), target.strip())
    return [Message("system", system), Message("user", (
        f"Question:\n{format_task(task)}\n\nYour current answer:\n<yours>\n{own}\n</yours>\n\n"
        f"The current answer of {target_label}:\n<theirs>\n{target}\n</theirs>\n\n"
        f"Write advice addressed only to {target_label} about their reasoning. Begin with one tag: "
        "SUPPORT (their reasoning holds), REBUTTAL (a step or the answer is wrong, say which), "
        "REFINEMENT (right direction, but something should be fixed or added) or QUESTION (ask about "
        "a step you doubt). Then at most four sentences. Do not just repeat your own answer."))]


def advice_block(advice: list[tuple[str, str, str]], task: Task, clipped: bool = True) -> str:
    """advice: (source label, advice type, text) addressed to this agent; `clipped`: each within 800
    characters (the demo), else whole."""
    if not advice:
        return ""
    lines = [f"--- advice from {src} ({kind}) ---\n{clip(text, 800) if clipped else text.strip()}"
             for src, kind, text in advice]
    return ("Advice written to you personally by other agents about your last answer:\n\n"
            + "\n\n".join(lines)
            + "\n\nYou decide how to use this advice: accept what is right, reject what is not, and keep "
              f"your answer if it still holds.\n\n{format_instruction(task)}")
