"""MATH in full (EleutherAI/hendrycks_math: seven subject folders), by level: the gold answer is the last
\\boxed{} of the worked solution. Test 5,000 (MAD-M²), train 7,500; `math-level-N` keeps level N."""
from __future__ import annotations

import re

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind, stable_id, variant, with_filter
from r2mad.evaluation.datasets import DataError
from r2mad.grading.answers import extract_math
from r2mad.types import Task

LEVELS = (1, 2, 3, 4, 5)


def level_of(value) -> int | None:
    digits = re.search(r"\d+", str(value))  # "Level 5" (a few hub rows say "Level ?")
    return int(digits.group()) if digits else None


def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
    out = []
    for index, row in enumerate(rows):
        gold = extract_math(str(row["solution"])).value
        if gold is None:
            raise DataError(f"{origin} row {index + 1} has no \\boxed{{}} answer in its solution; pass the MATH "
                            "files unchanged (EleutherAI/hendrycks_math).")
        problem = str(row["problem"])
        level = level_of(row["level"])
        out.append(Task(answer_kind("math"), problem, gold=gold, id=f"{stable_id('math', problem)}-L{level}",
                        source="math", solution=str(row["solution"])))
    return out


MATH = Benchmark("math", "MATH", "math", {"test": 5000, "train": 7500}, to_tasks, "EleutherAI/hendrycks_math",
                 {"test": ("*/test-*.parquet", "test*.jsonl"), "train": ("*/train-*.parquet", "train*.jsonl")},
                 ("problem", "level", "solution"), papers="MAD-M² (test)")
BENCHMARKS = (MATH,)


@variant("math-level-")
def by_level(suffix: str) -> Benchmark | None:
    if not suffix.isdigit() or int(suffix) not in LEVELS:
        return None
    return with_filter(MATH, f"math-level-{suffix}", lambda t: t.id.endswith(f"-L{suffix}"), f"level {suffix} problems")
