"""What a fork changes and how: the recorded rounds a fork replays, with edits to the last of them
(an agent's message rewritten, its answer forced, its response masked from the peers), and changes
that act on the hooks of the fork's first live round (unmask a MAD-M² response, drop or replace a
retrieved R²-MAD case, drop one advice message). Pure functions over transcripts; running the fork is
`steer.run`'s job."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Sequence

from r2mad.budget import EDIT_CHARS, edits_full
from r2mad.grading.answers import consensus_ratio, extract_answer
from r2mad.grading.kinds import kind_of
from r2mad.human import person_chars
from r2mad.text import FIELD_CHARS, GOLD_CHARS, quoted, too_long
from r2mad.types import Answer, Round, Task, Transcript, Usage

KINDS = ("edit", "answer", "mask")  # act on the recorded round T-1
LIVE_KINDS = ("unmask", "drop-case", "replace-case", "drop-advice")  # act on round T's own hooks (ctx.steer)


@dataclass(frozen=True)
class Change:
    """One change about agent `agent` (0-based). KINDS change its response in the round before the fork's
    first live round T; LIVE_KINDS change what the method's hooks do for it at round T itself."""
    kind: str  # edit: replace its text | answer: force its answer | mask: keep it from the peers
    # unmask: show its round T-1 response at round T whatever the masks decided (MAD-M²)
    # drop-case: value "N", drop the case shown at rank N (from 1) of its memory block (R²-MAD)
    # replace-case: value "N:CASE_ID", show that case of its bank at rank N instead (R²-MAD)
    # drop-advice: value "S", the advice agent S (from 1) would write to it is not asked for (advice)
    agent: int
    value: str = ""

    @property
    def case_rank(self) -> int:
        return int(self.value.partition(":")[0])

    @property
    def case_id(self) -> str:
        return self.value.partition(":")[2]

    @property
    def source(self) -> int:
        """drop-advice: the adviser, 0-based."""
        return int(self.value) - 1


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
        live = f"at round {self.from_round}"
        for c in self.changes:
            what = {"edit": "message edited", "answer": f"answer forced to {c.value}", "mask": "masked",
                    "unmask": f"unmasked {live}", "drop-case": f"case {c.value} dropped {live}",
                    "replace-case": f"case {c.value.replace(':', ' replaced by ')} {live}",
                    "drop-advice": f"advice from agent {c.value} dropped {live}"}[c.kind]
            parts.append(f"agent {c.agent + 1} {what}")
        parts += [f"{k} {v}" for k, v in (("method", self.method), ("backbone", self.backbone)) if v]
        if self.rounds is not None:
            parts.append(f"{self.rounds} rounds in all")
        return ", ".join(parts)


FORMS = {"edit": ("AGENT=TEXT", "1=B"), "answer": ("AGENT=TEXT", "1=B"), "drop-case": ("AGENT=RANK", "1=1"),
         "replace-case": ("AGENT=RANK:CASE_ID", "1=1:case-7"), "drop-advice": ("AGENT=SOURCE", "1=2")}
_BOUNDS = {"edit": ("new message", EDIT_CHARS, "shorten it"),  # (what, most characters, the fix)
           "answer": ("forced answer", GOLD_CHARS, "give the answer alone (a letter, a number or a short expression)")}
_BOUNDS.update({k: ("value", FIELD_CHARS, "give it as shown") for k in ("drop-case", "replace-case", "drop-advice")})
_VALUE = {"drop-case": r"[1-9]\d*", "replace-case": r"[1-9]\d*:\S+", "drop-advice": r"[1-9]\d*"}


