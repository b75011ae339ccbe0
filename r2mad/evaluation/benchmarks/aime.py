"""AIME 2024 and 2025 (the integer kind: answers 0-999, exact): 30 problems a year, all of them the test
split (TrueMAD, MAD-M²'s AIME24&25). Hub copies: HuggingFaceH4/aime_2024 and MathArena/aime_2025."""
from __future__ import annotations

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind
from r2mad.evaluation.datasets import DataError
from r2mad.types import Task


def _first(row: dict, *names: str):
    return next((row[n] for n in names if row.get(n) not in (None, "")), None)


def converter(year: int):
    def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
        out = []
        for index, row in enumerate(rows, 1):
            problem, answer = _first(row, "problem", "question", "Problem"), _first(row, "answer", "Answer")
            gold = str(answer).strip().lstrip("0") or "0" if answer is not None else ""
            if problem is None or not gold.isdigit() or not 0 <= int(gold) <= 999:
                raise DataError(f"{origin} row {index} has no problem or no answer from 0 to 999; pass an AIME "
                                f"{year} file with the columns problem and answer.")
            number = _first(row, "id", "problem_idx", "ID") or index
            out.append(Task(answer_kind("integer"), str(problem), gold=gold, id=f"aime{year}-{number}",
                            source=f"aime{year}", solution=str(row.get("solution") or "")))
        return out
    return to_tasks


PATTERNS = {"test": ("data/train-*.parquet", "data/test-*.parquet", "*.jsonl")}  # the hub calls it train
BENCHMARKS = (
    Benchmark("aime2024", "AIME 2024", "integer", {"test": 30}, converter(2024), "HuggingFaceH4/aime_2024",
              PATTERNS, papers="TrueMAD; MAD-M² (AIME24&25)"),
    Benchmark("aime2025", "AIME 2025", "integer", {"test": 30}, converter(2025), "MathArena/aime_2025",
              PATTERNS, papers="TrueMAD; MAD-M² (AIME24&25)"),
)
