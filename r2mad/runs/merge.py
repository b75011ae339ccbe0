"""Merging exported run records (export lines, the store's recovery files) into the run store's tables on
a connection: a run or annotation already there is kept unless the record's copy is newer. Lines are read by
r2mad.jsonl; transactions are the store's (store.py), whole files io.py's."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Protocol

from r2mad.jsonl import read_jsonl
from r2mad.runs.records import dumps


class Cleaner(Protocol):
    """What merging needs of the store: its scrubbing (RunStore has both)."""

    def scrub(self, value: Any, *, keys: bool = True) -> Any: ...

    def clean_transcript(self, data: dict[str, Any], status: str) -> str: ...


def read_records(fh: BinaryIO, path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, run dict) per line of an export, read a line at a time (r2mad.jsonl); what is no JSON
    object fails at its first bytes, so a big binary file is never read whole."""
    return read_jsonl(fh, path, objects=True, bad_line=not_export)


def not_export(path: str | Path, number: int, why: str) -> ValueError:
    return ValueError(f"{path} is not a JSONL export of runs (line {number}: {why}); export it again with "
                      "`python -m r2mad export --out runs.jsonl` and import that file.")


def merge_records(store: Cleaner, conn: sqlite3.Connection,
                  records: Iterable[dict[str, Any] | tuple[int, dict[str, Any]]], source: str) -> int:
    """Merge exported run dicts, or (line number, dict) pairs, inside the caller's transaction (a bad one
    is a ValueError naming `source`: roll back); returns how many runs were added or changed."""
    changed = 0
    columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)").fetchall()]
    for number, record in enumerate(records, 1):
        line, record = record if isinstance(record, tuple) else (None, record)
        try:
            changed += _merge_one(store, conn, record, columns)
        except (KeyError, TypeError, AttributeError, sqlite3.IntegrityError) as exc:
            if line is not None:
                raise not_export(source, line, f"{type(exc).__name__}: {exc}") from None
            raise ValueError(f"Run {number} of {source} is not a valid export ({exc}); "
                             "nothing was imported.") from None
    return changed


def _merge_one(store: Cleaner, conn: sqlite3.Connection, record: dict[str, Any],
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
