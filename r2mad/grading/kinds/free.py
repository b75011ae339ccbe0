"""The free-text kinds: `yesno`, `short` (a few words, equal by spelling or by meaning) and `open` (no single
right string: answers grouped by meaning, the largest group's leader the final answer, the rest its dissent)."""
from __future__ import annotations

import re
from typing import Sequence

from r2mad.grading.kinds.base import AnswerKind
from r2mad.grading.kinds.meaning import MEANING
from r2mad.grading.kinds.words import committed, has_answer_line, last_sentence, normalise, tidy
from r2mad.types import UNPARSED, Answer, AnswerShape, Task

FINAL_LINE = 'end with a last line that starts with "Final answer:"'


class YesNoKind(AnswerKind):
    name, label = "yesno", "yes or no"
    agree = "Agree = the same yes or no."
    guard_tokens = 4

    def instruction(self, task: Task) -> str:
        return f"Think it through briefly, then {FINAL_LINE} followed by the single word yes or no."

    def final_request(self, task: Task) -> str:
        return "Answer now with the single word yes or no, and nothing else."

    def shape(self, task: Task) -> AnswerShape:
        return AnswerShape(choices=("yes", "no"), regex=r"(yes|no)", grammar='root ::= "yes" | "no"')

    def extract(self, text: str, task: Task) -> Answer:
        found = committed(text)
        word = _yes_or_no(found.value) if found.parsed else None
        if word is None:  # "Yes, a hot dog …": a reply that opens with its verdict
            found, word = Answer(text, "opening_word"), _yes_or_no(text, opening_only=True)
        return Answer(word, found.how) if word else UNPARSED

    def key(self, value: str) -> str:
        return value.casefold()

    def checked(self, value: str, task: Task) -> str:
        word = _yes_or_no(value)
        if word is None:
            raise ValueError(f"The answer {value.strip()!r} is not yes or no; write one of them.")
        return word

    def same(self, a: str, b: str) -> bool:
        return a.casefold() == b.casefold()

    def correct(self, answer: Answer, task: Task) -> bool | None:
        gold = _yes_or_no(task.gold or "")
        return None if task.gold is None else bool(answer.parsed and gold and self.same(answer.value, gold))


def _yes_or_no(text: str, opening_only: bool = False) -> str | None:
    """"yes" or "no" from the text's opening word (true/false read as yes/no); None for "yes or no" (a copied
    placeholder) and for "No matter …" (an opening that is no verdict)."""
    if re.match(r"\W*(?:yes|no)\s*(?:/|or)\s*(?:yes|no)\b", text, re.I):
        return None
    m = re.match(r"\s*\**\s*(yes|no|true|false)\b(?=\s*(?:[,.!;:)\n*]|$)" + ("" if opening_only else r"|\s") + ")",
                 text, re.I)
    return None if m is None else {"yes": "yes", "true": "yes", "no": "no", "false": "no"}[m.group(1).lower()]


SHORT_THRESHOLD = 0.80  # cosine (all-MiniLM-L6-v2) at or above which two short answers mean the same
OPEN_THRESHOLD = 0.70  # cosine at or above which two positions on an open question are one group


