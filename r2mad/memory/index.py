"""A bank's derived Qdrant index: where it lives, whether it is current (a marker keyed by the content
hash of cases.jsonl), the lock that keeps a second opener out, and building it from the cases. It
never opens a folder it did not make (qdrant-client's local storage is pickled). Not thread-safe:
the bank serialises every call."""
from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from r2mad.backends.embedder import Embedder
from r2mad.memory.files import BankError, now, write_atomic
from r2mad.memory.retrieval import render_state
from r2mad.memory.stores import IndexStoreError, open_local, open_server
from r2mad.safewrite import is_disk_full
from r2mad.types import Case

log = logging.getLogger(__name__)
MARKER = "r2mad-index.json"
Progress = Callable[[int, int], None]  # (cases embedded so far, cases in all)
SHARD_ROOM = 1 << 20  # bytes a fresh shard may need before its first vector (measured: ~190 KB)
_POINT_NAMESPACE = uuid.UUID("5b0d3f52-8a4e-4c1e-9d0a-2f6c1e7a9b10")


def point_id(case_id: str) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, case_id))


def state_text(case: Case) -> str:
    return render_state(case.question, case.previous_response, case.summary, case.consensus)


class BankIndex:
    """The index of one bank folder, embedded on disk under `index_root` or on a Qdrant server (`url`)."""

    def __init__(self, bank_path: Path, embedder: Embedder, *, index_root: Path, url: str | None,
                 api_key: str | None, store_kind: str):
        self.bank_path, self.embedder = bank_path, embedder
        self.index_root, self.url, self.store_kind = index_root, url, store_kind
        self.folder: Path | None = None  # the local index folder, once open
        self.store = None
        self.notices: list[str] = []  # what a debate reading the bank should say (shown to visitors)
        self.log: list[str] = []  # what only the operator reads (logged)
        self._api_key = api_key
        self._lock_file = None

    def open(self, cases: Sequence[Case], cases_sha: str, progress: Progress | None = None) -> None:
        """Open the index that matches these cases, or (re)build it from them."""
        name = self.bank_path.name
        if self.url:
            prefix = f"r2mad-{re.sub(r'[^A-Za-z0-9_-]', '_', name)}-{self._fingerprint(cases_sha)[:12]}-"
            self.store = open_server(self.url, self._api_key, prefix, self.embedder.dim)
            if self.store.count() != len(cases):
                self.store.drop()
                self.build(cases, progress)
            return
        self.index_root.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        self._hold_lock(self.index_root / f"{stem}.lock")
        target = self.index_root / f"{stem}-{self._fingerprint(cases_sha)[:16]}"
        ours = {d: m for d in self.index_root.glob(f"{stem}-*") if (m := self._marker(d)) is not None}
        ready = next((d for d, m in ours.items() if m.get("complete") and m.get("cases_sha256") == cases_sha
                      and m.get("embedder") == self.embedder.id and m.get("store") == self.store_kind), None)
        for folder in ours:  # stale indexes we built for this bank: other content or embedder
            if folder != ready:
                shutil.rmtree(folder)
        if target.exists() and target != ready:
            raise BankError(f"{target} exists but was not built by r2mad for {self.bank_path}; remove it or "
                            "choose another index folder.")
        if ready is not None and ready != target:
            ready.rename(target)  # an index we kept current through add(): its name follows the content
        self.folder = target
        target.mkdir(exist_ok=True)
        if ready is None:
            self.mark(cases_sha, complete=False)
        try:
            self.store = open_local(self.store_kind, target, self.embedder.dim)
        except IndexStoreError as exc:
            if ready is None:
                raise
            # our own derived index is damaged and we hold its lock: rebuild it from cases.jsonl
            shutil.rmtree(target)
            target.mkdir()
            self.mark(cases_sha, complete=False)
            self.store = open_local(self.store_kind, target, self.embedder.dim)
            self.log.append(f"The index of {self.bank_path} could not be read ({exc}); rebuilt it from "
                            "cases.jsonl.")  # the operator's news: no case was lost, nothing for a visitor
            log.warning(self.log[-1])
            ready = None
        if ready is None:
            started = time.perf_counter()
            try:
                self.build(cases, progress)
            except Exception as exc:  # nothing half-built stays: the next opening starts afresh
                self.store.close()
                self.store = None
                shutil.rmtree(target, ignore_errors=True)
                if not is_disk_full(exc):
                    raise
                raise BankError(f"The index of {self.bank_path} could not be built in {target} because the disk "
                                "is full, and the partial index was removed; free some space there and open the "
                                "bank again.") from None
            if cases:  # the operator's news, not a visitor's: in the log, never in a debate's notices
                self.log.append(f"Built the index of {self.bank_path} ({len(cases)} cases) in "
                                f"{time.perf_counter() - started:.1f} s.")
                log.info(self.log[-1])
        self.mark(cases_sha, complete=True)

    def mark(self, cases_sha: str, complete: bool) -> None:
        """Record which content the local index holds (and whether it holds all of it)."""
        if self.folder is None:
            return
        write_atomic(self.folder / MARKER, json.dumps({
            "made_by": "r2mad", "bank": str(self.bank_path.resolve()), "fingerprint": self._fingerprint(cases_sha),
            "cases_sha256": cases_sha, "embedder": self.embedder.id, "store": self.store_kind,
            "complete": complete, "updated_at": now()}, indent=1))

    def build(self, cases: Sequence[Case], progress: Progress | None = None) -> None:
        for start in range(0, len(cases), 64):
            batch = cases[start:start + 64]
            self.upsert(batch, self.embed(batch))
            if progress is not None:
                progress(start + len(batch), len(cases))
        self.store.flush()

    def embed(self, cases: Iterable[Case]) -> dict[str, np.ndarray]:
        """Vectors of every state text and response in `cases`, each distinct text encoded once."""
        texts = list(dict.fromkeys(t for c in cases for t in (state_text(c), *c.responses)))
        return dict(zip(texts, self.embedder.encode(texts)))

    def upsert(self, cases: Sequence[Case], vectors: dict[str, np.ndarray]) -> None:
        if self.folder is not None:
            self._check_room(cases)
        rows: dict[int, list] = {}
        for c in cases:
            payload = {"case_id": c.id, "question_id": c.question_id, "agent": c.agent, "round": c.round,
                       "reward": float(c.reward)}
            rows.setdefault(c.agent, []).append((point_id(c.id), vectors[state_text(c)],
                                                 np.stack([vectors[r] for r in c.responses]), payload))
        for agent, agent_rows in rows.items():
            self.store.upsert(agent, agent_rows)

    def _check_room(self, cases: Sequence[Case]) -> None:
        """Qdrant Edge writes through memory-mapped files, so a full disk kills the process (SIGBUS) instead
        of raising: refuse, in a sentence, a write the disk has no generous room for."""
        agents = {c.agent for c in cases}
        need = len(agents) * SHARD_ROOM + sum(1 + len(c.responses) for c in cases) * self.embedder.dim * 8 \
            + len(cases) * 2048
        free = shutil.disk_usage(self.folder).free
        if free < need:
            raise BankError(f"The index of {self.bank_path} needs about {need / 1e6:.1f} MB in {self.folder} but "
                            f"its disk has {free / 1e6:.1f} MB free; free some space there and open the bank "
                            "again (cases.jsonl keeps every case and the index is rebuilt from it).")

    def close(self) -> None:
        if self.store is not None:
            self.store.flush()
            self.store.close()
            self.store = None
        if self._lock_file is not None:
            self._lock_file.close()  # releases the flock
            self._lock_file = None

    def _fingerprint(self, cases_sha: str) -> str:
        parts = (self.bank_path.name, str(self.bank_path.resolve()), cases_sha, self.embedder.id, self.store_kind)
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _marker(self, folder: Path) -> dict | None:
        try:
            marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return marker if isinstance(marker, dict) and marker.get("bank") == str(self.bank_path.resolve()) else None

    def _hold_lock(self, file: Path) -> None:
        """One open bank per embedded index: a second opener would rename or delete files in use."""
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return
        handle = open(file, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise BankError(f"Bank {self.bank_path} is already open (in this or another process); share that "
                            "MemoryBank or close it first, or serve the bank from a Qdrant server with url=.")
        self._lock_file = handle
