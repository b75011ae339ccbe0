"""How each verdict was reached, in words a person reads: which reading found an answer ("strict: \\boxed{}",
"flexible: last number"), and the rule or judge grade behind a score ("correct: the same number", "undecided: no
judge (different words, similar meaning)"). For the app's chips, the CLI and eval's report. Pure."""
from __future__ import annotations

from typing import Sequence

from r2mad.grading.kinds import kind_of
from r2mad.types import Answer, Judged, Task

READ_FROM = {  # Answer.how -> what it was read from
    "boxed": "\\boxed{}",
    "double_paren": "((letter))",
    "answer_is": "“the answer is”",
    "answer_colon": "“Answer:” line",
    "option_line": "a line citing one option",
    "option_text": "an option's own text",
    "hashes": "#### line",
    "last_number": "last number",
    "conclusion": "the concluding sentence",
    "opening_word": "the opening word",
    "whole_reply": "the whole reply",
    "last_sentence": "the last sentence",
}
OTHER = {"guarded": "asked again for the answer alone (answer guard)", "forced": "forced by a fork",
         "unparsed": "no answer found", "abstained": "abstained: the model call failed"}


def how_read(answer: Answer, task: Task) -> str:
    """"strict: \\boxed{}", "flexible: last number", or what else gave (or failed to give) the answer."""
    reading = kind_of(task).reading(answer)
    if reading:
        return f"{reading}: {READ_FROM.get(answer.how, answer.how)}"
    return OTHER.get(answer.how, answer.how)


def how_graded(answer: Answer, task: Task, judged: Sequence[Judged] = ()) -> str:
    """"correct: the same number", "wrong: different numbers", "undecided: no judge (…)"; "" without a gold."""
    ruling = kind_of(task).grade(answer, task, judged)
    if ruling is None:
        return ""
    if ruling.same is None:
        return ruling.how if ruling.how.startswith("undecided") else f"undecided: {ruling.how}"
    return f"{'correct' if ruling.same else 'wrong'}: {ruling.how}"
