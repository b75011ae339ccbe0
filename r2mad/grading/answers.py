"""Answers as every caller reads them: extraction, agreement, consensus and plurality voting, each by the
task's answer kind (grading/kinds), looked up by name. The reading of replies lives in grading/kinds/reading.py
(re-exported here); math equivalence in mathcheck.py. Not for prompting, scoring runs or I/O."""
from __future__ import annotations

from typing import Sequence

from r2mad.grading.kinds import kind_named
from r2mad.grading.kinds.reading import (  # noqa: F401  (re-exported: callers read answers from here)
    closing_braces,
    extract_choice,
    extract_math,
    extract_option_line,
    math_value,
    split_think,
    strip_think,
)
from r2mad.types import Answer, Task


def extract_answer(text: str, task: Task) -> Answer:
    """The answer the reply commits to, read by the task's kind (its reasoning blocks set aside)."""
    return kind_named(task.kind).extract(strip_think(text), task)


# --- agreement: each kind's own (grading/kinds) -----------------------------------------------------

def same_answer(a: Answer, b: Answer, kind: str) -> bool:
    return kind_named(kind).agrees(a, b)


def is_correct(answer: Answer, task: Task) -> bool | None:
    return kind_named(task.kind).correct(answer, task)


def consensus_ratio(answers: Sequence[Answer], kind: str) -> float:
    """Cons(Z) = max_y (1/n) Σ_i 1[a(z_i) = y] over the kind's groups; UNPARSED counts in n but agrees
    with nothing."""
    return kind_named(kind).consensus(answers) if answers else 0.0


def plurality_vote(answers: Sequence[Answer], kind: str) -> Answer:
    """The leader of the largest group; ties go to the earliest agent. All UNPARSED -> UNPARSED."""
    return kind_named(kind).vote(answers)


def is_unanimous(answers: Sequence[Answer], kind: str) -> bool:
    return kind_named(kind).unanimous(answers)
