"""Answers as every caller reads them: extraction, agreement, consensus and plurality voting, each by the
task's answer kind (grading/kinds), looked up by name. The reading of replies lives in grading/kinds/reading.py
(re-exported here); math equivalence in mathcheck.py. Not for prompting, scoring runs or I/O."""
from __future__ import annotations

from typing import Sequence

from r2mad.grading.kinds import kind_named
from r2mad.grading.kinds.base import CLOSING_WORDS, AnswerKind
from r2mad.grading.kinds.reading import (  # noqa: F401  (re-exported: callers read answers from here)
    closing_braces,
    extract_choice,
    extract_math,
    extract_option_line,
    math_value,
    split_think,
    strip_think,
)
from r2mad.types import UNPARSED, Answer, Judged, Task


def extract_answer(text: str, task: Task, *, cut: bool = False) -> Answer:
    """The answer the reply commits to, read by the task's kind (its reasoning blocks set aside). `cut`: the reply
    stopped at its token limit, so its closing words are no conclusion (a last number there is not read)."""
    kind = kind_named(task.kind)
    found = kind.extract(strip_think(text), task)
    return UNPARSED if cut and found.how in CLOSING_WORDS else found


# --- agreement and scoring: each kind's own (grading/kinds), for a task (or a kind's name, when the question is
# not at hand); `judged`: the judge's verdicts a transcript holds ------------------------------------------------

def _of(task: Task | str) -> tuple[AnswerKind, str]:
    return (kind_named(task), "") if isinstance(task, str) else (kind_named(task.kind), task.question)


def same_answer(a: Answer, b: Answer, task: Task | str, judged: Sequence[Judged] = ()) -> bool:
    """Decided the same (an undecided pair is not)."""
    kind, question = _of(task)
    return kind.agrees(a, b, judged, question)


def is_correct(answer: Answer, task: Task, judged: Sequence[Judged] = ()) -> bool | None:
    """True or False as graded against the task's references; None without one, or when undecided."""
    return kind_named(task.kind).correct(answer, task, judged)


def consensus_ratio(answers: Sequence[Answer], task: Task | str, judged: Sequence[Judged] = ()) -> float:
    """Cons(Z) = max_y (1/n) Σ_i 1[a(z_i) = y] over the kind's groups; UNPARSED counts in n but agrees
    with nothing, and an undecided pair is two groups."""
    kind, question = _of(task)
    return kind.consensus(answers, judged, question) if answers else 0.0


def plurality_vote(answers: Sequence[Answer], task: Task | str, judged: Sequence[Judged] = ()) -> Answer:
    """The leader of the largest group; ties go to the earliest agent. All UNPARSED -> UNPARSED."""
    kind, question = _of(task)
    return kind.vote(answers, judged, question)


def is_unanimous(answers: Sequence[Answer], task: Task | str, judged: Sequence[Judged] = ()) -> bool:
    kind, question = _of(task)
    return kind.unanimous(answers, judged, question)
