"""A person in the debate: between rounds a moderator note to every agent or to one ("@2 …"), or a seat at the
table (the person writes one agent's turn). The loop (r2mad/debate.py) asks a `Moderator` before each live
round t > 0 and records what it said: a note as an AuxCall of kind "human" (no model call, no tokens) and in
the prompts it reached, a seat as that agent's turn with details {"human": true}; so forks, blame,
annotation, exports and the run store read them like any other. Moderators here: one reading a script (the
API, a fork replaying its parent's notes) and one typed at the terminal (`debate --interactive`). No I/O
outside `typed`."""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, Sequence

from r2mad.budget import NOTE_CHARS, admit
from r2mad.grading.tasks import clean_text
from r2mad.text import too_long
from r2mad.types import AuxCall, Round, Transcript

HUMAN = "human"  # the AuxCall kind of a note, and the turn detail of a seat


@dataclass(frozen=True)
class Interjection:
    """What a person adds before round `round`: a note to every agent (`to` empty) or to some (0-based), or,
    with `seat`, the turn of agent `seat` written by the person."""
    round: int
    text: str
    to: tuple[int, ...] = ()
    seat: int | None = None

    def __post_init__(self) -> None:
        text = clean_text(self.text or "").strip()
        if not text:
            raise ValueError("The note is empty; type what the agents should read, or go on without one.")
        refused = too_long("The note", text, NOTE_CHARS)
        if refused:
            raise ValueError(refused)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "to", tuple(sorted(set(self.to))))

    def reaches(self, agent: int) -> bool:
        return self.seat is None and (not self.to or agent in self.to)


# the transcript so far and the round about to start -> what the person adds (nothing: go on)
Moderator = Callable[[Transcript, int], Awaitable[Sequence[Interjection]]]


def parse(line: str, round_index: int, agents: int) -> Interjection | None:
    """A line a person typed: "text" (a note to every agent), "@2 text" (to agent 2), "seat 2: text" (agent
    2's turn, written by the person); "" -> None. Agents counted from 1, as shown."""
    line = (line or "").strip()
    if not line:
        return None
    seat = re.match(r"seat\s+(\d+)\s*:\s*(.*)\Z", line, re.S | re.I)
    mention = re.match(r"((?:@\d+\s*)+)(.*)\Z", line, re.S)
    numbers = [int(n) for n in re.findall(r"\d+", (seat or mention).group(1))] if (seat or mention) else []
    if any(not 1 <= n <= agents for n in numbers):
        raise ValueError(f"There are agents 1 to {agents}; write @1 to @{agents}, or no @ for every agent.")
    if seat:
        return Interjection(round_index, seat.group(2), seat=numbers[0] - 1)
    if mention:
        return Interjection(round_index, mention.group(2), to=tuple(n - 1 for n in numbers))
    return Interjection(round_index, line)


def from_rows(rows: Iterable[dict] | None, agents: int, rounds: int) -> list[Interjection]:
    """Interjections given as data (the API): {"round": 1, "text": "…"} for every agent, with "to": [2] for
    agent 2, or "seat": 2 to write agent 2's turn; agents counted from 1, rounds from 1 to the last."""
    said = []
    for row in rows or ():
        if not isinstance(row, dict) or not isinstance(row.get("round"), int):
            raise ValueError('A note is {"round": 1, "text": "…"} (add "to": [2] for agent 2, or "seat": 2 to '
                             "write agent 2's turn); give each one a round.")
        if not 1 <= row["round"] < rounds:
            raise ValueError(f"Notes come before a debate round, 1 to {rounds - 1}; round {row['round']} is not one.")
        to, seat = list(row.get("to") or ()), row.get("seat")
        if any(not isinstance(n, int) or not 1 <= n <= agents for n in [*to, *([seat] if seat is not None else [])]):
            raise ValueError(f"There are agents 1 to {agents}; name them so in \"to\" and \"seat\".")
        said.append(Interjection(row["round"], str(row.get("text") or ""), tuple(n - 1 for n in to),
                                 None if seat is None else seat - 1))
    return said


def with_notes(message: str, said: Iterable[Interjection], agent: int) -> str:
    """An agent's debate message with the notes that reach it, after everything the method wrote."""
    notes = [x for x in said if x.reaches(agent)]
    for x in notes:
        who = "to you alone" if x.to else "to every agent"
        message += f"\n\nA note from the moderator, a person following this debate ({who}): {x.text}"
    return message


def note_calls(said: Iterable[Interjection]) -> list[AuxCall]:
    """The notes as the round records them (a note to one agent names it; to several: one record each)."""
    calls = []
    for x in said:
        if x.seat is None:
            calls += [AuxCall(HUMAN, x.round, x.text, target=a, label="note") for a in (x.to or (None,))]
    return calls


def recorded(rounds: Sequence[Round]) -> list[Interjection]:
    """The interjections a run recorded (its notes and seats), to replay them in a fork."""
    found: list[Interjection] = []
    for rnd in rounds:
        notes: dict[str, list[int]] = {}
        for call in rnd.aux:
            if call.kind == HUMAN:
                notes.setdefault(call.text, []).extend([] if call.target is None else [call.target])
        found += [Interjection(rnd.index, text, tuple(to)) for text, to in notes.items()]
        found += [Interjection(rnd.index, t.text, seat=t.agent) for t in rnd.turns if t.details.get(HUMAN)]
    return found


def person_chars(rounds: Sequence[Round]) -> int:
    """The characters a person added to these rounds (r2mad/budget.py): notes, seated turns and a fork's edits."""
    notes = {(r.index, c.text) for r in rounds for c in r.aux if c.kind == HUMAN}  # a note to 2 agents is 2 records
    typed = [t.text for r in rounds for t in r.turns
             if t.details.get(HUMAN) or "edit" in (t.details.get("steer") or {})]
    return sum(len(text) for _, text in notes) + sum(map(len, typed))


def admitted(said: Sequence[Interjection], carried: int) -> tuple[list[Interjection], str | None]:
    """The interjections that fit the person's budget beside `carried` characters, and the sentence about the
    rest (None: all fit)."""
    n, refused = admit([x.text for x in said], carried)
    return list(said[:n]), refused


def scripted(said: Iterable[Interjection]) -> Moderator:
    """A moderator that says what it was given, each at its round (the API; a fork replaying its parent's)."""
    by_round: dict[int, list[Interjection]] = {}
    for x in said:
        by_round.setdefault(x.round, []).append(x)

    async def moderate(t: Transcript, round_index: int) -> Sequence[Interjection]:
        return by_round.get(round_index, [])
    return moderate


def typed(ask: Callable[[str], str] | None = None, show: Callable[[str], None] = print) -> Moderator:
    """`debate --interactive`: before each debate round, the last round's answers, then lines read from the
    terminal until an empty one (off the event loop)."""
    async def moderate(t: Transcript, round_index: int) -> Sequence[Interjection]:
        last = t.rounds[-1] if t.rounds else None
        if last is not None:
            show(f"Round {last.index}: " + ", ".join(f"agent {x.agent + 1} {x.answer.value or 'no answer'}"
                                                    for x in last.turns))
        said: list[Interjection] = []
        while True:
            line = await asyncio.to_thread(ask or input, f"Before round {round_index} — a note for every agent, "
                                                         "'@2 …' for agent 2, 'seat 2: …' to write agent 2's turn; "
                                                         "Enter to go on: ")
            try:
                x = parse(line, round_index, len(last.turns) if last else 0)
            except ValueError as exc:
                show(str(exc))
                continue
            if x is None:
                return said
            said.append(x)
    return moderate
