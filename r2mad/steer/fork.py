"""What a fork changes and how: the recorded rounds a fork replays, with edits to the last of them
(an agent's message rewritten, its answer forced, its response masked from the peers). Pure functions
over transcripts; running the fork is `steer.run`'s job."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

from r2mad.answers import consensus_ratio, extract_answer
from r2mad.types import Answer, Round, Task, Transcript, Usage

KINDS = ("edit", "answer", "mask")


@dataclass(frozen=True)
class Change:
    """One change to agent `agent`'s (0-based) response in the round before the fork's first live round."""
    kind: str  # edit: replace its text | answer: force its answer | mask: keep it from the peers
    agent: int
    value: str = ""


@dataclass(frozen=True)
class ForkSpec:
    """Replay rounds 0..from_round-1 of a run, apply `changes` to round from_round-1, then go on live from
    round `from_round`, with another method or backbone when given."""
    from_round: int
    changes: tuple[Change, ...] = ()
    method: str | None = None
    backbone: str | None = None
    rounds: int | None = None  # rounds in all for the fork (None: the run's); from_round + 1 steps one round

    def describe(self) -> str:
        parts = [f"from round {self.from_round}"]
        for c in self.changes:
            what = {"edit": "message edited", "answer": f"answer forced to {c.value}", "mask": "masked"}[c.kind]
            parts.append(f"agent {c.agent + 1} {what}")
        parts += [f"{k} {v}" for k, v in (("method", self.method), ("backbone", self.backbone)) if v]
        if self.rounds is not None:
            parts.append(f"{self.rounds} rounds in all")
        return ", ".join(parts)


def parse_changes(edits: Sequence[str] = (), answers: Sequence[str] = (),
                  masks: Sequence[str] = ()) -> tuple[Change, ...]:
    """Changes from the CLI's `AGENT=TEXT`, `AGENT=X` and `AGENT` forms (agents counted from 1)."""
    changes = []
    for kind, items in (("edit", edits), ("answer", answers)):
        for item in items or ():
            agent, sep, value = item.partition("=")
            if not sep or not value.strip():
                raise ValueError(f"--{kind} '{item}' should look like AGENT=TEXT, e.g. --{kind} 1=B.")
            changes.append(Change(kind, _agent(agent, kind), value.strip()))
    changes += [Change("mask", _agent(item, "mask")) for item in masks or ()]
    return tuple(changes)


def _agent(text: str, flag: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError(f"--{flag} names agent '{text}'; give its number as shown, counting from 1.")
    return int(text) - 1


def answer_statement(task: Task, value: str) -> str:
    """The message of an agent whose answer a fork forces: the answer alone, in the task's format."""
    return f"My final answer is \\boxed{{{value}}}." if task.kind == "math" else f"My final answer is (({value}))."


def forced_answer(task: Task, value: str) -> tuple[str, Answer]:
    value = value.strip().upper() if task.kind == "mcq" else value.strip()
    letters = [letter for letter, _ in task.options]
    if task.kind == "mcq" and value not in letters:
        raise ValueError(f"Answer '{value}' is not an option of this question; choose one of {', '.join(letters)}.")
    text = answer_statement(task, value)
    return text, Answer(extract_answer(text, task).value, "forced")


def replay_rounds(parent: Transcript, spec: ForkSpec) -> tuple[Round, ...]:
    """Rounds 0..T-1 of the parent as the fork takes them over: marked replayed, with `spec.changes`
    applied to round T-1 (each changed turn keeps what it replaced under details["steer"])."""
    rounds = parent.finished().rounds
    if not 1 <= spec.from_round <= len(rounds):
        raise ValueError(f"Round {spec.from_round} cannot start a fork of this run, which has rounds 0 to "
                         f"{len(rounds) - 1}; fork from a round between 1 and {len(rounds)}.")
    kept = [dataclasses.replace(r, details={**{k: v for k, v in r.details.items() if k != "shared"},
                                            "replayed": True})
            for r in rounds[:spec.from_round]]
    last = kept[-1]
    turns = list(last.turns)
    for change in spec.changes:
        if change.kind not in KINDS:
            raise ValueError(f"Unknown change '{change.kind}'; use one of {', '.join(KINDS)}.")
        if not 0 <= change.agent < len(turns):
            raise ValueError(f"Agent {change.agent + 1} is not in this run, which has agents 1 to {len(turns)}.")
        turns[change.agent] = _changed(turns[change.agent], change, parent.task)
    consensus = consensus_ratio([t.answer for t in turns], parent.task.kind)
    return (*kept[:-1], dataclasses.replace(last, turns=tuple(turns), consensus=consensus))


def _changed(turn, change: Change, task: Task):
    steer = dict(turn.details.get("steer") or {})
    if change.kind == "mask":
        return dataclasses.replace(turn, details={**turn.details, "hidden": True, "steer": {**steer, "mask": True}})
    if change.kind == "edit":
        text, answer = change.value, extract_answer(change.value, task)
    else:
        text, answer = forced_answer(task, change.value)
    steer.update({change.kind: change.value, "original_text": turn.text, "original_answer": str(turn.answer)})
    return dataclasses.replace(turn, text=text, answer=answer, error=None, details={**turn.details, "steer": steer})


def is_replayed(rnd: Round) -> bool:
    return bool(rnd.details.get("replayed") or rnd.details.get("shared"))


def live_usage(t: Transcript) -> Usage:
    """The calls and tokens a fork spent itself (its replayed rounds cost nothing)."""
    live = dataclasses.replace(t, rounds=tuple(r for r in t.rounds if not is_replayed(r)))
    return live.usage()


def align(parent: Transcript, fork: Transcript) -> list[tuple[str, str, str]]:
    """The two runs side by side, round by round: each agent's answer (* marks a changed turn)."""
    def cell(rnd: Round | None) -> str:
        if rnd is None:
            return "-"
        answers = " ".join(str(t.answer) + ("*" if t.details.get("steer") else "") for t in rnd.turns)
        return answers + (" (replayed)" if rnd.details.get("replayed") else "")
    a, b = parent.finished().rounds, fork.finished().rounds
    rows = [("round", "parent", "fork")]
    for i in range(max(len(a), len(b))):
        rows.append((str(i), cell(a[i] if i < len(a) else None), cell(b[i] if i < len(b) else None)))
    verdict = {True: "correct", False: "wrong", None: "no gold"}
    rows.append(("final", f"{parent.final} ({verdict[parent.correct]})", f"{fork.final} ({verdict[fork.correct]})"))
    return rows
