"""Du et al.'s biographies: computer scientists and their ground-truth bullets in the authors' format
(article.json: {person: bullet lines}), and the authors' factuality score: a judge asked, per ground-truth bullet,
whether an agent's biography is consistent with it; score = yes / (yes + no), pooled over every agent's verdicts,
with no majority vote. 524 people in the authors' order (names sorted, shuffled with seed 1), so --limit 40 gives
the 40 their code scores. Two readings of the judge: the authors' (their prompt; "uncertain" anywhere in the reply
-> none, else "yes" anywhere -> yes, else "no" anywhere -> no; a one-bullet reply under 400 characters skipped, an
empty one judged) and ours (our prompt, the reply's first whole word, an empty reply skipped too)."""
from __future__ import annotations

import asyncio
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from r2mad.backends.base import BackendError
from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind, stable_id
from r2mad.evaluation.datasets import DataError
from r2mad.grading.answers import strip_think
from r2mad.prompts.biographies import bullets_of, first_prompt
from r2mad.types import Message, Task, Transcript

AUTHORS_SHUFFLE_SEED = 1
READINGS = ("authors", "words")  # how a judge's reply is read (module docstring)
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


def filtered(person: str) -> str:
    """The name as the authors' code writes it: the qualifier in brackets cut off ("Alan Kay (computer
    scientist)" -> "Alan Kay ", the trailing space kept as theirs is)."""
    return person.split("(")[0]


def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
    people = {str(row["person"]): bullets_of(row["bullets"]) for row in rows}
    order = sorted(people)
    random.Random(AUTHORS_SHUFFLE_SEED).shuffle(order)
    return [Task(answer_kind("open"), first_prompt(filtered(person)), gold="\n".join(people[person]),
                 id=stable_id("bio", person), source="biographies", solution=filtered(person))
            for person in order if people[person]]


BENCHMARKS = (Benchmark("biographies", "Biographies", "open", {"test": 524}, to_tasks, "",
                        {"test": ("article.json", "biography/article.json")}, ("person", "bullets"),
                        papers="Du et al. 2024 (the code scores the first 40)", read=read_articles,
                        note="not on the hub: pass --data with the authors' biography/article.json"),)


# --- the factuality score --------------------------------------------------------------------------

def judge_messages(person: str, biography: str, fact: str, reading: str = "authors") -> list[Message]:
    if reading == "authors":  # their evaluator's prompt, word for word
        return [Message("user", f"Consider the following biography of {person}: \n {biography} \n\n Is the above "
                                f"biography above consistent with the fact below? \n\n {fact} \n Give a single word "
                                "answer, yes, no, or uncertain. Carefully check the precise dates and locations "
                                "between the fact and the above biography.")]
    return [Message("user", f"Here is a biography of {person}:\n\n{biography}\n\nHere is one fact about "
                            f"{person}:\n\n{fact}\n\nDoes the biography agree with this fact? Compare dates, places "
                            "and names exactly. Answer with one word: yes, no or uncertain.")]


def parse_verdict(reply: str, reading: str = "authors") -> str | None:
    """The authors' reading: "uncertain" anywhere -> uncertain, else "yes" anywhere -> yes, else "no" anywhere ->
    no ("I do not know" reads no). Ours: the first whole word yes / no / uncertain ("not", "know" are not "no")."""
    text = strip_think(reply or "")
    if reading == "authors":
        low = text.lower()
        return next((word for word in ("uncertain", "yes", "no") if word in low), None)
    found = _WORD.search(text)
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
    skipped: bool = False  # "I do not know this person": a one-bullet reply under 400 characters, not scored

    @property
    def score(self) -> float | None:
        return None if self.skipped else factuality(self.verdicts)


def is_unknown_reply(text: str, reading: str = "authors") -> bool:
    """A one-bullet reply under 400 characters (the authors' skip); ours also skips a reply with no bullet, which
    the authors' evaluator judges with an empty biography."""
    bullets = bullets_of(text)
    one = len(bullets) == 1 and len(bullets[0]) < SHORT_BIO_CHARS
    return one or (reading != "authors" and not bullets)


async def score_transcript(t: Transcript, judge, *, reading: str = "authors", concurrency: int = 4
                           ) -> list[AgentFactuality]:
    """Each last-round agent's biography against every ground-truth bullet of the task (judge: a ChatBackend),
    read as `reading` says; a failed judge call leaves its bullet unread (the authors' evaluator skips it too).
    The authors' judge samples at the API's default temperature (1.0); ours at 0."""
    person, facts = t.task.solution, bullets_of(t.task.gold or "")
    gate = asyncio.Semaphore(concurrency)
    temperature = 1.0 if reading == "authors" else 0.0

    async def ask(biography: str, fact: str) -> str | None:
        async with gate:
            try:
                [reply] = await judge.chat(judge_messages(person, biography, fact, reading), temperature=temperature,
                                           max_tokens=JUDGE_TOKENS)
            except BackendError:
                return None
        return parse_verdict(reply.text, reading)

    out = []
    for turn in sorted(t.rounds[-1].turns, key=lambda x: x.agent):
        text = strip_think(turn.text)
        if turn.error is not None or is_unknown_reply(text, reading):
            out.append(AgentFactuality(t.task.id, turn.agent, (), skipped=True))
            continue
        biography = " ".join(bullets_of(text))
        verdicts = await asyncio.gather(*(ask(biography, fact) for fact in facts))
        out.append(AgentFactuality(t.task.id, turn.agent, tuple(verdicts)))
    return out


def pooled(scores: Sequence[AgentFactuality]) -> float | None:
    """The authors' number: yes / (yes + no) over every scored agent's verdicts together."""
    return factuality(v for s in scores if not s.skipped for v in s.verdicts)
