"""Du et al.'s own draws and scoring rules for their benchmarks (their repository's gen_*/eval_* scripts, read
there; our words): the 100 GSM8K questions are the test file shuffled with Python's random.seed(0); the 100 MMLU
questions are 100 draws, with that generator, of a subject file (random.choice) and a row in it (random.randint),
where pandas read each headerless CSV's first row as its header (so it is never drawn); a question with no parsed
answer is dropped from arithmetic's denominator, counted correct in GSM8K when the plurality of the agents'
answers is none, and counted correct in MMLU when the last agent's answer is none. Pure; the draws keep the order
the authors' questions came in."""
from __future__ import annotations

import random
from typing import Sequence

from r2mad.grading.answers import is_correct
from r2mad.types import Task, Transcript

SAMPLE = 100


def gsm8k_draw(tasks: Sequence[Task]) -> list[Task]:
    """The test questions in the file's order, shuffled with seed 0 (random.seed(0); random.shuffle), first 100."""
    order = list(tasks)
    random.Random(0).shuffle(order)
    return order[:SAMPLE]


def mmlu_draw(tasks: Sequence[Task]) -> list[Task]:
    """100 draws of (subject, row), seed 0, over the subjects in sorted file order (their glob's order is the file
    system's; sorted is the reproducible reading), each subject's first question left out (read as the CSV's
    header); a question drawn twice counts once, where it was first drawn."""
    subjects: dict[str, list[Task]] = {}
    for task in tasks:
        subjects.setdefault(task.source, []).append(task)
    files = [rows[1:] for _, rows in sorted(subjects.items()) if len(rows) > 1]
    rng, drawn = random.Random(0), {}
    for _ in range(SAMPLE):
        rows = rng.choice(files)
        task = rows[rng.randint(0, len(rows) - 1)]
        drawn.setdefault(task.id, task)
    return list(drawn.values())


DRAWS = {"gsm8k": gsm8k_draw, "mmlu": mmlu_draw}  # benchmark -> the authors' draw of its questions


def authors_correct(t: Transcript, dataset: str) -> bool | None:
    """Whether the authors' evaluator scores this debate correct (None: it drops the question). The final answers
    are the last round's; the plurality is theirs (most frequent, ties to the earliest agent)."""
    answers = [turn.answer for turn in t.rounds[-1].turns]
    values = [a.value for a in answers]
    if dataset == "arithmetic" and all(v is None for v in values):
        return None
    if dataset == "gsm8k" and _most_frequent(values) is None:
        return True
    if dataset == "mmlu" and values and values[-1] is None:
        return True
    parsed = [a for a in answers if a.parsed]
    return bool(parsed) and bool(is_correct(_most_frequent_answer(parsed), t.task, t.judged))


def _most_frequent(values: list):
    """The first value that reaches the highest count, in the agents' order."""
    return max(values, key=values.count) if values else None


def _most_frequent_answer(answers: list):
    values = [a.value for a in answers]
    return answers[values.index(_most_frequent(values))]
