"""Every task set by name, in one place: the R²-MAD paper's and the demo's (datasets.py) and the seed papers'
own benchmarks (benchmarks/). `load_split` is what eval, build-memory and the leakage check call."""
from __future__ import annotations

from pathlib import Path

from r2mad.evaluation import benchmarks, datasets
from r2mad.evaluation.datasets import DEFAULT_SPLIT_SEED, Split


def names() -> tuple[str, ...]:
    return (*datasets.DATASETS, *datasets.ALIASES, *benchmarks.names())


def listed() -> str:
    """Every task set as help and refusals name it: the R²-MAD paper's and the demo's (by their short name where
    one stands for them), then the seed papers' benchmarks."""
    short = {full: alias for alias, full in datasets.ALIASES.items()}
    own = ", ".join(short.get(name, name) for name in datasets.DATASETS)
    return f"{own}, or a seed paper's benchmark: {', '.join(benchmarks.names())}"


def load_split(dataset: str, split: str, *, data_file: str | Path | None = None, seed: int = DEFAULT_SPLIT_SEED,
               limit: int | None = None) -> Split:
    """One split of any task set by name (datasets.load_split's rules for its own; benchmarks.load's for the
    papers' benchmarks); an unknown name lists them all."""
    key = dataset.strip().lower()
    if datasets.ALIASES.get(key, key) not in datasets.DATASETS:
        if benchmarks.lookup(key) is None:
            raise ValueError(f"Unknown dataset {dataset!r}; choose one of: {', '.join(names())} (or a subset: "
                             "math-level-1 to math-level-5, mmlu-<subject>).")
        return benchmarks.load(key, split, data_file=data_file, seed=seed, limit=limit)
    return datasets.load_split(dataset, split, data_file=data_file, seed=seed, limit=limit)
