"""Run store: each debate's config (secrets scrubbed), transcript, outcome and human annotations in one
SQLite file (database.py; annotations.py, suggestions.py, links.py and queues.py hold the rest of its tables;
recovery.py keeps what a fault would lose). Schema, rows and scrubbing live in records.py, export/import in
io.py; every SQL statement on the store's tables lives in runs/. Not for scoring (evaluation/metrics.py) or
rendering (ui/)."""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Iterable

from r2mad.runs.annotations import Annotating
from r2mad.runs.database import StoreFile
from r2mad.runs.faults import (
    StoreBusy,
    StoreError,
    StoreFailed,
    recovery_folders,
)
from r2mad.runs.links import Linking
from r2mad.runs.queues import Queueing
from r2mad.runs.records import (
    BOOL_COLUMNS,
    STATUSES,
    SUMMARY_COLUMNS,
    Annotation,
    AnnotationEdit,
    RunRecord,
    RunSummary,
    derived_flags,
    dumps,
    load_taxonomy,
    scrub,
    where_clause,
)
from r2mad.runs.recovery import Recovering
from r2mad.runs.suggestions import Suggesting
from r2mad.text import quoted
from r2mad.types import Task, Transcript, from_dict, to_dict

__all__ = ["STATUSES", "Annotation", "AnnotationEdit", "RunRecord", "RunStore", "RunSummary", "StoreBusy",
           "StoreError", "StoreFailed", "load_taxonomy", "scrub"]


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows: cannot tell cheaply; rely on age
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunStore(StoreFile, Recovering, Annotating, Suggesting, Linking, Queueing):
    """SQLite run store shared by the app and the CLI. WAL mode and one transaction per write, so
    several threads and processes can write at once; one connection per thread.

    Faults lose nothing: a damaged file is moved aside and a fresh store started (`notices` says so);
    a debate whose saves meet a lock held too long or a full disk keeps its transcript and writes it to a
    recovery file (see faults.py), imported at the store's next successful write or opening. A store
    that cannot be written opens for reading, with a notice (start_run then raises StoreFailed). Every
    fault is raised as a one-sentence StoreError; `on_wait(text)` hears it when a write must wait for
    another program's lock."""

    def __init__(self, path: str | Path, *, secrets: Callable[[], Iterable[str]] | None = None,
                 taxonomy: dict[str, str] | str | Path | None = None, stale_after_s: float = 3600.0,
                 lock_wait_s: float = 30.0, on_wait: Callable[[str], None] | None = None):
        self.recovery_dirs = recovery_folders(Path(path))
        self._secrets = secrets or (lambda: ())
        self._taxonomy = taxonomy
        self.stale_after_s = stale_after_s
        self._started: dict[str, dict[str, Any]] = {}  # run id -> its start row, until its final save
        self._unsaved: dict[str, dict[str, Any]] = {}  # run id -> export record no disk took yet
        self._catching = threading.Lock()
        self._told_unwritable = False
        super().__init__(path, lock_wait_s=lock_wait_s, on_wait=on_wait)
        self._behind = True  # interrupted runs and recovery files may wait: see _catch_up
        try:
            with self.transaction(wait=False):  # its commit catches up (see _catch_up)
                pass
        except StoreBusy:
            pass  # another program is writing: we catch up at our first write
        except StoreFailed as exc:
            self._note_unwritable(exc)

    def after_write(self) -> None:
        self._catch_up()

    @property
    def taxonomy(self) -> dict[str, str]:
        if not isinstance(self._taxonomy, dict):
            self._taxonomy = load_taxonomy(*([self._taxonomy] if self._taxonomy else []))
        return self._taxonomy

    def scrub(self, value: Any, *, keys: bool = True) -> Any:
        return scrub(value, self._secrets(), keys=keys)

    def take_notices(self) -> list[str]:
        """The fault notices not reported yet (each is reported once)."""
        taken, self.notices[:] = list(self.notices), []
        return taken

    def scrub_transcript(self, t: Transcript) -> Transcript:
        """The transcript as it may be shown, printed or downloaded: no key, no token."""
        return Transcript.from_json(self.clean_transcript(to_dict(t), t.status))

    def clean_transcript(self, data: dict[str, Any], status: str) -> str:
        data = self.scrub(dict(data, status=status), keys=False)
        data["settings"] = self.scrub(data.get("settings") or {})
        return dumps(data)

    # --- runs ---------------------------------------------------------------------------------

    def start_run(self, *, method: str, backbone: str, bank: str | None, task: Task,
                  settings: dict[str, Any], seed: int | None, code_version: str,
                  source: str = "cli", owner: str | None = None) -> str:
        """Record a new run as "running" and return its id. `owner`: who may read it on a public
        Space (see serving/visitors.py); None for runs everyone with access to the store may read."""
        run_id, now = uuid.uuid4().hex, time.time()
        task_data = self.scrub(to_dict(task), keys=False)
        row = {"id": run_id, "created_at": now, "updated_at": now, "status": "running", "source": source,
               "method": method, "backbone": backbone, "bank": bank, "seed": seed, "code_version": code_version,
               "settings": self.scrub(settings), "task": task_data, "task_id": task_data["id"],
               "question": task_data["question"], "gold": task_data["gold"], "pid": os.getpid(),
               "hostname": socket.gethostname(), "owner": owner}
        with self.transaction() as conn:
            conn.execute(f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                         [dumps(v) if k in ("settings", "task") else v for k, v in row.items()])
        self._started[run_id] = row
        return run_id

    def _outcome(self, transcript: Transcript, status: str) -> dict[str, Any]:
        """The columns a (possibly partial) transcript sets."""
        shared, flip, failures = derived_flags(transcript)
        return {"transcript": self.clean_transcript(to_dict(transcript), status), "status": status,
                "status_note": None, "updated_at": time.time(), "final_answer": transcript.final.value,
                "correct": transcript.correct, "tokens": transcript.usage().tokens, "seconds": transcript.seconds,
                "rounds": len(transcript.finished().rounds), "shared_misconception": shared, "flip": flip,
                "parse_failures": failures, "pid": os.getpid(), "hostname": socket.gethostname()}

    def save_transcript(self, run_id: str, transcript: Transcript, status: str, *, wait: bool = True) -> None:
        """Store the (possibly partial) transcript and its outcome columns; call every round."""
        if status not in STATUSES:
            raise ValueError(f"Unknown run status {status!r}; use one of {', '.join(STATUSES)}.")
        values = self._outcome(transcript, status)
        with self.transaction(wait=wait) as conn:
            cur = conn.execute(f"UPDATE runs SET {', '.join(f'{c} = ?' for c in values)} WHERE id = ?",
                               [*values.values(), run_id])
            if cur.rowcount == 0:
                raise KeyError(f"No run {quoted(run_id)} in {self.path}; call start_run first.")

    def set_status(self, run_id: str, status: str, note: str | None = None, *, wait: bool = True) -> None:
        """Change a run's status without a new transcript (e.g. cancelled before round 0)."""
        if status not in STATUSES:
            raise ValueError(f"Unknown run status {status!r}; use one of {', '.join(STATUSES)}.")
        with self.transaction(wait=wait) as conn:
            self._set_status(conn, run_id, status, note)

    def _set_status(self, conn: sqlite3.Connection, run_id: str, status: str,
                    note: str | None) -> None:
        row = conn.execute("SELECT transcript FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"No run {quoted(run_id)} in {self.path}; check the id.")
        text = row["transcript"] and self.clean_transcript(json.loads(row["transcript"]), status)
        conn.execute("UPDATE runs SET status = ?, status_note = ?, updated_at = ?, transcript = ? "
                     "WHERE id = ?", (status, note and self.scrub(note), time.time(), text,
                                      run_id))

    def mark_interrupted(self, stale_after_s: float = 3600.0) -> int:
        """Mark "failed" the running runs whose process on this host is gone, or that saved nothing
        for `stale_after_s` seconds; return how many."""
        host, now, marked = socket.gethostname(), time.time(), 0
        with self.transaction() as conn:
            for row in conn.execute("SELECT id, pid, hostname, updated_at FROM runs "
                                    "WHERE status = 'running'").fetchall():
                if row["hostname"] == host and row["pid"] and not _pid_alive(row["pid"]):
                    note = f"interrupted: process {row['pid']} ended before the run finished"
                elif now - row["updated_at"] > stale_after_s:
                    note = f"interrupted: nothing saved for {now - row['updated_at']:.0f} s"
                else:
                    continue
                self._set_status(conn, row["id"], "failed", note)
                marked += 1
        return marked

    def full_id(self, run_id: str) -> str:
        """The id of the one run whose id starts with `run_id` (as short ids are shown); unchanged when
        none or several do."""
        if len(run_id) >= 32 or not run_id.isalnum():
            return run_id
        with self.transaction(write=False) as conn:
            rows = conn.execute("SELECT id FROM runs WHERE id LIKE ? LIMIT 2", (run_id + "%",)).fetchall()
        return rows[0]["id"] if len(rows) == 1 else run_id

    def find_run(self, *, source: str, method: str, task_id: str, backbone: str, seed: int | None) -> str | None:
        """The id of a run saved from `source` with this method, task, backbone and seed, if there is one."""
        with self.transaction(write=False) as conn:
            row = conn.execute("SELECT id FROM runs WHERE source = ? AND method = ? AND task_id = ? AND backbone = ? "
                               "AND seed IS ?", (source, method, task_id, backbone, seed)).fetchone()
        return row["id"] if row else None

    def get_run(self, run_id: str) -> RunRecord:
        """A run by its id, or by the short id the app and the CLI show when only one run has it."""
        run_id = self.full_id(run_id)
        with self.transaction(write=False) as conn:
            row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise KeyError(f"No run {quoted(run_id)} in {self.path}; check the id.")
            annotations = tuple(self.annotations_of(conn, run_id))
        data = {k: row[k] for k in row.keys()}
        for col in BOOL_COLUMNS:
            data[col] = None if data[col] is None else bool(data[col])
        data["settings"] = json.loads(data["settings"])
        data["task"] = from_dict(Task, json.loads(data["task"]))
        data["transcript"] = data["transcript"] and Transcript.from_json(data["transcript"])
        known = {f.name for f in fields(RunRecord)}  # columns a later migration adds are skipped
        return RunRecord(**{k: v for k, v in data.items() if k in known},
                         annotation_count=len(annotations), annotations=annotations)

    def list_runs(self, *, limit: int = 200, offset: int = 0, **filters: Any) -> list[RunSummary]:
        """Newest first, matching `filters` (records.where_clause's: method, backbone, bank, correct, status,
        owner, ids, source, scored, ...; None means "any")."""
        where, params = where_clause(**filters)
        sql = (f"SELECT {', '.join(SUMMARY_COLUMNS)}, (SELECT COUNT(*) FROM annotations a "
               "WHERE a.run_id = runs.id) AS annotation_count, (SELECT json_group_array(json(a.labels)) "
               "FROM annotations a WHERE a.run_id = runs.id) AS labels, (SELECT f.labels FROM final_labels f "
               f"WHERE f.run_id = runs.id) AS final_labels FROM runs {where} "
               "ORDER BY created_at DESC, id LIMIT ? OFFSET ?")
        with self.transaction(write=False) as conn:
            rows = conn.execute(sql, (*params, limit, offset)).fetchall()
        summaries = []
        for row in rows:
            data = {k: row[k] for k in row.keys()}
            for col in BOOL_COLUMNS:
                data[col] = None if data[col] is None else bool(data[col])
            data["labels"] = tuple(label for given in json.loads(data["labels"] or "[]") for label in given)
            data["final_labels"] = tuple(json.loads(data["final_labels"] or "[]"))
            summaries.append(RunSummary(**data))
        return summaries

    def count_runs(self, **filters: Any) -> int:
        where, params = where_clause(**filters)
        with self.transaction(write=False) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM runs {where}", params).fetchone()[0]

