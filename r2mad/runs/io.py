"""Moving runs out of and into a RunStore: JSONL export/import, the annotations CSV, and pushing an export
to the Hugging Face Hub. Not for the schema or secret scrubbing (runs.py)."""
from __future__ import annotations

import csv
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Sequence

from r2mad.runs.records import BOOL_COLUMNS, REDACTED, dumps
from r2mad.runs.store import RunStore
from r2mad.safewrite import atomic_open

_JSON_COLUMNS = ("settings", "task", "transcript")
_PEEK = 64 * 1024  # bytes of a line read before knowing it is a JSON object
_CSV_HEADER = ("run_id", "annotator", "labels", "note", "created_at", "updated_at", "method", "backbone",
               "bank", "question", "gold", "final_answer", "correct")


def export_jsonl(store: RunStore, path: str | Path, run_ids: Sequence[str] | None = None) -> int:
    """Write one JSON object per run (oldest first): every column, the parsed transcript and the
    annotations with their edit history, whole or not at all. Returns the number of runs written."""
    records = export_records(store, run_ids)
    with atomic_open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(dumps(record) + "\n")
    return len(records)


def export_records(store: RunStore, run_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The runs as export_jsonl writes them, one dict per run, oldest first."""
    records = []
    with store.transaction(write=False) as conn:
        rows = conn.execute("SELECT * FROM runs ORDER BY created_at, id").fetchall()
        wanted = None if run_ids is None else set(run_ids)
        for row in rows:
            if wanted is not None and row["id"] not in wanted:
                continue
            record = {k: row[k] for k in row.keys()}
            for col in _JSON_COLUMNS:
                record[col] = record[col] and json.loads(record[col])
            for col in BOOL_COLUMNS:
                record[col] = None if record[col] is None else bool(record[col])
            record["annotations"] = [
                {"annotator": a.annotator, "labels": list(a.labels), "note": a.note,
                 "created_at": a.created_at, "updated_at": a.updated_at, "blame": a.blame,
                 "history": [{"seq": e.seq, "edited_at": e.edited_at, "labels": list(e.labels),
                              "note": e.note} for e in a.history]}
                for a in store.annotations_of(conn, row["id"])]
            records.append(record)
    return records


def import_jsonl(store: RunStore, path: str | Path) -> int:
    """Insert the runs of an export (all or nothing), read one line at a time. A run or annotation
    already here is kept unless the file's copy is newer, so importing a file twice changes nothing.
    Returns how many runs were added or changed; a file that is no export is a ValueError naming it."""
    with open(path, "rb") as fh:
        return import_records(store, _records(fh, path), str(path))


def _records(fh: BinaryIO, path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, run dict) per line; what is no JSON object fails at its first bytes, so a big binary
    file is never read whole."""
    number = 0
    while True:
        head = fh.readline(_PEEK)
        if not head:
            return
        number += 1
        if not head.strip():
            continue
        if not head.lstrip().startswith(b"{"):
            raise _not_export(path, number, "not a JSON object")
        line = head if head.endswith(b"\n") else head + fh.readline()
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _not_export(path, number, getattr(exc, "msg", None) or exc.reason) from None
        yield number, record


def _not_export(path: str | Path, number: int, why: str) -> ValueError:
    return ValueError(f"{path} is not a JSONL export of runs (line {number}: {why}); export it again with "
                      "`python -m r2mad export --out runs.jsonl` and import that file.")


def import_records(store: RunStore, records: Iterable[dict[str, Any] | tuple[int, dict[str, Any]]],
                   source: str) -> int:
    """Insert exported run dicts, or (line number, dict) pairs, all or nothing; see import_jsonl."""
    changed = 0
    with store.transaction() as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)").fetchall()]
        for number, record in enumerate(records, 1):
            line, record = record if isinstance(record, tuple) else (None, record)
            try:
                changed += _import_one(store, conn, record, columns)
            except (KeyError, TypeError, AttributeError, sqlite3.IntegrityError) as exc:
                if line is not None:
                    raise _not_export(source, line, f"{type(exc).__name__}: {exc}") from None
                raise ValueError(f"Run {number} of {source} is not a valid export ({exc}); "
                                 "nothing was imported.") from None
    return changed


