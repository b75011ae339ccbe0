"""The `mcq` kind: an option letter in double round brackets, equal when the letters are."""
from __future__ import annotations

import re

from r2mad.grading.kinds.base import AnswerKind
from r2mad.grading.kinds.reading import extract_choice, extract_option_line
from r2mad.text import quoted
from r2mad.types import OPTION_LETTERS, Answer, AnswerShape, Task


def letters_of(task: Task) -> list[str]:
    return [letter for letter, _ in task.options] or list(OPTION_LETTERS)


class ChoiceKind(AnswerKind):
    name, label = "mcq", "multiple choice"
    agree = "Agree = the same option letter."
    guard_tokens = 8  # enough for "((B))"

    def instruction(self, task: Task) -> str:
        return ("Think step by step, then end with a line that gives the letter of the option you choose, "
                "wrapped in two pairs of round brackets.")

    def final_request(self, task: Task) -> str:
        return (f"Give only the letter of the option you choose now ({', '.join(letters_of(task))}), wrapped in "
                "two pairs of round brackets, and nothing else.")

    def shape(self, task: Task) -> AnswerShape:
        letters = letters_of(task)
        return AnswerShape(choices=tuple(f"(({x}))" for x in letters),
                           regex=r"\(\((" + "|".join(map(re.escape, letters)) + r")\)\)",
                           grammar='root ::= "((" [' + "".join(letters) + '] "))"')

    def written(self, value: str) -> str:
        return f"My final answer is (({value}))."

    def checked(self, value: str, task: Task) -> str:
        letter, letters = value.strip().strip("()").upper(), letters_of(task)
        if letter not in letters:
            raise ValueError(f"Answer {quoted(value.strip())} is not an option of this question; choose one of "
                             f"{', '.join(letters)}.")
        return letter

    def extract(self, text: str, task: Task) -> Answer:
        found = extract_choice(text, "".join(letters_of(task)))
        return found if found.parsed else extract_option_line(text, task.options)

    def same(self, a: str, b: str) -> bool:
        return a.strip().upper() == b.strip().upper()

    def key(self, value: str) -> str:
        return value.strip().upper()
