"""The grader measured: on replies graded by hand (each with the verdict a careful grader gives), on pairs of
answers graded the same or different, and on GSM8K's published model solutions with their authors' verdicts.
Pure tallies over rows as read from JSON lines; with a judge, the pairs the rules leave undecided are graded
first. What `bench --grading` prints and what tests/grading/test_graded.py holds to its thresholds."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from r2mad.grading.answers import extract_answer
from r2mad.grading.kinds import kind_named
from r2mad.grading.tasks import inline_options
from r2mad.types import Judged, Task

GSM8K_MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


@dataclass
class Tally:
    """One kind's figures: items, agreement with the hand verdicts, undecided, and the ids of the worst errors
    (a wrong or missing answer scored correct; two different answers grouped)."""
    items: int = 0
    agree: int = 0
    undecided: int = 0
    harmful: list[str] = field(default_factory=list)
    missed: list[tuple[str, str, str]] = field(default_factory=list)  # (id, by hand, by the grader)
    rules: dict[str, int] = field(default_factory=dict)  # how each verdict was reached, counted

    @property
    def share(self) -> float:
        return self.agree / self.items if self.items else float("nan")

    def add(self, row_id: str, expected: str, got: str, how: str, harmful: bool) -> None:
        self.items += 1
        self.agree += got == expected
        self.undecided += got == "undecided"
        self.rules[how] = self.rules.get(how, 0) + 1
        if harmful:
            self.harmful.append(row_id)
        if got != expected:
            self.missed.append((row_id, expected, got))


def reply_task(row: dict[str, Any]) -> Task:
    gold = row.get("gold")
    gold = " | ".join(gold) if isinstance(gold, list) else gold
    return Task(row["kind"], row["question"], tuple(tuple(o) for o in row.get("options") or ()), gold)


def reply_verdict(row: dict[str, Any], judged: Sequence[Judged] = ()) -> tuple[str, str]:
    """(verdict, how): correct / incorrect / no_answer / undecided (open: unscored / no_answer), and the rule."""
    task = reply_task(row)
    answer = extract_answer(row["reply"], task)
    if not answer.parsed:
        return "no_answer", "no answer read"
    ruling = kind_named(task.kind).grade(answer, task, judged)
    if ruling is None:
        return "unscored", answer.how
    return {True: "correct", False: "incorrect", None: "undecided"}[ruling.same], ruling.how


def replies_tally(rows: Iterable[dict[str, Any]], judged: dict[str, Sequence[Judged]] | None = None
                  ) -> dict[str, Tally]:
    tallies: dict[str, Tally] = {}
    for row in rows:
        got, how = reply_verdict(row, (judged or {}).get(row["id"], ()))
        harmful = got == "correct" and row["verdict"] != "correct"
        tallies.setdefault(row["kind"], Tally()).add(row["id"], row["verdict"], got, how, harmful)
    return tallies


def pair_task(row: dict[str, Any]) -> Task:
    """A pair's question; for multiple choice, its options read from the question."""
    found = inline_options(row["question"]) if row["kind"] == "mcq" else None
    return Task(row["kind"], *(found or (row["question"], ())))


def pair_answers(row: dict[str, Any]):
    """Both answers read as a final line is: the text itself, else the text in the kind's own form."""
    task, kind = pair_task(row), kind_named(row["kind"])
    read = [extract_answer(text, task) for text in (row["a"], row["b"])]
    return task, [r if r.parsed else extract_answer(kind.written(text), task) for r, text in zip(read, (row["a"],
                                                                                                        row["b"]))]


def pair_verdict(row: dict[str, Any], judged: Sequence[Judged] = ()) -> tuple[bool | None, str]:
    task, (a, b) = pair_answers(row)
    if not (a.parsed and b.parsed):
        return None, "an answer not read"
    ruling = kind_named(task.kind).ruling(a.value, b.value, judged, task.question)
    return ruling.same, ruling.how


def pairs_tally(rows: Iterable[dict[str, Any]], judged: dict[str, Sequence[Judged]] | None = None
                ) -> dict[str, Tally]:
    words = {True: "same", False: "different", None: "undecided"}
    tallies: dict[str, Tally] = {}
    for row in rows:
        same, how = pair_verdict(row, (judged or {}).get(row["id"], ()))
        harmful = same is True and not row["same"]
        tallies.setdefault(row["kind"], Tally()).add(row["id"], words[row["same"]], words[same], how, harmful)
    return tallies


def gsm8k_tally(rows: Iterable[dict[str, Any]]) -> Tally:
    """The math reading against the authors' is_correct on every published solution (the reference read from
    the ground truth's own "A: N" line, as any reply)."""
    tally = Tally()
    for i, row in enumerate(rows):
        gold = extract_answer(row["ground_truth"], Task("math", row["question"])).value
        task = Task("math", row["question"], gold=gold)
        for model in GSM8K_MODELS:
            solution = row[model]
            ruling = kind_named("math").grade(extract_answer(solution["solution"], task), task)
            got = "correct" if ruling.same else "incorrect" if ruling.same is False else "undecided"
            expected = "correct" if solution["is_correct"] else "incorrect"
            tally.add(f"{i}:{model}", expected, got, ruling.how, got == "correct" and expected != "correct")
    return tally


async def judged_rows(rows: Sequence[dict[str, Any]], judge, *, pairs: bool = False, concurrency: int = 8
                      ) -> dict[str, tuple[Judged, ...]]:
    """The judge's verdicts on what the rules leave undecided: per reply, its answer against each reference;
    per pair, the two answers (both ways for open positions)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(row) -> tuple[str, tuple[Judged, ...]]:
        if pairs:
            task, (a, b) = pair_answers(row)
            asks = [(a.value, b.value, None)] if a.parsed and b.parsed else []
        else:
            task = reply_task(row)
            answer = extract_answer(row["reply"], task)
            asks = [(answer.value, r, r) for r in kind_named(task.kind).references(task)] if answer.parsed else []
        kind, found = kind_named(task.kind), []
        for a, b, reference in asks:
            if kind.ruling(a, b, (), task.question).same is None:
                async with gate:
                    verdict, _ = await judge.pair(task.question, a, b, reference=reference,
                                                  both_ways=kind.judge_both_ways())
                found.append(verdict)
        return row["id"], tuple(found)

    return dict(await asyncio.gather(*(one(row) for row in rows)))
