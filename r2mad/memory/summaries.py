"""R²-MAD's round summaries h, remembered per (backbone, model, summary prompt). The prompt holds only
the abstract stance pattern, so repeated patterns need no model call; the app and the CLI hand R²-MAD a
cache kept in a file of the data dir, so that later processes start warm. Prefetching them: memory/prefetch.py."""
from __future__ import annotations

import json
import threading
from pathlib import Path

from r2mad.safewrite import write_atomic


class SummaryCache:
    """In memory, and in a JSON file when one is named (read at once, rewritten on every put)."""

    def __init__(self, file: Path | str | None = None):
        self._file = None if file is None else Path(file)
        self._lock = threading.Lock()
        self._items: dict[tuple[str, str, str], str] = self._read()

    @property
    def file(self) -> Path | None:
        return self._file

    def get(self, key: tuple[str, str, str]) -> str | None:
        return self._items.get(key)

    def put(self, key: tuple[str, str, str], summary: str) -> None:
        with self._lock:
            self._items[key] = summary
            if self._file is None:
                return
            merged = {**self._read(), **self._items}  # another process may have added some meanwhile
            try:
                write_atomic(self._file, json.dumps([[*k, v] for k, v in merged.items()], ensure_ascii=False))
            except OSError:  # a read-only or full data dir: the cache stays in memory, the debate goes on
                self._file = None

    def clear(self) -> None:
        """Forget what is in memory (the file stays)."""
        with self._lock:
            self._items.clear()

    def _read(self) -> dict[tuple[str, str, str], str]:
        try:
            rows = json.loads(self._file.read_text(encoding="utf-8")) if self._file else []
        except (OSError, ValueError):
            return {}  # missing or damaged: a cache, rebuilt as summaries come
        return {tuple(r[:3]): r[3] for r in rows if isinstance(r, list) and len(r) == 4
                and all(isinstance(x, str) for x in r)}



def summary_key(backend, messages) -> tuple[str, str, str]:
    """The cache's key of a summary prompt: (backend, model, prompt)."""
    return backend.name, backend.model or "", messages[-1].content  # the model too: every custom endpoint is "custom"
