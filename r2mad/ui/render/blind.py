"""Blind side by side: while a comparison runs and until the visitor votes (or skips), each method is shown as
"Debate A", "Debate B"… in an order drawn at random, with no gold answer, no verdict, and none of the panels or
notices that name a method (memory, masks, advice, extra calls). Only the agents' answers and reasoning are
left to judge, as in blind arenas. The real transcripts stay on the server (a gr.State) until the vote. Pure:
no Gradio here."""
from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

from r2mad.methods import needs_bank
from r2mad.runs.votes import identical
from r2mad.types import Round, Transcript, from_dict, to_dict

LETTERS = "ABCD"
KEPT_ROUND_DETAILS = ("running", "typing", "shared", "stopped")  # how far a round got, nothing of the method


MEMORY_OFF = "Memory off: this debate's method reads a memory bank and ran without one."


def label(i: int) -> str:
    return f"Debate {LETTERS[i]}"


def is_blind(name: str) -> bool:
    return name in {label(i) for i in range(len(LETTERS))}


def _blind_round(rnd: Round) -> Round:
    # no prompts: they hold what a method added (memory records, peers' confidence, advice, masks)
    return dataclasses.replace(rnd, details={k: v for k, v in rnd.details.items() if k in KEPT_ROUND_DETAILS},
                               aux=(), turns=tuple(dataclasses.replace(t, prompt=(), details={
                                   k: v for k, v in t.details.items() if k == "finish"}) for t in rnd.turns))


def blinded(t: Transcript, name: str) -> Transcript:
    """`t` as the blind view shows it: named `name`, no gold, no verdict, no method's panels or notices but
    one: a method that reads a memory bank and ran without one still says so (in words naming no method)."""
    memory_off = needs_bank(t.method) and any(n.startswith("Memory off") for n in t.notices)
    return dataclasses.replace(t, method=name, task=dataclasses.replace(t.task, gold=None), correct=None,
                               notices=(MEMORY_OFF,) if memory_off else (),
                               rounds=tuple(_blind_round(r) for r in t.rounds))


def identical_note(transcripts: dict[str, Transcript]) -> str:
    """Why no vote is asked on identical debates, in one sentence."""
    n = len(transcripts)
    who = "Both methods" if n == 2 else f"All {n} methods"
    if all(t.shared_round0 and len(t.finished().rounds) == 1 for t in transcripts.values()):
        return (f"*{who} stopped after the shared first round: their debates are identical, so no vote is asked; "
                "the methods' names are shown.*")
    return "*The debates are identical, so no vote is asked; the methods' names are shown.*"


@dataclass
class Curtain:
    """The blind labels of one comparison (drawn before it starts), its saved runs' ids (known once the run
    service opened them), and the latest real transcripts `hide` saw, for the reveal."""
    labels: dict[str, str] = field(default_factory=dict)  # method -> "Debate A"
    runs: dict[str, str] = field(default_factory=dict)  # method -> run id
    real: dict[str, Transcript] = field(default_factory=dict)

    @property
    def drawn(self) -> bool:
        return bool(self.labels)

    def draw(self, methods: list[str], rng: random.Random | None = None) -> None:
        """Labels in a random order (so "Debate A" is not always the first method picked)."""
        methods = list(methods)
        (rng or random.SystemRandom()).shuffle(methods)
        self.labels = {m: label(i) for i, m in enumerate(methods)}

    def hide(self, transcripts: dict[str, Transcript]) -> dict[str, Transcript]:
        if not self.drawn:
            return transcripts
        self.real = dict(transcripts)
        shown = {self.labels[m]: blinded(t, self.labels[m]) for m, t in transcripts.items()}
        return dict(sorted(shown.items()))

    def ended(self) -> bool:
        """Every debate of the comparison finished and was saved."""
        return self.drawn and len(self.real) == len(self.runs) == len(self.labels) and all(
            t.status == "done" for t in self.real.values())

    def votable(self) -> bool:
        """A vote is asked for once every debate finished and was saved, unless the debates are identical."""
        return self.ended() and not identical(self.real.values())

    def state(self) -> dict[str, Any]:
        """What the vote needs, kept server-side in a gr.State: labels, run ids and the real transcripts."""
        return {"shown": {name: m for m, name in self.labels.items()}, "runs": dict(self.runs),
                "transcripts": {m: to_dict(t) for m, t in self.real.items()}}


def revealed(state: dict[str, Any]) -> dict[str, Transcript]:
    """The real transcripts of a comparison from its vote state, in the order the methods were picked."""
    return {m: from_dict(Transcript, data) for m, data in (state.get("transcripts") or {}).items()}
