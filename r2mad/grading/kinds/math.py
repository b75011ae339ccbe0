"""The `math` kind: a value or expression in \\boxed{}, equal when math-verify/sympy say so (mathcheck)."""
from __future__ import annotations

from typing import Sequence

from r2mad.grading.kinds.base import AnswerKind
from r2mad.grading.kinds.reading import extract_math, math_value
from r2mad.grading.mathcheck import check_math, math_equivalent, normalize_math
from r2mad.types import UNPARSED, Answer, AnswerShape, Task

# GBNF: \boxed{ then a non-empty, brace-balanced expression on one line, then }
MATH_GRAMMAR = r"""root ::= "\\boxed{" first item* "}"
first ::= [^{}\n ] | "{" item* "}"
item ::= [^{}\n] | "{" item* "}"
"""


class MathKind(AnswerKind):
    name, label = "math", "math"
    agree = "Agree = the same value, however it is written (6/4, 1.5 and \\frac{3}{2} agree)."

    def instruction(self, task: Task) -> str:
        return "Think step by step, then write the final answer alone inside \\boxed{} on the last line."

    def final_request(self, task: Task) -> str:
        return "Give only your final answer now, written inside \\boxed{} and nothing else."

    def shape(self, task: Task) -> AnswerShape:
        inner = r"[^{}\n]{0,40}"
        return AnswerShape(choices=(), regex=rf"\\boxed\{{{inner}(\{{{inner}\}}{inner}){{0,3}}\}}",
                           grammar=MATH_GRAMMAR)

    def written(self, value: str) -> str:
        return f"My final answer is \\boxed{{{value}}}."

    def extract(self, text: str, task: Task) -> Answer:
        found = extract_math(text)
        if not found.parsed:
            return found
        value = math_value(found.value, task.question)
        return Answer(value, found.how) if value is not None else UNPARSED

    def same(self, a: str, b: str) -> bool:
        return math_equivalent(a, b)

    def key(self, value: str) -> str:
        return normalize_math(value)

    def settle(self, values: Sequence[str]) -> list[str]:
        values = sorted(set(values))
        found = (check_math(a, b)[1] for i, a in enumerate(values) for b in values[i + 1:])
        return list(dict.fromkeys(n for n in found if n))


class IntegerKind(MathKind):
    """AIME's answers: a whole number from 0 to 999, compared exactly (leading zeros aside)."""
    name, label = "integer", "whole number"
    agree = "Agree = the same whole number (AIME: 0 to 999; 033 and 33 agree)."

    def instruction(self, task: Task) -> str:
        return ("Think step by step, then write the final answer, a whole number from 0 to 999, alone inside "
                "\\boxed{} on the last line.")

    def shape(self, task: Task) -> AnswerShape:
        return AnswerShape(choices=(), regex=r"\\boxed\{[0-9]{1,3}\}",
                           grammar='root ::= "\\\\boxed{" [0-9] [0-9]? [0-9]? "}"')

    guard_tokens = 12

    def extract(self, text: str, task: Task) -> Answer:
        found = super().extract(text, task)
        value = whole_number(found.value) if found.parsed else None
        return Answer(value, found.how) if value is not None else UNPARSED

    def same(self, a: str, b: str) -> bool:
        x, y = whole_number(a), whole_number(b)
        return x is not None and x == y

    def key(self, value: str) -> str:
        return whole_number(value) or value.strip()

    def settle(self, values: Sequence[str]) -> list[str]:
        return []

    def checked(self, value: str, task: Task) -> str:
        number = whole_number(value)
        if number is None:
            raise ValueError(f"The answer {value.strip()!r} is not a whole number; write one such as 33.")
        return number


def whole_number(value: str) -> str | None:
    """"033", "33", "33.0", "1,000" -> the number without leading zeros; None for anything else."""
    text = normalize_math(value).replace(",", "")
    if text.endswith(".0"):
        text = text[:-2]
    return str(int(text)) if text.isdigit() else None
