"""MMLU (cais/mmlu, config all): 57 subjects, four choices, the answer an index 0-3. Test 14,042 (Du et al.
take 100 of them), dev 285 as train; `mmlu-<subject>` keeps one subject (cais/mmlu's subject names). Read from
the hub's parquet, Hendrycks' original per-subject CSVs (headerless) or a CSV with option columns."""
from __future__ import annotations

import re
from pathlib import Path

from r2mad.evaluation.benchmarks.base import Benchmark, answer_kind, stable_id, variant, with_filter
from r2mad.evaluation.benchmarks.hub import read_table
from r2mad.evaluation.datasets import DataError
from r2mad.types import Task

LETTERS = "ABCD"
OPTION_COLUMNS = (("choice0", "choice1", "choice2", "choice3"), tuple(LETTERS))  # a CSV with a header


def subject_of(path: Path) -> str:
    """Hendrycks' file name without its split: data/test/abstract_algebra_test.csv -> abstract_algebra."""
    return re.sub(r"_(?:test|dev|val)$", "", path.stem)


def read_mmlu(path: Path) -> list[dict]:
    """A file's rows as the hub's {question, subject, choices, answer index}, whichever published layout it
    has: the hub's rows as they are; Hendrycks' CSV (no header, six cells: question, A, B, C, D, answer letter)
    or a CSV with a header and option columns (choice0-3 or A-D), the subject taken from the file name where
    the file has no subject column."""
    if path.suffix.lower() in (".csv", ".tsv"):
        cells = read_table(path, header=False)
        if cells and is_hendrycks(list(cells[0].values())):
            return [hub_row(dict(zip(("question", *LETTERS, "answer"), row.values())), subject_of(path))
                    for row in cells]
    return [hub_row(row, subject_of(path)) for row in read_table(path)]


def is_hendrycks(first: list[str]) -> bool:
    """Whether a CSV's first row is Hendrycks' data (six cells, the last an answer letter), not a header."""
    return len(first) == 6 and first[5].strip().upper() in tuple(LETTERS)


def hub_row(row: dict, subject: str) -> dict:
    """A row with option columns as the hub's row (choices a list, the answer its index); others as they are."""
    names = next((n for n in OPTION_COLUMNS if all(c in row for c in n)), None)
    if "choices" in row or "question" not in row or names is None:
        return row
    return {"question": row.get("question"), "subject": row.get("subject") or subject,
            "choices": [row[c] for c in names], "answer": answer_index(row.get("answer"))}


def answer_index(answer):
    """An answer letter A-D or an index as the index into the choices; anything else as it is (refused later)."""
    text = str(answer).strip().upper()
    return LETTERS.index(text) if len(text) == 1 and text in LETTERS else int(text) if text.isdigit() else answer


def to_tasks(rows: list[dict], seed: int, origin: str) -> list[Task]:
    out = []
    for index, row in enumerate(rows, 1):
        choices = list(row["choices"]) if not isinstance(row["choices"], str) else None
        answer = answer_index(row["answer"])
        if choices is None or not isinstance(answer, int) or not 0 <= answer < len(choices):
            raise DataError(f"{origin} row {index} needs a list of choices and an answer (an index into them or a "
                            "letter); pass cais/mmlu's parquet, Hendrycks' CSVs or a CSV with the columns question, "
                            "A, B, C, D, answer, unchanged.")
        options = tuple((chr(ord("A") + i), str(c)) for i, c in enumerate(choices))
        subject = str(row["subject"])
        key = "\x00".join([subject, str(row["question"]), *map(str, choices)])
        out.append(Task(answer_kind("mcq"), str(row["question"]), options, chr(ord("A") + answer),
                        stable_id("mmlu", key), f"mmlu-{subject}"))
    return out


MMLU = Benchmark("mmlu", "MMLU", "mcq", {"test": 14042, "train": 285}, to_tasks, "cais/mmlu",
                 {"test": ("all/test-*.parquet", "**/*_test.csv"), "train": ("all/dev-*.parquet", "**/*_dev.csv")},
                 ("question", "subject", "choices", "answer"), papers="Du et al. 2024 (100 test questions)",
                 read=read_mmlu)
BENCHMARKS = (MMLU,)


@variant("mmlu-")
def by_subject(subject: str) -> Benchmark | None:
    if not subject or subject.startswith("pro"):  # mmlu-pro-* is MMLU-Pro (datasets.py)
        return None
    return with_filter(MMLU, f"mmlu-{subject}", lambda t: t.source == f"mmlu-{subject}",
                       f"questions of the subject {subject!r}")
