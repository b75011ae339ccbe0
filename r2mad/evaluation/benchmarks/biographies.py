"""Du et al.'s biographies: computer scientists and their ground-truth bullets in the authors' format
(article.json: {person: bullet lines}), and the authors' factuality score — a judge asked, per bullet,
whether an agent's biography is consistent with it (yes / no / uncertain); score = yes / (yes + no), per
agent, pooled, with no majority vote. 524 people; the authors' order (sorted, shuffled with seed 1), so
--limit 40 gives the 40 their code scores."""
from __future__ import annotations

import asyncio
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind, stable_id
from r2mad.evaluation.datasets import DataError
from r2mad.grading.answers import strip_think
from r2mad.types import Message, Task, Transcript

AUTHORS_SHUFFLE_SEED = 1
VERDICTS = ("yes", "no", "uncertain")
JUDGE_TOKENS = 16  # one word is asked for
SHORT_BIO_CHARS = 400  # a one-bullet reply shorter than this reads "I do not know this person" (authors)
_WORD = re.compile(r"\b(yes|no|uncertain)\b", re.IGNORECASE)


def read_articles(path: Path) -> list[dict]:
    """article.json -> rows {person, bullets}; bullets as the authors store them (one string of lines) or a list."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise DataError(f"{path} is not readable JSON ({err}); pass the authors' biography/article.json.") from None
    if not isinstance(data, dict):
        raise DataError(f"{path} must map each person to their ground-truth bullets, as article.json does.")
    return [{"person": person, "bullets": bullets} for person, bullets in data.items()]


def bullets_of(text: str | Sequence[str]) -> list[str]:
    """The facts of a bullet list: one per line, leading dashes, stars and numbers dropped, empty lines skipped."""
    lines = text.splitlines() if isinstance(text, str) else [str(x) for x in text]
    out = []
    for line in lines:
        start = next((i for i, ch in enumerate(line) if ch.isalpha()), None)
        if start is not None:
            out.append(line[start:].strip())
    return out


def question(person: str) -> str:
    return (f"Write a biography of the computer scientist {person} as a list of bullet points, one fact per line, "
            "covering their contributions and achievements.")


def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
    people = {str(row["person"]): bullets_of(row["bullets"]) for row in rows}
    order = sorted(people)
    random.Random(AUTHORS_SHUFFLE_SEED).shuffle(order)
    return [Task(answer_kind("open"), question(person), gold="\n".join(people[person]),
                 id=stable_id("bio", person), source="biographies", solution=person)
            for person in order if people[person]]


BENCHMARKS = (Benchmark("biographies", "Biographies", "open", {"test": 524}, to_tasks, "",
                        {"test": ("article.json", "biography/article.json")}, ("person", "bullets"),
                        papers="Du et al. 2024 (the code scores the first 40)", read=read_articles,
                        note="not on the hub: pass --data with the authors' biography/article.json"),)


# --- the factuality score --------------------------------------------------------------------------

def judge_messages(person: str, biography: str, fact: str) -> list[Message]:
    return [Message("user", f"Here is a biography of {person}:\n\n{biography}\n\nHere is one fact about "
                            f"{person}:\n\n{fact}\n\nDoes the biography agree with this fact? Compare dates, places "
                            "and names exactly. Answer with one word: yes, no or uncertain.")]


def parse_verdict(reply: str) -> str | None:
    """The first whole word yes / no / uncertain of the reply ("not" and "know" are not "no")."""
    found = _WORD.search(strip_think(reply or ""))
    return found.group(1).lower() if found else None


def factuality(verdicts: Iterable[str | None]) -> float | None:
    """The share of yes among yes and no; uncertain and unreadable replies count in neither (None: none)."""
    counted = [v for v in verdicts if v in ("yes", "no")]
    return counted.count("yes") / len(counted) if counted else None


@dataclass(frozen=True)
class AgentFactuality:
    question_id: str
    agent: int
    verdicts: tuple[str | None, ...]  # one per ground-truth bullet
    skipped: bool = False  # a one-bullet reply under 400 characters: not scored (the authors' rule)

    @property
    def score(self) -> float | None:
        return None if self.skipped else factuality(self.verdicts)


def is_unknown_reply(text: str) -> bool:
    bullets = bullets_of(text)
    return len(bullets) <= 1 and len(" ".join(bullets)) < SHORT_BIO_CHARS


async def score_transcript(t: Transcript, judge, *, concurrency: int = 4) -> list[AgentFactuality]:
    """Each last-round agent's biography against every ground-truth bullet of the task (judge: a ChatBackend)."""
    person, facts = t.task.solution, bullets_of(t.task.gold or "")
    gate = asyncio.Semaphore(concurrency)

    async def ask(biography: str, fact: str) -> str | None:
        async with gate:
            [reply] = await judge.chat(judge_messages(person, biography, fact), temperature=0.0,
                                       max_tokens=JUDGE_TOKENS)
        return parse_verdict(reply.text)

    out = []
    for turn in sorted(t.rounds[-1].turns, key=lambda x: x.agent):
        text = strip_think(turn.text)
        if turn.error is not None or is_unknown_reply(text):
            out.append(AgentFactuality(t.task.id, turn.agent, (), skipped=True))
            continue
        biography = " ".join(bullets_of(text))
        verdicts = await asyncio.gather(*(ask(biography, fact) for fact in facts))
        out.append(AgentFactuality(t.task.id, turn.agent, tuple(verdicts)))
    return out


def pooled(scores: Sequence[AgentFactuality]) -> float | None:
    """The authors' number: yes / (yes + no) over every scored agent's verdicts together."""
    return factuality(v for s in scores if not s.skipped for v in s.verdicts)