def _import_one(store: RunStore, conn: sqlite3.Connection, record: dict[str, Any],
                columns: list[str]) -> int:
    values = {col: record.get(col) for col in columns}
    values["settings"] = dumps(store.scrub(values["settings"]))
    values["task"] = dumps(store.scrub(values["task"], keys=False))
    if values["transcript"]:
        values["transcript"] = store.clean_transcript(values["transcript"], values["status"])
    old = conn.execute("SELECT updated_at FROM runs WHERE id = ?", (record["id"],)).fetchone()
    changed = old is None or record["updated_at"] > old["updated_at"]
    if old is None:
        conn.execute(f"INSERT INTO runs ({', '.join(columns)}) VALUES "
                     f"({', '.join('?' * len(columns))})", [values[c] for c in columns])
    elif changed:  # the columns the record has (a recovery record lacks e.g. a fork's parent)
        given = [c for c in columns if c in record]
        conn.execute(f"UPDATE runs SET {', '.join(f'{c} = ?' for c in given)} WHERE id = ?",
                     [values[c] for c in given] + [record["id"]])
    for a in record.get("annotations") or []:
        have = conn.execute("SELECT id, updated_at FROM annotations WHERE run_id = ? AND "
                            "annotator = ?", (record["id"], a["annotator"])).fetchone()
        if have is not None and a["updated_at"] <= have["updated_at"]:
            continue
        if have is not None:
            conn.execute("DELETE FROM annotations WHERE id = ?", (have["id"],))
        annotation_id = conn.execute(
            "INSERT INTO annotations (run_id, annotator, labels, note, created_at, updated_at, blame) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", (record["id"], a["annotator"], dumps(a["labels"]),
                                             store.scrub(a["note"]), a["created_at"],
                                             a["updated_at"], dumps(a.get("blame") or {}))).lastrowid
        conn.executemany("INSERT INTO annotation_edits VALUES (?, ?, ?, ?, ?)",
                         [(annotation_id, e["seq"], e["edited_at"], dumps(e["labels"]),
                           store.scrub(e["note"])) for e in a.get("history") or []])
        changed = True
    return int(changed)


def export_annotations_csv(store: RunStore, path: str | Path) -> int:
    """One CSV row per (run, annotator) with the run's outcome; labels joined by ";"."""
    with store.transaction(write=False) as conn:
        rows = conn.execute(
            "SELECT a.run_id, a.annotator, a.labels, a.note, a.created_at, a.updated_at, "
            "r.method, r.backbone, r.bank, r.question, r.gold, r.final_answer, r.correct "
            "FROM annotations a JOIN runs r ON r.id = a.run_id "
            "ORDER BY r.created_at, a.run_id, a.annotator").fetchall()
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(_CSV_HEADER)
        for row in rows:
            values = list(row)
            values[2] = ";".join(json.loads(values[2]))
            values[4:6] = [_iso(values[4]), _iso(values[5])]
            writer.writerow(values)
    return len(rows)


RUNS_CSV_HEADER = ["run_id", "created_at", "status", "source", "method", "backbone", "bank", "question", "gold",
                   "final_answer", "correct", "tokens", "seconds", "rounds", "shared_misconception", "flip",
                   "parse_failures", "labels", "final_labels"]


def export_runs_csv(store: RunStore, path: str | Path, run_ids: Sequence[str]) -> int:
    """One CSV row per run, newest first: its summary columns and labels (every annotator's, joined by
    ";"), for a spreadsheet; the JSONL export is the one that imports back."""
    runs = store.list_runs(ids=list(run_ids), limit=max(len(run_ids), 1))
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(RUNS_CSV_HEADER)
        for r in runs:
            flags = ["" if v is None else int(v) for v in (r.correct, r.shared_misconception, r.flip)]
            writer.writerow([r.id, _iso(r.created_at), r.status, r.source, r.method, r.backbone, r.bank or "",
                             r.question, r.gold or "", r.final_answer or "", flags[0], r.tokens, r.seconds,
                             r.rounds, *flags[1:], r.parse_failures, ";".join(r.labels), ";".join(r.final_labels)])
    return len(runs)


def push_to_hub(export_path: str | Path, repo_id: str, token: str | None) -> str:
    """Upload an export file to a Hugging Face dataset repo; returns the file's URL."""
    if not token:
        raise ValueError("No Hugging Face token given; set HF_TOKEN (or paste a token with write "
                         "access) to push the export.")
    export_path = Path(export_path)
    if not export_path.is_file():
        raise FileNotFoundError(f"No export at {export_path}; run export first.")
    from huggingface_hub import HfApi
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        return str(api.upload_file(path_or_fileobj=str(export_path),
                                   path_in_repo=export_path.name, repo_id=repo_id,
                                   repo_type="dataset"))
    except Exception as exc:  # the library's message may echo request headers
        message = str(exc).replace(token, REDACTED)
        raise RuntimeError(f"Pushing {export_path.name} to dataset {repo_id} failed: {message}; "
                           "check the repo id and that the token can write to it.") from None


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))

