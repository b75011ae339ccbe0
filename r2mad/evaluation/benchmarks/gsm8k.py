"""GSM8K (openai/gsm8k, config main): grade-school word problems; the number after '####' in the answer is
gold. Test 1,319 (MAD-M²; Du et al. take 100 of them), train 7,473."""
from __future__ import annotations

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind, stable_id
from r2mad.evaluation.datasets import DataError
from r2mad.types import Task


def gold_of(answer: str) -> str:
    """'... #### 1,234' -> '1234'."""
    _, sep, tail = str(answer).rpartition("####")
    value = tail.strip().replace(",", "").rstrip(".")
    return value if sep and value else ""


def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
    out = []
    for index, row in enumerate(rows):
        gold = gold_of(row["answer"])
        if not gold:
            raise DataError(f"{origin} row {index + 1} has no final answer after '####'; pass the GSM8K file "
                            "unchanged (openai/gsm8k, config main).")
        solution = str(row["answer"]).rpartition("####")[0].strip()
        out.append(Task(answer_kind("math"), str(row["question"]), gold=gold, id=stable_id("gsm8k", row["question"]),
                        source="gsm8k", solution=solution))
    return out


BENCHMARKS = (Benchmark("gsm8k", "GSM8K", "math", {"test": 1319, "train": 7473}, to_tasks, "openai/gsm8k",
                        {"test": ("main/test-*.parquet", "test*.jsonl"),
                         "train": ("main/train-*.parquet", "train*.jsonl")},
                        ("question", "answer"), papers="Du et al. 2024 (100 test questions); MAD-M² (test)"),)