def parse_changes(edits: Sequence[str] = (), answers: Sequence[str] = (), masks: Sequence[str] = (),
                  unmasks: Sequence[str] = (), drop_cases: Sequence[str] = (), replace_cases: Sequence[str] = (),
                  drop_advice: Sequence[str] = ()) -> tuple[Change, ...]:
    """Changes from the CLI's `AGENT=VALUE` and `AGENT` forms (agents, case ranks and advice sources
    counted from 1, as shown)."""
    changes = []
    for kind, items in (("edit", edits), ("answer", answers), ("drop-case", drop_cases),
                        ("replace-case", replace_cases), ("drop-advice", drop_advice)):
        for item in items or ():
            agent, sep, value = item.partition("=")
            value = value.strip()
            if not sep or not value or (kind in _VALUE and not re.fullmatch(_VALUE[kind], value)):
                form, example = FORMS[kind]
                raise ValueError(f"--{kind} {quoted(item)} should look like {form}, e.g. --{kind} {example}.")
            index = _agent(agent, kind)
            what, limit, fix = _BOUNDS[kind]
            refused = too_long(f"The {what} for agent {index + 1}", value, limit, fix)
            if refused:  # bounded here for the CLI, the Fork tab and the API alike, not only on the page
                raise ValueError(refused)
            changes.append(Change(kind, index, value))
    changes += [Change("mask", _agent(item, "mask")) for item in masks or ()]
    changes += [Change("unmask", _agent(item, "unmask")) for item in unmasks or ()]
    return tuple(changes)


def _agent(text: str, flag: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError(f"--{flag} names agent {quoted(text)}; give its number as shown, counting from 1.")
    return int(text) - 1


def answer_statement(task: Task, value: str) -> str:
    """The message of an agent whose answer a fork forces: the answer alone, in the task's format."""
    return kind_of(task).written(value)


def forced_answer(task: Task, value: str) -> tuple[str, Answer]:
    value = kind_of(task).checked(value, task)
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
        if change.kind not in KINDS + LIVE_KINDS:
            raise ValueError(f"Unknown change {quoted(change.kind)}; use one of {', '.join(KINDS + LIVE_KINDS)}.")
        if not 0 <= change.agent < len(turns):
            raise ValueError(f"Agent {change.agent + 1} is not in this run, which has agents 1 to {len(turns)}.")
        if change.kind in KINDS:
            turns[change.agent] = _changed(turns[change.agent], change, parent.task)
    consensus = consensus_ratio([t.answer for t in turns], parent.task, parent.judged)
    replayed = (*kept[:-1], dataclasses.replace(last, turns=tuple(turns), consensus=consensus))
    refused = edits_full(person_chars(replayed))  # the edits count in what a person adds to the debate
    if refused:
        raise ValueError(refused)
    return replayed


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


def fork_starts(t: Transcript | None) -> list[int]:
    """The rounds a fork of `t` can start from: 1 to its number of finished rounds, for a debate (a
    single-agent baseline, or a run without a finished round, has none)."""
    from r2mad.methods import is_debate  # the registry: imported when asked, not with the fork's data types

    return list(range(1, len(t.finished().rounds) + 1)) if t is not None and is_debate(t.method) else []


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


def steer_notes(details: dict) -> list[str]:
    """What a fork changed about one agent's turn, in words (from its details["steer"])."""
    steer = details.get("steer") or {}
    notes = ["hidden from its peers in the next round"] if steer.get("mask") else []
    notes += [f"{'message edited' if kind == 'edit' else 'answer forced'} (was {steer['original_answer']})"
              for kind in ("edit", "answer") if kind in steer]
    if "dropped" in steer:
        notes.append(f"case {steer['drop-case']} ({steer['dropped']}) dropped from its memory block")
    if "replaced" in steer:
        notes.append(f"case {steer['replace-case']} ({steer['replaced']}) replaced by {steer['by']}")
    if "drop-advice" in steer:
        notes.append(f"advice from agent {steer['drop-advice']} dropped (not asked for)")
    if steer.get("unmasked"):
        notes.append("shown unmasked: " + ", ".join(f"agent {j + 1}" for j in steer["unmasked"]))
    return notes
