"""The `mcq` kind: an option letter in double round brackets (strict), or "the answer is (C)", "Answer: C", a
line citing one option whole, an option's own text as the answer (flexible); equal when the letters are, never by
meaning."""
from __future__ import annotations

import re

from r2mad.grading.kinds.base import AnswerKind, Ruling
from r2mad.grading.kinds.reading import extract_choice, extract_option_line
from r2mad.grading.kinds.spelling import normalise_case
from r2mad.grading.kinds.words import cut_off
from r2mad.text import quoted
from r2mad.types import OPTION_LETTERS, UNPARSED, Answer, AnswerShape, Task


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

    strict = frozenset({"double_paren"})

    def extract(self, text: str, task: Task) -> Answer:
        """((X)) (strict); else "the answer is (X)", "Answer: X", \\boxed{X}, a last line citing one option
        whole, or the reply's closing words (closing_choice) (flexible)."""
        found = extract_choice(text, "".join(letters_of(task)))
        if not found.parsed:
            found = extract_option_line(text, task.options)
        return found if found.parsed else closing_choice(text, task)

    def rule(self, a: str, b: str, question: str = "") -> Ruling:
        same = a.strip().upper() == b.strip().upper()
        return Ruling(same, "the same letter" if same else "different letters")

    def key(self, value: str) -> str:
        return value.strip().upper()


_NOT_CHOSEN = re.compile(r"\b(?:not|nor|or|and|than|between|unlike|except)\s*$", re.I)
_SET_ASIDE = re.compile(r"\s*(?:or|and)\b|[^.;]*\b(?:is|are|seems?|looks?)\s+(?:wrong|incorrect|false|not)\b", re.I)
def _spelled(text: str) -> str:
    """Case, accents and punctuation aside, every word kept ("Vitamin A" is not "Vitamin")."""
    return " ".join(re.sub(r"[^\w\s.]|(?<!\d)\.|\.(?!\d)", " ", normalise_case(text)).split())


_REJECTS = re.compile(r"\b(?:wrong|incorrect|false|not|isn't|aren't)\b", re.I)
_LABELLED = re.compile(r"\(?([A-J])[).:]\s")


def closing_choice(text: str, task: Task) -> Answer:
    """The option the reply's last line (or last sentence) commits to: one letter in brackets there that no
    "not", "or" or "and" sets aside ("The statement that is false is (F).", "It's not (A) …; it's (C) …",
    "Mercury (B) — …"); "I choose B", "…, option B"; one option's own text ("Green.", "So the prime is 59.");
    else UNPARSED (also for a reply cut off mid-sentence). A bare letter in prose never counts."""
    letters = letters_of(task)
    lines = [line.strip() for line in text.replace("*", "").strip().splitlines() if line.strip()]
    if not lines or cut_off(text):
        return UNPARSED  # nothing, or cut off mid-sentence
    labelled = [line for line in lines if _LABELLED.match(line)]
    if len(lines) > 1 and lines[-2].endswith(":"):  # "… the answer is:" then "B. All of the above."
        m = _LABELLED.match(lines[-1])
        if m and m.group(1) in letters:
            return Answer(m.group(1), "option_line")
    if len(labelled) > 1 and _LABELLED.match(lines[-1]):  # the options recited: no choice made
        return UNPARSED
    last = re.split(r"(?<=[.!?])\s+(?=[A-Z(])", lines[-1])[-1]
    bracketed = {m.group(1).upper() for m in re.finditer(r"\(([A-Ja-j])\)", last)
                 if not _NOT_CHOSEN.search(last[:m.start()]) and not _SET_ASIDE.match(last[m.end():])}
    if len(bracketed & set(letters)) == 1:
        return Answer(bracketed.pop(), "bracketed_letter")
    named = re.findall(r"(?:\b(?:choose|pick|select|go with)\s+(?:option\s+)?|"
                       r"(?:\bis|\bbe|,)\s*(?:option|choice|letter)\s+|"
                       r"^\s*option\s+(?=\(?[A-J]\)?[.!]?$)|"
                       r"\b(?:my (?:choice|pick|answer)|answer)\s*(?:is|:)\s*(?:option\s+)?)\(?([A-J])\)?(?![\w'])"
                       r"|\boption\s+\(?([A-J])\)?\s+is\s+(?:correct|right|the answer)", last, re.I)
    named = [a or b for a, b in named]
    if len({n.upper() for n in named} & set(letters)) == 1:
        return Answer(named[-1].upper(), "option_named")
    rejects = _REJECTS.search(last) and not _REJECTS.search(task.question)  # not in "Which is NOT …?"
    if _LABELLED.match(lines[-1]) or rejects:  # "(E) Grey", "Brown is wrong": no choice
        return UNPARSED
    said = _spelled(last)
    cited = [letter for letter, body in task.options if _spelled(body)
             and re.search(rf"(?:^|\s){re.escape(_spelled(body))}(?:\s|$)", said)]
    return Answer(cited[0], "option_text") if len(cited) == 1 else UNPARSED
