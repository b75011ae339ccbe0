"""The seed papers' own benchmarks by name (GSM8K, MATH, AIME, GPQA-Diamond, MMLU, Du et al.'s arithmetic
and biographies): one short module per family, each a loader on the hub's schema with the paper's split
and size, registered here once. `load` returns the same `Split` as datasets.load_split."""
from __future__ import annotations

from pathlib import Path

from r2mad.evaluation.benchmarks import aime, arithmetic, biographies, competition_math, gpqa, gsm8k, mmlu
from r2mad.evaluation.benchmarks.base import VARIANTS, Benchmark
from r2mad.evaluation.benchmarks.hub import cached_snapshot, columns_of, matching_files
from r2mad.evaluation.datasets import DataError, Split

REGISTRY: dict[str, Benchmark] = {b.name: b for family in (gsm8k, competition_math, aime, gpqa, mmlu, arithmetic,
                                                            biographies) for b in family.BENCHMARKS}


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def lookup(name: str) -> Benchmark | None:
    """The benchmark called `name` (a registered one or a named subset), or None."""
    key = name.strip().lower()
    found = REGISTRY.get(key)
    if found is None:
        for prefix, maker in VARIANTS.items():
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


