"""Du et al.'s biographies as their code asks them, word for word (their repository's biography/gen_conversation.py,
read there): the first prompt, then one update whose message shows the other agents' latest biographies between
triple backticks. Their bullet reading is here too: a bullet is a line's text from its first letter on."""
from __future__ import annotations

from typing import Sequence


def first_prompt(person: str) -> str:
    return (f"Give a bullet point biography of {person} highlighting their contributions and achievements as a "
            "computer scientist, with each fact separated with a new line character. ")


def update_prompt(person: str, peers: Sequence[str], final: bool) -> str:
    """The authors' debate message; `final` for the last round (their two rounds make the only update final).
    With no peer to show, their message for an agent alone."""
    if not peers:
        return "Closely examine your biography and provide an updated bullet point biography."
    shown = "".join(f"\n\n Agent response: ```{text}```" for text in peers)
    close = ("Closely examine your biography and the biography of other agents and provide an updated bullet point "
             "biography." if final else f"Using these other biographies of {person} as additional advice, what is "
             f"your updated bullet point biography of the computer scientist {person}?")
    return f"Here are some bullet point biographies of {person} given by other agents: {shown}\n\n {close}"


def bullets_of(text: str | Sequence[str]) -> list[str]:
    """The facts of a bullet list: one per line, from its first letter (dashes, stars and numbers dropped), lines
    without a letter skipped."""
    lines = text.splitlines() if isinstance(text, str) else [str(x) for x in text]
    out = []
    for line in lines:
        start = next((i for i, ch in enumerate(line) if ch.isalpha()), None)
        if start is not None:
            out.append(line[start:].strip())
    return out
