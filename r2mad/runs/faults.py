"""What the run store says and keeps when SQLite or the disk fails: its one-sentence errors, and the recovery
files (one JSONL export record per run) that hold a debate until the store can take it. Not for the schema
(records.py) or the connections (store.py)."""
from __future__ import annotations

import hashlib
import sqlite3
import tempfile
from pathlib import Path

from r2mad.runs.records import dumps
from r2mad.safewrite import WriteFailed, is_disk_full, write_atomic, write_failed

# SQLite's words for a file it cannot write, as opposed to a bug in a statement
_UNWRITABLE = ("disk I/O error", "readonly database", "unable to open", "read-only")


class StoreError(RuntimeError):
    """The run store cannot do what was asked now; str() is one sentence: the problem, then the fix."""

    def __init__(self, problem: str, fix: str, *, detail: str = "", damaged: bool = False):
        super().__init__(f"{problem}; {fix}.")
        self.problem, self.fix, self.detail, self.damaged = problem, fix, detail, damaged


class StoreBusy(StoreError):
    """The database stayed locked by another program longer than the store waits."""


class StoreFailed(StoreError):
    """The database or its disk failed: full, read-only, an I/O error, or a damaged file."""


def is_locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def store_fault(exc: BaseException, path: Path, waited_s: float) -> StoreError | None:
    """The store error an sqlite3 or OS error met on `path` is, or None when it is a bug (bad SQL, a
    constraint) that should surface as it is."""
    text = str(exc)
    if is_locked(exc):
        return StoreBusy(f"The run store {path} stayed locked by another program for {waited_s:.0f} s",
                         "close that program and try again", detail=text)
    if is_disk_full(exc):
        return StoreFailed(f"The run store {path} could not be written because the disk is full",
                           f"free some space in {path.parent} (or set R2MAD_DATA_DIR to a folder with room) "
                           "and try again", detail=text)
    damaged = type(exc) is sqlite3.DatabaseError  # "file is not a database", "malformed"
    if isinstance(exc, OSError) or damaged or (isinstance(exc, sqlite3.OperationalError)
                                               and any(word in text for word in _UNWRITABLE)):
        return StoreFailed(f"The run store {path} could not be used ({text})",
                           f"check that {path.parent} is writable and its disk healthy, then try again",
                           detail=text, damaged=damaged)
    return None


PERSISTENT = Path("/data")  # a Hugging Face Space's persistent volume, when the Space has one


def recovery_folders(store_path: Path) -> list[Path]:
    """Where a run the store could not take is kept: recovery/ beside the store, else (that disk full too) a
    folder of this store's on the persistent volume (/data, when there is one), else one in the system's temp
    dir, which a restart of the machine may lose (`lost_on_restart`)."""
    key = hashlib.sha256(str(store_path.resolve()).encode()).hexdigest()[:12]
    beside = store_path.parent / "recovery"
    on_volume = PERSISTENT.is_dir() and not beside.resolve().is_relative_to(PERSISTENT.resolve())
    volume = [PERSISTENT / "r2mad-recovery" / key] if on_volume else []
    return [beside, *volume, Path(tempfile.gettempdir()) / "r2mad-recovery" / key]


def lost_on_restart(path: Path) -> bool:
    """A recovery file in the system's temp dir: a Space (or a container) may lose it when it restarts."""
    return (Path(tempfile.gettempdir()) / "r2mad-recovery").resolve() in path.resolve().parents


def write_recovery(folders: list[Path], run_id: str, record: dict) -> Path:
    """Write one run's export record to the first folder that takes it; WriteFailed when none does."""
    failed: WriteFailed | None = None
    for folder in folders:
        path = folder / f"{run_id}.jsonl"
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)  # a shared temp dir: for this user only
            write_atomic(path, dumps(record) + "\n", fsync=True)
            return path
        except OSError as exc:
            failed = write_failed(path, exc)
    raise failed or WriteFailed(0, "No recovery folder was given.")


def recovery_files(folders: list[Path]) -> list[Path]:
    """The recovery files waiting in `folders` (.jsonl records; .json from older versions)."""
    return sorted(p for folder in folders if folder.is_dir()
                  for pattern in ("*.jsonl", "*.json") for p in folder.glob(pattern) if not p.name.startswith("."))
