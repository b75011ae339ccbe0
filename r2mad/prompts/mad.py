"""MAD (Du et al. 2024): show each agent its peers' previous answers and ask for an update."""
from __future__ import annotations

from r2mad.prompts.common import format_instruction
from r2mad.types import Task


def peer_block(peers: list[tuple[str, str]]) -> str:
    """peers: (label, response text) pairs, already annotated and fitted to the context window."""
    return "\n\n".join(f"--- {label} ---\n{text.strip()}" for label, text in peers)


def debate_prompt(task: Task, peers: list[tuple[str, str]]) -> str:
    if not peers:
        return ("No other agent's answer is available this round. Check your previous answer "
                f"once more and give your answer again.\n\n{format_instruction(task)}")
    return (f"Here are the latest answers of the other agents:\n\n{peer_block(peers)}\n\n"
            "Use their reasoning as extra information. Check it against your own, keep what holds "
            "up and drop what does not, then give your updated answer to the original question.\n\n"
            f"{format_instruction(task)}")
