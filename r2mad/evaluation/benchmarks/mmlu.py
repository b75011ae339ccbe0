"""MMLU (cais/mmlu, config all): 57 subjects, four choices, the answer an index 0-3. Test 14,042 (Du et al.
take 100 of them), dev 285 as train; `mmlu-<subject>` keeps one subject (cais/mmlu's subject names)."""
from __future__ import annotations

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind, stable_id, variant, with_filter
from r2mad.evaluation.datasets import DataError
from r2mad.types import Task


def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
    out = []
    for index, row in enumerate(rows, 1):
        choices = list(row["choices"]) if not isinstance(row["choices"], str) else None
        answer = row["answer"]
        if isinstance(answer, str) and answer.strip().isdigit():
            answer = int(answer)
        if choices is None or not isinstance(answer, int) or not 0 <= answer < len(choices):
            raise DataError(f"{origin} row {index} needs a list of choices and an answer index into it; pass "
                            "the cais/mmlu parquet files unchanged.")
        options = tuple((chr(ord("A") + i), str(c)) for i, c in enumerate(choices))
        subject = str(row["subject"])
        key = "\x00".join([subject, str(row["question"]), *map(str, choices)])
        out.append(Task(answer_kind("mcq"), str(row["question"]), options, chr(ord("A") + answer),
                        stable_id("mmlu", key), f"mmlu-{subject}"))
    return out


MMLU = Benchmark("mmlu", "MMLU", "mcq", {"test": 14042, "train": 285}, to_tasks, "cais/mmlu",
                 {"test": ("all/test-*.parquet",), "train": ("all/dev-*.parquet",)},
                 ("question", "subject", "choices", "answer"), papers="Du et al. 2024 (100 test questions)")
BENCHMARKS = (MMLU,)


@variant("mmlu-")
def by_subject(subject: str) -> Benchmark | None:
    if not subject or subject.startswith("pro"):  # mmlu-pro-* is MMLU-Pro (datasets.py)
        return None
    return with_filter(MMLU, f"mmlu-{subject}", lambda t: t.source == f"mmlu-{subject}",
                       f"questions of the subject {subject!r}")
