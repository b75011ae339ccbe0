"""The run store's SQLite file: WAL mode, one connection per thread, transactions that wait a bounded time
for another program's lock and raise every fault as a one-sentence StoreError (faults.py), the schema's
migrations (records.py), and a damaged file moved aside. What is stored is the RunStore's (store.py)."""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Callable, Iterator

from r2mad.runs.faults import StoreFailed, is_locked, store_fault
from r2mad.runs.records import MIGRATIONS

QUICK_WAIT_S = 0.25  # a save in the middle of a debate waits no longer for a lock: the next round retries


class StoreFile:
    """One SQLite file shared by threads and processes. `notices` collects one sentence per fault met;
    `on_wait(text)` hears it when a write must wait for another program's lock; `after_write` runs after each
    committed write while `behind` (what a fault put off is caught up there)."""

    def __init__(self, path: str | Path, *, lock_wait_s: float = 30.0, on_wait: Callable[[str], None] | None = None):
        self.path = Path(path)
        self.lock_wait_s, self.on_wait = lock_wait_s, on_wait
        self.notices: list[str] = []
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._behind = False
        try:
            self._open()
        except StoreFailed as exc:
            if not exc.damaged:
                raise
            self._move_aside(exc.detail)
            self._open()

    def after_write(self) -> None:
        """Called after a committed write while `_behind` is set."""

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._conn()
            conn.execute("PRAGMA journal_mode = WAL")
            current = conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        except (sqlite3.Error, OSError) as exc:
            self._raise_fault(exc, self.lock_wait_s)
        if not current:
            self._migrate()

    def _raise_fault(self, exc: BaseException, waited_s: float) -> None:
        fault = store_fault(exc, self.path, waited_s)
        if fault is None:
            raise exc
        raise fault from None

    def _move_aside(self, detail: str) -> None:
        self.close()
        aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{self.path}{suffix}").exists():
                os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
        self.notices.append(f"The run store {self.path} was damaged ({detail}); it was moved to {aside.name} "
                            "and a fresh store started.")

    # --- connections and transactions ---------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self.lock_wait_s, isolation_level=None,
                                   check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.lock_wait_s * 1000)}")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    @contextmanager
    def transaction(self, write: bool = True, *, wait: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction; a write waits up to lock_wait_s for another program's lock (QUICK_WAIT_S
        when not `wait`). A lock, a full disk or another disk fault is raised as a StoreError."""
        wait_s = self.lock_wait_s if wait else min(QUICK_WAIT_S, self.lock_wait_s)
        try:
            conn = self._conn()
            if write:
                self._begin(conn, wait_s)
            else:
                conn.execute("BEGIN")
        except (sqlite3.Error, OSError) as exc:
            self._raise_fault(exc, wait_s)
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:  # SQLite may have rolled back itself (e.g. on a full disk)
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, (sqlite3.Error, OSError)):
                self._raise_fault(exc, wait_s)
            raise
        if write and self._behind:
            self.after_write()

    def _begin(self, conn: sqlite3.Connection, wait_s: float) -> None:
        """BEGIN IMMEDIATE; a lock held longer than a moment is said once through on_wait."""
        first = min(wait_s, QUICK_WAIT_S)
        try:
            self._begin_within(conn, first)
            return
        except sqlite3.OperationalError as exc:
            if not is_locked(exc) or wait_s <= first:
                raise
        if self.on_wait:
            self.on_wait(f"Waiting up to {wait_s:.0f} s for another program that is writing to the run store "
                         f"{self.path}.")
        self._begin_within(conn, wait_s - first)

    def _begin_within(self, conn: sqlite3.Connection, seconds: float) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self.lock_wait_s * 1000)}")

    def _migrate(self) -> None:
        with self.transaction() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise RuntimeError(f"{self.path} has schema version {version}, newer than this "
                                   f"r2mad knows ({len(MIGRATIONS)}); upgrade r2mad to open it.")
            for index in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[index]:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")

    def close(self) -> None:
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
        self._local = threading.local()

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