class ShortKind(AnswerKind):
    """A short free-text answer ("Canberra", "Au", "1969"). Two answers agree when their normalised spellings
    are equal, else when their meanings are close (cosine >= SHORT_THRESHOLD) and they name the same numbers."""
    name, label = "short", "short answer"
    agree = ("Agree = the same answer, spelled alike (case, articles, punctuation and number words aside) or "
             f"alike in meaning (similarity at least {SHORT_THRESHOLD:.2f}).")
    uses_meaning = True
    threshold = SHORT_THRESHOLD
    limit = 120  # characters: a longer "answer" is an essay, not a short answer
    words = 10  # and so is one of more words than this (once a restated question is dropped)

    def instruction(self, task: Task) -> str:
        return f"Think it through briefly, then {FINAL_LINE} followed by the answer alone, in a few words."

    def final_request(self, task: Task) -> str:
        return "Give only your final answer now, in a few words, and nothing else."

    guard_tokens = 24

    def extract(self, text: str, task: Task) -> Answer:
        found = committed(text, self.limit)
        if not found.parsed:
            lines = [line for line in text.strip().splitlines() if line.strip()]
            if len(lines) == 1 and len(lines[0].split()) <= 8 and not has_answer_line(text):
                # the reply is the answer alone
                found = Answer(tidy(lines[0]), "whole_reply")
        if not found.parsed or not found.value:
            return UNPARSED
        value = without_restatement(found.value, task.question)
        return Answer(value, found.how) if len(value.split()) <= self.words else UNPARSED

    def key(self, value: str) -> str:
        return normalise(value)

    def same(self, a: str, b: str) -> bool:
        na, nb = normalise(a), normalise(b)
        if na == nb:
            return True
        if not na or not nb or _numbers(na) != _numbers(nb):
            return False
        return MEANING.similarity(a, b) >= self.threshold

    def settle(self, values: Sequence[str]) -> list[str]:
        MEANING.embed(list(values))
        return []


def _numbers(text: str) -> list[str]:
    return sorted(re.findall(r"\d+(?:\.\d+)?", text))


_COPULA = re.compile(r"\s+(?:is|are|was|were|would be|will be)\s+", re.I)
_STOP = {"of", "in", "on", "to", "for", "and", "or", "what", "which", "who", "where", "when"}


def without_restatement(value: str, question: str) -> str:
    """"The capital of Australia is Canberra" and "Canberra is the capital of Australia" -> "Canberra": the
    side of "is" that only restates the question's words is dropped; otherwise the value as it is."""
    parts = _COPULA.split(value, maxsplit=1)
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        return value
    asked = set(normalise(question).split()) | {"it", "answer", "they", "he", "she"}

    def restates(side: str) -> bool:
        words = [w for w in normalise(side).split() if w not in _STOP]
        return bool(words) and all(w in asked for w in words)

    if restates(parts[0]) and not restates(parts[1]):
        return tidy(parts[1])
    if restates(parts[1]) and not restates(parts[0]):
        return tidy(parts[0])
    return value


class OpenKind(ShortKind):
    """No single right string ("Should I learn Rust or Go first?"): positions are grouped by meaning
    (cosine >= OPEN_THRESHOLD to a group's leader); consensus is the largest group's share; the final answer
    is that group's leader, with the other groups named as the dissent."""
    name, label = "open", "open question"
    agree = (f"Agree = the same position, by meaning (similarity at least {OPEN_THRESHOLD:.2f}); consensus is the "
             "largest group's share, the other groups are named as dissent.")
    threshold = OPEN_THRESHOLD
    names_dissent = True
    limit = 400
    guard_tokens = 80

    def instruction(self, task: Task) -> str:
        return (f"Think it through and weigh the alternatives, then {FINAL_LINE} followed by your position "
                "in one sentence.")

    def final_request(self, task: Task) -> str:
        return "Give only your position now, in one sentence, and nothing else."

    def extract(self, text: str, task: Task) -> Answer:
        """The "Final answer:" line (prose such as "the answer is helpful" is no position), else the reply's
        last complete sentence."""
        found = committed(text, self.limit, prose=False)
        if found.parsed or has_answer_line(text):  # "Final answer: None": a placeholder, not a position
            return found
        last = last_sentence(text, self.limit)
        return Answer(last, "last_sentence") if last else UNPARSED

    def same(self, a: str, b: str) -> bool:
        return normalise(a) == normalise(b) or MEANING.similarity(a, b) >= self.threshold

    def correct(self, answer: Answer, task: Task) -> bool | None:
        """Scored only by a judge against the reference (grading.judge); unscored here."""
        return None
