"""The answer judge: a model grades a candidate answer against a reference answer to the same question, for the
pairs the rules leave undecided (grading/kinds). Three grades, as SimpleQA's grader: CORRECT, INCORRECT,
NOT_ATTEMPTED; our own prompt; the grade is read as the reply's last grade word. A pair is judged once per
judge and question (cached, and the same pair asked twice at once waits for the first). Not the vote."""
from __future__ import annotations

import asyncio
import re
import time
import weakref
from collections import OrderedDict
from typing import Callable

from r2mad.backends.base import BackendError, ChatBackend
from r2mad.grading.kinds.reading import strip_think
from r2mad.types import AuxCall, Judged, Message

JUDGE_SYSTEM = ("You grade whether a candidate answer gives the same answer as a reference answer to a question. "
                "Wording, length, spelling variants and extra detail that does not contradict the reference do "
                "not matter; a different person, place, number, date, choice or position does, even when it "
                "looks alike (John Adams is not John Quincy Adams).")
_GRADE = re.compile(r"\b(NOT[_ ]ATTEMPTED|INCORRECT|CORRECT)\b")


def grade_messages(question: str, reference: str, candidate: str) -> list[Message]:
    return [Message("system", JUDGE_SYSTEM),
            Message("user", f"Question:\n{question.strip()}\n\nReference answer:\n{reference.strip()}\n\n"
                            f"Candidate answer:\n{candidate.strip()}\n\nGrade the candidate answer:\n"
                            "CORRECT: it gives the same answer as the reference.\n"
                            "INCORRECT: it gives another answer, contradicts the reference, or hedges between "
                            "answers.\n"
                            "NOT_ATTEMPTED: it gives no answer (a refusal, \"I don't know\", the question "
                            "restated).\n"
                            "Reply with one word: CORRECT, INCORRECT or NOT_ATTEMPTED.")]


def read_grade(text: str) -> str | None:
    """The last grade word of the reply (its reasoning set aside); None when it names none."""
    found = _GRADE.findall(strip_think(text).upper())
    return found[-1].replace(" ", "_") if found else None


class Judge:
    """A judge backbone and what it has graded: `pair` decides two answers to one question (the reference first
    when one of them is the task's reference), once per pair, recording every call it makes."""

    def __init__(self, backend: ChatBackend, name: str = "", *, max_tokens: int = 64, keep: int = 4096):
        self.backend, self.name = backend, name or backend.name
        self.max_tokens, self.keep = max_tokens, keep
        self._done: OrderedDict[tuple, asyncio.Future] = OrderedDict()

    async def pair(self, question: str, a: str, b: str, *, reference: str | None = None,
                   both_ways: bool = False, round_index: int = 0) -> tuple[Judged, list[AuxCall]]:
        """The verdict on a and b (sorted), and the calls made for it (none when it was graded before). With
        `both_ways` each must be graded CORRECT against the other (entailment both ways, for positions)."""
        x, y = sorted((a, b))
        key = (question, x, y, both_ways)
        known = self._done.get(key)
        if known is not None:
            self._done.move_to_end(key)
            return await asyncio.shield(known), []
        future = asyncio.get_running_loop().create_future()
        self._done[key] = future
        while len(self._done) > self.keep:
            self._done.popitem(last=False)
        try:
            ref, cand = (reference, y if reference == x else x) if reference in (x, y) else (x, y)
            directions = [(ref, cand), (cand, ref)] if both_ways else [(ref, cand)]
            graded = [await self._grade(question, r, c, round_index) for r, c in directions]
        except BaseException as exc:
            self._done.pop(key, None)
            future.set_exception(exc)
            future.exception()  # retrieved: a caller that waits on it sees it; nobody else is warned
            raise
        grades, calls = [g for g, _ in graded], [c for _, c in graded]
        judged = Judged(x, y, *_verdict(grades), judge=self.name)
        future.set_result(judged)
        if judged.same is None:  # no grade (a failed call): asked again next time
            self._done.pop(key, None)
        return judged, calls

    async def _grade(self, question: str, reference: str, candidate: str, round_index: int
                     ) -> tuple[str | None, AuxCall]:
        started = time.monotonic()
        try:
            [c] = await self.backend.chat(grade_messages(question, reference, candidate), n=1, temperature=0.0,
                                          top_p=1.0, max_tokens=self.max_tokens, seed=0)
        except BackendError as exc:
            return None, AuxCall("grade", round_index, "", seconds=time.monotonic() - started, error=str(exc),
                                 backbone=self.name)
        grade = read_grade(c.text)
        return grade, AuxCall("grade", round_index, c.text, c.tokens_in, c.tokens_out, c.latency_s, label=grade,
                              backbone=self.name, provider=c.provider, tokens_cached=c.tokens_cached)


def _verdict(grades: list[str | None]) -> tuple[bool | None, str]:
    """(same, how) from one grade, or from two (both ways: the same only when both are CORRECT)."""
    if any(g is None for g in grades):
        return None, "judge: no grade"
    if len(grades) == 2:
        if grades == ["CORRECT", "CORRECT"]:
            return True, "judge: CORRECT both ways"
        return False, "judge: CORRECT one way only" if "CORRECT" in grades else f"judge: {grades[0]}"
    return grades[0] == "CORRECT", f"judge: {grades[0]}"


_JUDGES: dict[int, Judge] = {}  # id(backend) -> its Judge, while the backend lives


def judge_for(choice: str, backend: ChatBackend, named: Callable[[str], ChatBackend]) -> Judge | None:
    """The judge a debate's setting names: "off" none; "auto" the debate's backbone when it can judge (never the
    embedded model); "self" the debate's backbone; else the backbone of that name (`named` makes it). One Judge,
    with its cache, per backend object."""
    if choice == "off" or (choice == "auto" and not backend.capabilities.judges_answers):
        return None
    chosen = backend if choice in ("auto", "self", backend.name) else named(choice)
    if id(chosen) not in _JUDGES:
        _JUDGES[id(chosen)] = Judge(chosen)
        weakref.finalize(chosen, _JUDGES.pop, id(chosen), None)
    return _JUDGES[id(chosen)]
