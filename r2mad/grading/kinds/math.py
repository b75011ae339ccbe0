"""The `math` and `integer` kinds: a value or expression in \\boxed{} (strict) or the reply's committed number
(flexible: `#### 18`, `A: 18`, "the answer is 18", the last number), equal when the numbers are exactly equal or
math-verify/sympy say so (mathcheck)."""
from __future__ import annotations

import re
from typing import Sequence

from r2mad.grading.kinds.base import AnswerKind, Ruling
from r2mad.grading.kinds.committed import math_reading
from r2mad.grading.kinds.reading import math_value
from r2mad.grading.mathcheck import check_math, normalize_math
from r2mad.types import UNPARSED, Answer, AnswerShape, Task

# GBNF: \boxed{ then a non-empty, brace-balanced expression on one line, then }
MATH_GRAMMAR = r"""root ::= "\\boxed{" first item* "}"
first ::= [^{}\n ] | "{" item* "}"
item ::= [^{}\n] | "{" item* "}"
"""


ASKS_FOR_A_FORM = re.compile(r"\b(?:factor(?:i[sz]e)?|expand|simplest form|in the form|written as|"
                             r"express\w* .{0,40}\bas)\b", re.I)


class MathKind(AnswerKind):
    name, label = "math", "math"
    agree = ("Agree = the same value: numbers exactly (6/4, 1.5 and 3/2 agree; 1000000 is not 999999), "
             "expressions however written.")

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

    strict = frozenset({"boxed"})

    def extract(self, text: str, task: Task) -> Answer:
        """The last \\boxed{} (strict); else the flexible reading (flexible_math). A worked equation counts for
        its right-hand side, the question's own expression restated for nothing."""
        found = math_reading(text, task.question)
        if not found.parsed:
            return found
        value = math_value(found.value, task.question)
        return Answer(value, found.how) if value is not None else UNPARSED

    def rule(self, a: str, b: str, question: str = "") -> Ruling:
        """check_math's verdict; when the question asks for a form ("Factor …", "in simplest form"), two answers
        equal only in value, spelled differently, are undecided."""
        same, how, _ = check_math(a, b)
        if same and how.startswith("equal as math") and ASKS_FOR_A_FORM.search(question):
            if same_shape(a, b):
                return Ruling(True, "the same form, its parts in another order")
            return Ruling(None, "equal in value, but the question asks for a form")
        return Ruling(same, how)

    def key(self, value: str) -> str:
        return normalize_math(value)

    def settle(self, values: Sequence[str]) -> list[str]:
        values = sorted(set(values))
        found = (check_math(a, b)[2] for i, a in enumerate(values) for b in values[i + 1:])
        return list(dict.fromkeys(n for n in found if n))


class IntegerKind(MathKind):
    """AIME's answers: a whole number from 0 to 999, compared exactly (leading zeros aside). A gold outside that
    range is refused; an answer outside it is read (agents who give it agree with each other) and so never
    equals a gold."""
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

    def rule(self, a: str, b: str, question: str = "") -> Ruling:
        x, y = whole_number(a), whole_number(b)
        if x is None or y is None:
            return Ruling(False, "not a whole number")
        return Ruling(x == y, "the same whole number" if x == y else "different numbers")

    def key(self, value: str) -> str:
        return whole_number(value) or value.strip()

    def settle(self, values: Sequence[str]) -> list[str]:
        return []

    def checked(self, value: str, task: Task) -> str:
        number = whole_number(value)
        if number is None or not in_range(number):
            raise ValueError(f"The answer {value.strip()!r} is not a whole number from 0 to 999; write one such "
                             "as 33.")
        return number


def same_shape(a: str, b: str) -> bool:
    """The same factors or terms in another order: "(x-3)(x+3)" and "(x+3)(x-3)", "1 + x^2" and "x^2+1"."""
    return _parts(normalize_math(a)) == _parts(normalize_math(b))


def _parts(s: str) -> list[str]:
    """A product of bracketed factors as its factors, else a sum as its signed terms (top level only), sorted."""
    factors = re.findall(r"\([^()]*\)", s)
    if factors and "".join(factors) == s:
        return sorted(factors)
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        depth += ch in "({["
        depth -= ch in ")}]"
        if ch in "+-" and depth == 0 and i > start:
            terms.append(s[start:i])
            start = i
    terms.append(s[start:])
    return sorted(t if t[0] in "+-" else "+" + t for t in terms if t)


def whole_number(value: str) -> str | None:
    """"033", "33", "33.0", "1,000" -> the number without leading zeros; None for anything else."""
    text = normalize_math(value).replace(",", "")
    if text.endswith(".0"):
        text = text[:-2]
    return str(int(text)) if text.isdigit() else None


def in_range(value: str | None) -> bool:
    """Whether a whole number is one of AIME's answers, 0 to 999."""
    number = whole_number(value or "")
    return number is not None and int(number) <= 999
