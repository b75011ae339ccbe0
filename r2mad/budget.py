"""The one budget of what reaches a prompt (the question, a person's notes, seats and fork edits, the method's
retrieved cases and advice), of what a run stores and of a debate's time, with the one sentence said when a
bound is reached. Every entry point (page, API/MCP, `/v1`, eval rows, own data) meets these bounds through the
engine and the debate loop; docs/space.md lists them. Not the backbone's context window (methods/base.py fits
peers to that)."""
from __future__ import annotations

import asyncio
import time
from typing import Callable, Sequence, TypeVar

QUESTION_CHARS = 4_000  # a question with its options (settings.max_question_chars; a deployment may raise it)
MAX_QUESTION_CHARS = 16_000  # the most settings.max_question_chars may be
NOTE_CHARS = 1_000  # one note, or one seated turn
EDIT_CHARS = 4_000  # a fork's new message for one agent
PERSON_CHARS = 8_000  # everything a person adds to one debate: notes, seated turns and a fork's edits together
PROMPT_CHARS = 32_000  # one prompt's question, a person's additions, retrieved cases and advice together
STORED_CHARS = 4_000_000  # one run's stored transcript (every turn keeps its prompt)
OVERRUN = 1.5  # a round under way at a debate's time limit may finish until this many times the limit, then it is cut

T = TypeVar("T")


def question_refused(size: int, limit: int) -> str | None:
    """The sentence refusing a question of `size` characters (with its options) over `limit`, else None."""
    if size <= limit:
        return None
    return f"The question is {size:,} characters long with its options, over the limit of {limit:,}; shorten it."


def notes_full(carried: int, refused: int) -> str:
    """The sentence saying that `refused` notes did not fit beside the `carried` characters a person added."""
    what = "note was" if refused == 1 else "notes were"
    return (f"Notes are full: this debate already carries {carried:,} characters of notes and edits (limit "
            f"{PERSON_CHARS:,}); {refused:,} more {what} not sent — say it in fewer words, or start a new debate.")


def edits_full(size: int) -> str | None:
    """The sentence refusing a fork whose edits and the notes it replays add `size` characters, else None."""
    if size <= PERSON_CHARS:
        return None
    return (f"The fork's edits and notes come to {size:,} characters, over the limit of {PERSON_CHARS:,} for "
            "what a person adds to one debate; shorten the edits.")


def admit(texts: Sequence[str], carried: int) -> tuple[int, str | None]:
    """(how many of `texts`, in order, fit beside `carried` characters; the sentence about the rest, or None).
    The first that does not fit and every one after it are refused."""
    room = PERSON_CHARS - carried
    for n, text in enumerate(texts):
        room -= len(text)
        if room < 0:
            return n, notes_full(carried + sum(map(len, texts[:n])), len(texts) - n)
    return len(texts), None


def method_room(question_chars: int, person_chars: int) -> int:
    """The characters left in one prompt for the method's additions (retrieved cases, advice)."""
    return max(0, PROMPT_CHARS - question_chars - person_chars)


def fit_head(items: Sequence[T], render: Callable[[list[T]], str], room: int) -> tuple[list[T], int]:
    """(the longest head of `items`, most relevant first, whose rendering fits `room`; how many were left out)."""
    kept = list(items)
    while kept and len(render(kept)) > room:
        kept.pop()
    return kept, len(items) - len(kept)


def trimmed(what: str, left_out: int, agent: int) -> str:
    """The notice that `left_out` of an agent's `what` (its least relevant) were left out to keep the bound."""
    plural = what if left_out == 1 else what + "s"
    return (f"Agent {agent + 1}'s prompt would pass its bound of {PROMPT_CHARS:,} characters, so its {left_out} "
            f"least relevant {plural} {'was' if left_out == 1 else 'were'} left out.")


def stored_full(size: int) -> str | None:
    """The sentence stopping a debate whose stored transcript reached `size` characters, else None."""
    if size <= STORED_CHARS:
        return None
    return (f"The debate stopped here: its transcript holds {size:,} characters, over the limit of "
            f"{STORED_CHARS:,} a run may store; use fewer agents, rounds or tokens.")


def stored_chars(rnd) -> int:
    """About the characters a round stores: its turns' prompts and replies, its auxiliary calls' texts."""
    return (sum(len(m.content) for turn in rnd.turns for m in turn.prompt) + sum(len(x.text) for x in rnd.turns)
            + sum(len(c.text) for c in rnd.aux))


class TimeLimit:
    """A debate's time limit (settings.deadline_s), from its start: no round starts that, taking as long as the
    last live round, would end past it (rounds that end in time are never thrown away for it); a round still
    running at OVERRUN times the limit is cut."""

    def __init__(self, limit_s: float):
        self.limit_s, self.start = limit_s, time.monotonic()
        self.last_round_s: float | None = None  # how long the last live round took, the estimate of the next

    def room_for_a_round(self) -> bool:
        return self.last_round_s is None or time.monotonic() + self.last_round_s <= self.start + self.limit_s

    def cut_at(self) -> float:
        """When a round still running is cut, on the event loop's clock."""
        return asyncio.get_running_loop().time() + self.start + OVERRUN * self.limit_s - time.monotonic()

    def round0_cut(self) -> str:
        return (f"Round 0 did not finish within {OVERRUN:g} times the time limit of {self.limit_s:g} s; the model "
                "is busy, so try again later or use fewer agents.")
