"""Du et al.'s arithmetic: a+b*c+d-e*f with six numbers from 0 to 29, drawn from a seed as the authors'
generator draws them (numpy's legacy RandomState, six draws per question); gold is the value. 100
questions, all of them test."""
from __future__ import annotations

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind
from r2mad.types import Task

QUESTIONS = 100


def generate(seed: int, n: int = QUESTIONS) -> list[dict]:
    """The questions' numbers and value, in order; the same seed gives the same questions."""
    import numpy as np
    rng = np.random.RandomState(seed)
    rows = []
    for index in range(n):
        a, b, c, d, e, f = (int(x) for x in rng.randint(0, 30, size=6))
        rows.append({"index": index, "numbers": [a, b, c, d, e, f], "answer": a + b * c + d - e * f})
    return rows


def expression(numbers: list[int]) -> str:
    a, b, c, d, e, f = numbers
    return f"{a}+{b}*{c}+{d}-{e}*{f}"


def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
    return [Task(answer_kind("math"), f"What is the value of {expression(row['numbers'])}? Give the final value "
                 "at the end of your answer.", gold=str(row["answer"]), id=f"arith-{seed}-{row['index']}",
                 source="arithmetic") for row in rows]


BENCHMARKS = (Benchmark("arithmetic", "Arithmetic", "math", {"test": QUESTIONS}, to_tasks, generate=generate,
                        papers="Du et al. 2024"),)
