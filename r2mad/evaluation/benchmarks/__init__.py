"""The seed papers' own benchmarks by name (GSM8K, MATH, AIME, GPQA-Diamond, MMLU, Du et al.'s arithmetic
and biographies): one short module per family, each a loader on the hub's schema with the paper's split
and size, registered here once. `load` returns the same `Split` as datasets.load_split."""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from r2mad.evaluation.datasets import DataError, Split
from r2mad.evaluation.benchmarks.hub import cached_snapshot, columns_of, matching_files, read_table
from r2mad.types import Task

# rows, seed, where they came from -> tasks
Converter = Callable[[list[dict], int, str], list[Task]]


def answer_kind(name: str) -> str:
    """The answer kind a benchmark's tasks carry, by its name in the kinds registry (issue 40 part 1:
    math, mcq, integer, yesno, short, open). The one place to switch to that registry: until it lands,
    Task.kind holds the name itself."""
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


def _registry() -> dict[str, Benchmark]:
    from r2mad.evaluation.benchmarks import (
        aime, arithmetic, biographies, competition_math, gpqa, gsm8k, mmlu)
    found = [*gsm8k.BENCHMARKS, *competition_math.BENCHMARKS, *aime.BENCHMARKS, *gpqa.BENCHMARKS,
             *mmlu.BENCHMARKS, *arithmetic.BENCHMARKS, *biographies.BENCHMARKS]
    return {b.name: b for b in found}


_VARIANTS: dict[str, Callable[[str], Benchmark | None]] = {}  # name prefix -> maker of a named subset


def variant(prefix: str):
    """Register a maker of named subsets (`mmlu-<subject>`, `math-level-<n>`)."""
    def register(maker: Callable[[str], Benchmark | None]):
        _VARIANTS[prefix] = maker
        return maker
    return register


def names() -> tuple[str, ...]:
    return tuple(_registry())


def lookup(name: str) -> Benchmark | None:
    """The benchmark called `name` (a registered one or a named subset), or None."""
    key = name.strip().lower()
    found = _registry().get(key)
    if found is None:
        for prefix, maker in _VARIANTS.items():
            if key.startswith(prefix) and (found := maker(key[len(prefix):])):
                break
    return found


def load(name: str, split: str, *, data_file: str | Path | None = None, seed: int = 0,
         limit: int | None = None) -> Split:
    """Tasks of one split of a paper benchmark: "test" (the paper's), "train" where the hub has one, or "all".
    `data_file`: a file holding the split's rows, or a folder laid out like the hub repo; else the cache."""
    bench = lookup(name)
    if bench is None:
        raise ValueError(f"Unknown benchmark {name!r}; choose one of: {', '.join(names())}.")
    if split not in ("train", "test", "all"):
        raise ValueError(f"Unknown split {split!r}; choose one of: train, test, all.")
    if bench.generate is not None:
        tasks = bench.to_tasks(bench.generate(seed), seed, f"{bench.title} (seed {seed})")
        tasks = tasks if split != "train" else []
    else:
        one_file = data_file is not None and Path(data_file).is_file()  # it holds the split asked for
        wanted = list(bench.files) if split == "all" and not one_file else [split if split in bench.files else "test"]
        if split not in bench.files and split != "all":
            raise DataError(f"{bench.title} has no {split} split on the hub; use --split "
                            f"{' or '.join(bench.files)}.")
        tasks = []
        for part in wanted:
            path, rows = _rows(bench, part, data_file)
            _check_columns(bench, rows, path)
            tasks += bench.to_tasks(rows, seed, str(path))
    ids = tuple(t.id for t in tasks)
    return Split(split, bench.name, tuple(tasks), seed, ids).head(limit)


def _rows(bench: Benchmark, split: str, data_file: str | Path | None) -> tuple[Path, list[dict]]:
    if data_file is not None and Path(data_file).is_file():
        return Path(data_file), bench.read(Path(data_file))
    if data_file is not None and not Path(data_file).exists():
        raise DataError(f"Data path {data_file} does not exist; pass a data file or the dataset's folder.")
    if data_file is None and not bench.hub_repo:
        raise DataError(f"{bench.title} is not on the hub; {bench.note}.")
    root = Path(data_file) if data_file is not None else cached_snapshot(bench.hub_repo)
    files = matching_files(root, bench.files[split])
    if not files:
        raise DataError(f"{root} has no {bench.title} {split} file (looked for {', '.join(bench.files[split])}); "
                        f"pass the folder of {bench.hub_repo} as the hub lays it out, or one file with --data.")
    return root, [row for path in files for row in bench.read(path)]


def _check_columns(bench: Benchmark, rows: list[dict], path: Path) -> None:
    held = columns_of(rows)
    missing = [c for c in bench.columns if c not in held]
    if missing:
        raise DataError(f"{path} lacks the column {missing[0]!r}; {bench.title} rows need {', '.join(bench.columns)} "
                        f"and this file has {', '.join(held) or 'no columns'}.")


def with_filter(bench: Benchmark, name: str, keep: Callable[[Task], bool], what: str) -> Benchmark:
    """A named subset of a benchmark (its tasks that `keep` accepts); no rows left is an error saying so."""
    def convert(rows: list[dict], seed: int, origin: str) -> list[Task]:
        tasks = [t for t in bench.to_tasks(rows, seed, origin) if keep(t)]
        if not tasks:
            raise DataError(f"{origin} has no {what}; check the name after '{bench.name}-'.")
        return tasks
    return dataclasses.replace(bench, name=name, to_tasks=convert, sizes={})
