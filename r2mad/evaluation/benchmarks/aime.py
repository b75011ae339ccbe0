"""AIME 2024 and 2025 (the integer kind: answers 0-999, exact): 30 problems a year, all of them the test
split (TrueMAD, MAD-M²'s AIME24&25). Hub copies: HuggingFaceH4/aime_2024 and MathArena/aime_2025."""
from __future__ import annotations

import dataclasses

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind
from r2mad.evaluation.datasets import DataError
from r2mad.grading.kinds import kind_named
from r2mad.grading.kinds.reading import extract_math, math_value
from r2mad.text import quoted
from r2mad.types import Task


def _first(row: dict, *names: str):
    return next((row[n] for n in names if row.get(n) not in (None, "")), None)


def gold_number(answer, task: Task) -> str:
    """The whole number a published answer states, read as the integer kind reads a value: 70, "070", 70.0,
    "$336$", "336^\\circ", "\\boxed{336}" and "336 \\text{ cm}" all state one. ValueError when it states none
    from 0 to 999."""
    text = str(answer).strip().strip("\"'")
    boxed = extract_math(text)
    text = boxed.value if boxed.how == "boxed" else text
    return kind_named("integer").checked(math_value(text) or text, task)


def to_task(row: dict, index: int, year: int, origin: str) -> Task:
    """One row as a task; a row without its problem or answer, or whose answer is no whole number from 0 to 999,
    is refused naming the row and what is wrong."""
    problem, answer = _first(row, "problem", "question", "Problem"), _first(row, "answer", "Answer")
    missing = "problem" if problem is None else "answer" if answer is None else None
    if missing:
        raise DataError(f"{origin} row {index} has no {missing}; pass an AIME {year} file with the columns problem "
                        "and answer.")
    number = _first(row, "id", "problem_idx", "ID") or index
    task = Task(answer_kind("integer"), str(problem), id=f"aime{year}-{number}", source=f"aime{year}",
                solution=str(row.get("solution") or ""))
    try:
        return dataclasses.replace(task, gold=gold_number(answer, task))
    except ValueError:
        raise DataError(f"{origin} row {index} has the answer {quoted(str(answer))}, which is not a whole number "
                        "from 0 to 999; correct it to the problem's answer or drop the row.") from None


def converter(year: int):
    def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
        return [to_task(row, index, year, origin) for index, row in enumerate(rows, 1)]
    return to_tasks


PATTERNS = {"test": ("data/train-*.parquet", "data/test-*.parquet", "*.jsonl")}  # the hub calls it train
BENCHMARKS = (
    Benchmark("aime2024", "AIME 2024", "integer", {"test": 30}, converter(2024), "HuggingFaceH4/aime_2024",
              PATTERNS, papers="TrueMAD; MAD-M² (AIME24&25)"),
    Benchmark("aime2025", "AIME 2025", "integer", {"test": 30}, converter(2025), "MathArena/aime_2025",
              PATTERNS, papers="TrueMAD; MAD-M² (AIME24&25)"),
)
