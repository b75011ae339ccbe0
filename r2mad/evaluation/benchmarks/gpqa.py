"""GPQA-Diamond (Idavidrein/gpqa, gated: a token to download): 198 questions, each with its correct answer
and three incorrect ones, shuffled into options A-D with a seed per question, as is usual (TrueMAD)."""
from __future__ import annotations

import random

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind, stable_id
from r2mad.evaluation.datasets import DataError
from r2mad.types import Task

COLUMNS = ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")


def shuffled_options(row: dict, seed: int) -> tuple[tuple[tuple[str, str], ...], str]:
    """(options A-D, gold letter): the four answers in an order drawn from (seed, question)."""
    answers = [str(row[c]).strip() for c in COLUMNS[1:]]
    order = list(range(4))
    random.Random(f"{seed}\x00{row['Question']}").shuffle(order)
    options = tuple((chr(ord("A") + i), answers[j]) for i, j in enumerate(order))
    return options, chr(ord("A") + order.index(0))


def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
    out = []
    for index, row in enumerate(rows, 1):
        if any(not str(row.get(c) or "").strip() for c in COLUMNS):
            raise DataError(f"{origin} row {index} has an empty question or answer; pass gpqa_diamond.csv unchanged.")
        options, gold = shuffled_options(row, seed)
        qid = str(row.get("Record ID") or "") or stable_id("q", row["Question"])
        out.append(Task(answer_kind("mcq"), str(row["Question"]).strip(), options, gold, f"gpqa-{qid}", "gpqa-diamond"))
    return out


BENCHMARKS = (Benchmark("gpqa-diamond", "GPQA-Diamond", "mcq", {"test": 198}, to_tasks, "Idavidrein/gpqa",
                        {"test": ("gpqa_diamond.csv",)}, COLUMNS, papers="TrueMAD", token=True,
                        note="gated on the hub: accept its terms and download with a token"),)
