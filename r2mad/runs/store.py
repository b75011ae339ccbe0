"""Run store: each debate's config (secrets scrubbed), transcript, outcome and human annotations in
one SQLite file. Schema, rows and scrubbing live in records.py, export/import in io.py; not for
scoring (evaluation/metrics.py) or rendering (ui/)."""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager, suppress
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from r2mad.runs.faults import (
    StoreBusy,
    StoreError,
    StoreFailed,
    is_locked,
    recovery_files,
    recovery_folders,
    store_fault,
    write_recovery,
)
from r2mad.runs.merge import merge_records, read_records
from r2mad.runs.records import (
    BOOL_COLUMNS,
    MIGRATIONS,
    NOTE_LIMIT,
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
)
from r2mad.text import quoted
from r2mad.types import Task, Transcript, from_dict, to_dict

__all__ = ["STATUSES", "Annotation", "AnnotationEdit", "RunRecord", "RunStore", "RunSummary", "StoreBusy",
           "StoreError", "StoreFailed", "load_taxonomy", "scrub"]
QUICK_WAIT_S = 0.25  # a save in the middle of a debate waits no longer for a lock: the next round retries


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


class RunStore:
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
        self.path = Path(path)
        self.recovery_dirs = recovery_folders(self.path)
        self._secrets = secrets or (lambda: ())
        self._taxonomy = taxonomy
        self.lock_wait_s, self.stale_after_s, self.on_wait = lock_wait_s, stale_after_s, on_wait
        self.notices: list[str] = []  # one sentence per fault met (damaged file, deferred saves)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._started: dict[str, dict[str, Any]] = {}  # run id -> its start row, until its final save
        self._unsaved: dict[str, dict[str, Any]] = {}  # run id -> export record no disk took yet
        self._behind = True  # interrupted runs and recovery files may wait: see _catch_up
        self._catching = threading.Lock()
        self._told_unwritable = False
        try:
            self._open()
        except StoreFailed as exc:
            if not exc.damaged:
                raise
            self._move_aside(exc.detail)
            self._open()
        try:
            with self.transaction(wait=False):  # its commit catches up (see _catch_up)
                pass
        except StoreBusy:
            pass  # another program is writing: we catch up at our first write
        except StoreFailed as exc:
            self._note_unwritable(exc)

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
            self._catch_up()

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

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

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
        Space (see ui/visitors.py); None for runs everyone with access to the store may read."""
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

    def recorder(self, run_id: str) -> Callable[[Transcript], None]:
        """A debate's `record` hook (see runner.run_debate) for this run: saved each time a round
        finishes, and whole (a stopped round included, for its cost) when the debate ends. A save in
        the middle that meets a lock or a fault is retried at the next round; if the debate ends still
        unsaved, its transcript is kept (see _keep) and `notices` says where, never raised."""
        tried = [0]  # finished rounds in the last save tried: a failed one waits for the next round

        def record(t: Transcript) -> None:
            if t.status == "running" and len(t.finished().rounds) == tried[0]:
                return
            final = t.status != "running"
            tried[0] = len(t.finished().rounds)
            try:
                self.save_transcript(run_id, t if final else t.finished(), t.status, wait=final)
            except StoreError as exc:
                if final:
                    self._keep(run_id, t, exc)
            else:
                if final:
                    self._started.pop(run_id, None)
        return record

    def _keep(self, run_id: str, t: Transcript, exc: StoreError) -> None:
        """A finished debate the store could not take: marked failed when the store lets us, its export
        record written to a recovery folder (or kept in memory), imported at the next write or opening."""
        with suppress(StoreError):  # a full database may still take this small change
            self.set_status(run_id, "failed", f"not saved: {exc.problem}; its transcript was kept in a "
                                              "recovery file and is saved when the store can take it", wait=False)
        record = {**self._started.pop(run_id, {"id": run_id}), **self._outcome(t, t.status), "annotations": []}
        record["transcript"] = json.loads(record["transcript"])
        self._behind = True
        try:
            where = f"kept in {write_recovery(self.recovery_dirs, run_id, record)}"
        except OSError:
            self._unsaved[run_id] = record
            where = "kept in memory only (no disk took it)"
        self.notices.append(f"{exc.problem}, so run {run_id[:8]} was {where} and is saved when the store can "
                            f"take it; {exc.fix}.")

    def _catch_up(self) -> None:
        """What faults put off, once a write succeeds: recovery files and runs kept in memory are imported,
        then runs whose process ended are marked (in that order: a recovered run is no interrupted one)."""
        if not self._catching.acquire(blocking=False):
            return  # already catching up (its own writes come back here)
        try:
            self._behind = False
            for path in recovery_files(self.recovery_dirs):
                try:
                    if path.suffix == ".jsonl":
                        with open(path, "rb") as fh, self.transaction() as conn:
                            merge_records(self, conn, read_records(fh, path), str(path))
                    else:  # a recovery file of an older version: run id, status and transcript
                        data = json.loads(path.read_text(encoding="utf-8"))
                        self.save_transcript(data["run_id"], Transcript.from_json(dumps(data["transcript"])),
                                             data["status"])
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    self.notices.append(f"The recovery file {path} could not be imported ({exc}); it is left "
                                        "there for a look.")
                    continue
                path.unlink(missing_ok=True)  # another process opening the store may have taken it first
            for run_id, record in list(self._unsaved.items()):
                try:
                    with self.transaction() as conn:
                        merge_records(self, conn, [record], f"run {run_id} kept in memory")
                except ValueError as exc:  # cannot be: we made it; said rather than raised into a caller's write
                    self.notices.append(str(exc))
                self._unsaved.pop(run_id)
            self.mark_interrupted(self.stale_after_s)
        except StoreError as exc:
            self._behind = True
            if isinstance(exc, StoreFailed):
                self._note_unwritable(exc)
        finally:
            self._catching.release()

    def _note_unwritable(self, exc: StoreFailed) -> None:
        """Said once per store: later failed writes say their own sentence."""
        if not self._told_unwritable:
            self._told_unwritable = True
            self.notices.append(f"{exc.problem}, so it opens for reading and what waits to be saved (recovery "
                                f"files, interrupted runs) waits until it can be written; {exc.fix}.")

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

    def list_runs(self, *, method: str | None = None, backbone: str | None = None,
                  bank: str | None = None, correct: bool | None = None,
                  shared_misconception: bool | None = None, flip: bool | None = None,
                  parse_failures: bool | int | None = None, status: str | None = None,
                  owner: str | None = None, ids: Sequence[str] | None = None, limit: int = 200,
                  offset: int = 0) -> list[RunSummary]:
        """Newest first. None means "any"; parse_failures=True/False means some/none, an int n
        means at least n; `owner` keeps one visitor's runs, `ids` these runs."""
        where, params = _where(method=method, backbone=backbone, bank=bank, status=status,
                               correct=correct, shared_misconception=shared_misconception,
                               flip=flip, parse_failures=parse_failures, owner=owner, ids=ids)
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

    # --- annotations --------------------------------------------------------------------------

    def annotate(self, run_id: str, *, annotator: str, labels: Sequence[str],
                 note: str = "", blame: dict[str, dict[str, int]] | None = None) -> int:
        """Save one annotator's labels and note for a run (an edit if they annotated it before);
        `blame` maps a label to the turn it points at ({"round": r, "agent": a}); return the id."""
        annotator, labels = annotator.strip(), list(dict.fromkeys(labels))
        if len(note.encode("utf-8")) > NOTE_LIMIT or len(annotator) > 100:
            what = "The note" if len(annotator) <= 100 else "The annotator name"
            raise ValueError(f"{what} is too long (notes up to {NOTE_LIMIT // 1024} KB, names up to 100 "
                             "characters); shorten it and save again.")
        unknown = [label for label in labels if label not in self.taxonomy]
        if unknown or not labels:
            problem = f"Unknown label(s) {', '.join(map(repr, unknown))}" if unknown else "No label"
            raise ValueError(f"{problem}; choose from: {', '.join(self.taxonomy)}.")
        if not annotator:
            raise ValueError("Annotator name is empty; enter your name before saving labels.")
        note, now, labels_text = self.scrub(note), time.time(), dumps(labels)
        blame_text = dumps({k: v for k, v in (blame or {}).items() if k in labels})
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise KeyError(f"No run {quoted(run_id)} in {self.path}; check the id.")
            old = conn.execute("SELECT id, labels, note, blame, updated_at FROM annotations "
                               "WHERE run_id = ? AND annotator = ?", (run_id, annotator)).fetchone()
            if old is None:
                return conn.execute("INSERT INTO annotations (run_id, annotator, labels, note, "
                                    "created_at, updated_at, blame) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                    (run_id, annotator, labels_text, note, now, now, blame_text)).lastrowid
            if (old["labels"], old["note"], old["blame"]) != (labels_text, note, blame_text):  # else no edit
                seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM annotation_edits "
                                   "WHERE annotation_id = ?", (old["id"],)).fetchone()[0]
                conn.execute("INSERT INTO annotation_edits VALUES (?, ?, ?, ?, ?)",
                             (old["id"], seq, now, old["labels"], old["note"]))
                conn.execute("UPDATE annotations SET labels = ?, note = ?, blame = ?, updated_at = ? "
                             "WHERE id = ?", (labels_text, note, blame_text, now, old["id"]))
            return old["id"]

    def annotations_of(self, conn: sqlite3.Connection, run_id: str) -> Iterator[Annotation]:
        for row in conn.execute("SELECT * FROM annotations WHERE run_id = ? ORDER BY annotator",
                                (run_id,)).fetchall():
            edits = conn.execute("SELECT seq, edited_at, labels, note FROM annotation_edits "
                                 "WHERE annotation_id = ? ORDER BY seq", (row["id"],)).fetchall()
            yield Annotation(row["id"], run_id, row["annotator"], tuple(json.loads(row["labels"])),
                             row["note"], row["created_at"], row["updated_at"],
                             tuple(AnnotationEdit(e["seq"], e["edited_at"],
                                                  tuple(json.loads(e["labels"])), e["note"])
                                   for e in edits), json.loads(row["blame"]))

    def count_runs(self, **filters: Any) -> int:
        where, params = _where(**filters)
        with self.transaction(write=False) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM runs {where}", params).fetchone()[0]


def _where(*, method: str | None = None, backbone: str | None = None, bank: str | None = None,
           status: str | None = None, correct: bool | None = None,
           shared_misconception: bool | None = None, flip: bool | None = None,
           parse_failures: bool | int | None = None, owner: str | None = None,
           ids: Sequence[str] | None = None) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for col, value in (("method", method), ("backbone", backbone), ("bank", bank),
                       ("status", status), ("correct", correct), ("owner", owner),
                       ("shared_misconception", shared_misconception), ("flip", flip)):
        if value is not None:
            clauses.append(f"{col} = ?")
            params.append(int(value) if isinstance(value, bool) else value)
    if isinstance(parse_failures, bool):
        clauses.append("parse_failures > 0" if parse_failures else "parse_failures = 0")
    elif parse_failures is not None:
        clauses.append("parse_failures >= ?")
        params.append(int(parse_failures))
    if ids is not None:
        clauses.append(f"id IN ({', '.join('?' * len(ids))})" if ids else "0")
        params.extend(ids)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params
