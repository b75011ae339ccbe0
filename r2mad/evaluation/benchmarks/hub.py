"""Where a benchmark's rows come from: the files of a hub dataset as they sit in the local Hugging Face
cache (or a folder laid out like the hub repo), read as CSV, JSON, JSON lines or Parquet. Nothing is
downloaded here: a dataset missing from the cache is a one-sentence error naming the download command."""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Sequence

from r2mad.evaluation.datasets import DataError, read_rows, utf8_text

TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".json", ".parquet")


def cached_snapshot(repo: str) -> Path:
    """The folder of `repo`'s newest snapshot in the local hub cache (HF_HUB_CACHE / HF_HOME honoured)."""
    from huggingface_hub import snapshot_download
    try:
        return Path(snapshot_download(repo, repo_type="dataset", local_files_only=True))
    except Exception:  # not cached (LocalEntryNotFoundError), or a cache without that revision
        raise DataError(f"{repo} is not in the local Hugging Face cache and nothing is downloaded here (offline); "
                        f"run `hf download {repo} --repo-type dataset` where the hub is reachable, or pass --data "
                        "with a local copy.") from None


def matching_files(root: Path, patterns: Sequence[str]) -> list[Path]:
    """Files under `root` matching any glob pattern, sorted, each once."""
    found = {p for pattern in patterns for p in root.glob(pattern) if p.is_file()}
    return sorted(found)


def read_table(path: str | Path, *, header: bool = True) -> list[dict]:
    """Rows of a CSV/TSV, JSON, JSON lines or Parquet file, as plain dicts. A CSV/TSV's first row names its
    columns; with header=False every row is data and the columns are named by position: "0", "1", …"""
    path = Path(path)
    if path.suffix.lower() not in (".csv", ".tsv"):
        return read_rows(path)
    if not path.is_file():
        raise DataError(f"Data file {path} does not exist; pass the path to a csv, jsonl, json or parquet file.")
    lines = io.StringIO(utf8_text(path), newline="")
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    if header:
        return [dict(row) for row in csv.DictReader(lines, delimiter=delimiter)]
    return [{str(i): cell for i, cell in enumerate(row)} for row in csv.reader(lines, delimiter=delimiter) if row]


def columns_of(rows: list[dict]) -> list[str]:
    """Every column name the rows hold, in first-seen order."""
    return list(dict.fromkeys(name for row in rows for name in row))
