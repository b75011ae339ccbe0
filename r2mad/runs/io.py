"""Moving runs out of and into a RunStore: JSONL export/import, the annotations CSV, and pushing an export
to the Hugging Face Hub, each on its way out through the store's scrub. Not for the schema (database.py)."""
from __future__ import annotations

import csv
import json
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from r2mad.runs.exits import csv_cells
from r2mad.runs.merge import merge_records, read_records
from r2mad.runs.records import BOOL_COLUMNS, REDACTED, dumps
from r2mad.runs.store import RunStore
from r2mad.safewrite import atomic_open

_JSON_COLUMNS = ("settings", "task", "transcript")
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
    """The runs as export_jsonl writes them, one dict per run, oldest first, scrubbed again on their way out
    (for keys set since they were saved)."""
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
    return store.scrub(records, keys=False)


def import_jsonl(store: RunStore, path: str | Path) -> int:
    """Insert the runs of an export (all or nothing), read one line at a time. A run or annotation
    already here is kept unless the file's copy is newer, so importing a file twice changes nothing.
    Returns how many runs were added or changed; a file that is no export is a ValueError naming it."""
    with open(path, "rb") as fh, store.transaction() as conn:
        return merge_records(store, conn, read_records(fh, path), str(path))


def import_records(store: RunStore, records: Iterable[dict[str, Any]], source: str) -> int:
    """Insert exported run dicts (all or nothing); see import_jsonl."""
    with store.transaction() as conn:
        return merge_records(store, conn, records, source)


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
            writer.writerow(csv_cells(store.scrub(values)))
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
            row = [r.id, _iso(r.created_at), r.status, r.source, r.method, r.backbone, r.bank or "", r.question,
                   r.gold or "", r.final_answer or "", flags[0], r.tokens, r.seconds, r.rounds, *flags[1:],
                   r.parse_failures, ";".join(r.labels), ";".join(r.final_labels)]
            writer.writerow(csv_cells(store.scrub(row)))
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

