"""The answer-kind registry: one strategy per kind, looked up by name (`KINDS[name]`, `kind_of(task)`).
The loop, the methods and the memory ask the kind; no code outside grading/ tests a kind by name."""
from __future__ import annotations

from r2mad.grading.kinds.base import AnswerKind
from r2mad.grading.kinds.free import OpenKind, ShortKind
from r2mad.grading.kinds.math import IntegerKind, MathKind
from r2mad.grading.kinds.mcq import ChoiceKind
from r2mad.grading.kinds.yesno import YesNoKind
from r2mad.text import quoted

KINDS: dict[str, AnswerKind] = {k.name: k for k in (MathKind(), ChoiceKind(), IntegerKind(), YesNoKind(),
                                                     ShortKind(), OpenKind())}
KIND_NAMES = tuple(KINDS)


def kind_named(name: str) -> AnswerKind:
    if name not in KINDS:
        raise ValueError(f"Unknown answer kind {quoted(name)}; choose one of: {', '.join(KINDS)}.")
    return KINDS[name]


def kind_of(task) -> AnswerKind:
    """The strategy of a task's kind (a Task, or the kind's name)."""
    return kind_named(task if isinstance(task, str) else task.kind)
