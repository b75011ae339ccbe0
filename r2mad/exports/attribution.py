"""What the failure-attribution formats (Who&When, MP-Bench) share: a run's steps (the question, then every
agent turn, round by round), agents' names, one person's labels as blamed steps, and saving labels read
back into the label book. No file I/O here (whowhen.py and mpbench.py read and write the files)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from r2mad.grading.tasks import format_task
from r2mad.types import Transcript

FINAL = "final"  # the annotator name under which the adjudicated labels travel
_AGENT = re.compile(r"^Agent (\d+)$")


def agent_name(index: int) -> str:
    return f"Agent {index + 1}"


def agent_index(name: Any) -> int | None:
    found = _AGENT.match(str(name or "").strip())
    return int(found.group(1)) - 1 if found else None


def step_turns(t: Transcript) -> list[tuple[int, int] | None]:
    """What each step is: None for step 0 (the question), else (round, agent) of a finished round's turn."""
    return [None, *((rnd.index, turn.agent) for rnd in t.finished().rounds for turn in rnd.turns)]


def history(t: Transcript) -> list[dict[str, Any]]:
    """The steps as the benchmarks' `history`: the question (the user's), then each turn's reply."""
    steps: list[dict[str, Any]] = [{"content": format_task(t.task), "role": "user", "name": "question"}]
    for rnd in t.finished().rounds:
        steps += [{"content": turn.text if turn.error is None else f"(no answer: {turn.error})",
                   "role": "assistant", "name": agent_name(turn.agent)} for turn in rnd.turns]
    return steps


def system_prompts(t: Transcript) -> dict[str, str]:
    """Each agent's system prompt (its persona), as its first recorded turn received it."""
    out: dict[str, str] = {}
    for rnd in t.rounds:
        for turn in rnd.turns:
            system = next((m.content for m in turn.prompt if m.role == "system"), None)
            if system is not None:
                out.setdefault(agent_name(turn.agent), system)
    return dict(sorted(out.items(), key=lambda kv: agent_index(kv[0]) or 0))


@dataclass(frozen=True)
class Verdict:
    """One person's (or the adjudicated) labels of a run: label -> the turns blamed for it, and a note."""
    annotator: str
    labels: tuple[str, ...]
    blame: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    note: str = ""

    def blamed_steps(self, t: Transcript) -> dict[int, list[str]]:
        """step -> the labels that blame it, in step order."""
        index = {turn: i for i, turn in enumerate(step_turns(t)) if turn is not None}
        out: dict[int, list[str]] = {}
        for label in self.labels:
            for turn in self.blame.get(label, []):
                if tuple(turn) in index:
                    out.setdefault(index[tuple(turn)], []).append(label)
        return dict(sorted(out.items()))


def verdicts(store: Any, run_id: str, who: str | None = None) -> list[Verdict]:
    """Every annotator's labels of a run, then the adjudicated ones (as FINAL); `who` keeps one of them."""
    from r2mad.annotation.book import LabelBook, blame_turns

    record = store.get_run(run_id)
    found = [Verdict(a.annotator, tuple(a.labels), {k: blame_turns(v) for k, v in (a.blame or {}).items()},
                     a.note) for a in record.annotations]
    final = LabelBook(store).finals().get(record.id)
    if final is not None:
        found.append(Verdict(FINAL, tuple(final.labels), {k: blame_turns(v) for k, v in final.blame.items()}))
    return [v for v in found if who is None or v.annotator == who]


def save_verdict(store: Any, run_id: str, verdict: Verdict) -> None:
    """Write labels read from a file into the label book: a person's labels, or FINAL's as adjudicated."""
    from r2mad.annotation.book import LabelBook, blame_value

    book = LabelBook(store)
    blame = {label: blame_value(turns) for label, turns in verdict.blame.items() if turns}
    if verdict.annotator == FINAL:
        book.set_final(run_id, verdict.labels, "imported", blame)
    else:
        book.save_labels(run_id, verdict.annotator, verdict.labels, verdict.note, blame)


def known_labels(names: Sequence[str], taxonomy: dict[str, str]) -> tuple[str, ...]:
    """The names that are labels of the book; 'other' when none is (the reason then says what it was)."""
    kept = tuple(dict.fromkeys(n.strip() for n in names if n.strip() in taxonomy))
    return kept or ("other",)
