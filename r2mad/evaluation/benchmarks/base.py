"""What a paper benchmark is (`Benchmark`), the answer kind its tasks carry, stable ids, named subsets."""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from r2mad.evaluation.benchmarks.hub import read_table
from r2mad.evaluation.datasets import DataError
from r2mad.grading.kinds import KIND_NAMES
from r2mad.types import Task

# rows, seed, where they came from -> tasks
Converter = Callable[[list[dict], int, str], list[Task]]




def answer_kind(name: str) -> str:
    """The answer kind a benchmark's (or a researcher's own data's) tasks carry: a name of the kinds registry."""
    if name not in KIND_NAMES:
        raise ValueError(f"Unknown answer kind {name!r}; choose one of: {', '.join(KIND_NAMES)}.")
    return name


def stable_id(prefix: str, text: str) -> str:
    """An id that follows the question's text, not its row number (files may be cut or reordered)."""
    return f"{prefix}-{hashlib.sha1(str(text).encode()).hexdigest()[:10]}"


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str  # as the papers' tables head its column
    kind: str  # answer kind name (answer_kind)
    sizes: Mapping[str, int]  # the paper's split -> its number of questions
    to_tasks: Converter
    hub_repo: str = ""
    files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # split -> glob patterns in the repo
    columns: tuple[str, ...] = ()  # every row needs these
    generate: Callable[[int], list[dict]] | None = None  # rows made from a seed (Du's arithmetic)
    papers: str = ""  # whose tables use it
    token: bool = False  # the hub repo is gated: downloading it needs a token
    note: str = ""
    read: Callable[[Path], list[dict]] = read_table  # a file -> rows (biographies: one JSON object)


VARIANTS: dict[str, Callable[[str], Benchmark | None]] = {}  # name prefix -> maker of a named subset


def variant(prefix: str):
    """Register a maker of named subsets (`mmlu-<subject>`, `math-level-<n>`)."""
    def register(maker: Callable[[str], Benchmark | None]):
        VARIANTS[prefix] = maker
        return maker
    return register


def with_filter(bench: Benchmark, name: str, keep: Callable[[Task], bool], what: str) -> Benchmark:
    """A named subset of a benchmark (its tasks that `keep` accepts); no rows left is an error saying so."""
    def convert(rows: list[dict], seed: int, origin: str) -> list[Task]:
        tasks = [t for t in bench.to_tasks(rows, seed, origin) if keep(t)]
        if not tasks:
            raise DataError(f"{origin} has no {what}; check the name after '{bench.name}-'.")
        return tasks
    return dataclasses.replace(bench, name=name, to_tasks=convert, sizes={})
