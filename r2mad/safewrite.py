"""Writing a file whole or not at all (a temp file renamed into place, removed on any failure), and the one
sentence a full disk or another write error becomes. Not for the run store's SQLite file (runs/faults.py)."""
from __future__ import annotations

import errno
import os
import threading
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Iterator

_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


class WriteFailed(OSError):
    """A file could not be written; str() is one sentence naming the file and the fix."""

    def __str__(self) -> str:  # not OSError's "[Errno 28] ...": the sentence alone
        return self.strerror


def is_disk_full(exc: BaseException) -> bool:
    """Whether an OS or SQLite error says the disk (or the user's quota) is full."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    return "disk is full" in str(exc) or "No space left" in str(exc)


def write_failed(path: str | Path, exc: BaseException) -> WriteFailed:
    """The one-sentence error for `exc` met while writing `path` (already one: returned as it is)."""
    if isinstance(exc, WriteFailed):
        return exc
    if is_disk_full(exc):
        return WriteFailed(errno.ENOSPC, f"{path} could not be written because the disk is full; free some space "
                                         f"in {Path(path).parent} (or write somewhere else) and try again.")
    why = getattr(exc, "strerror", None) or str(exc)
    return WriteFailed(getattr(exc, "errno", None) or errno.EIO,
                       f"{path} could not be written ({why}); check that {Path(path).parent} exists and is "
                       "writable, then try again.")


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", *, fsync: bool = False, **kwargs) -> Iterator[IO]:
    """A handle on a temp file beside `path` that becomes `path` when the block ends; on any error the
    temp file is removed, `path` keeps its old content, and an OSError is raised as WriteFailed."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise write_failed(path, exc) from None
        raise


def write_atomic(path: str | Path, text: str, *, fsync: bool = False) -> None:
    """Write `text` (UTF-8) to `path` whole or not at all."""
    with atomic_open(path, "w", encoding="utf-8", fsync=fsync) as handle:
        handle.write(text)
