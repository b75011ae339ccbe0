"""The run store's people's labels: one annotator's labels, note and blame per run (every edit kept), and
the adjudicated final labels. Checking a label against others or against detectors is annotation/'s."""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from r2mad.runs.records import NAME_CHARS, NOTE_LIMIT, Annotation, AnnotationEdit, dumps
from r2mad.text import quoted


@dataclass(frozen=True)
class FinalLabels:
    run_id: str
    labels: tuple[str, ...]
    blame: dict[str, Any]  # label -> the turn it blames, or a list of turns (see annotation/book.py)
    adjudicator: str
    decided_at: float


class Annotating:
    """The annotation methods of the RunStore (store.py), which gives `transaction`, `taxonomy`, `scrub`, `path`."""

    def annotate(self, run_id: str, *, annotator: str, labels: Sequence[str],
                 note: str = "", blame: dict[str, dict[str, int]] | None = None) -> int:
        """Save one annotator's labels and note for a run (an edit if they annotated it before);
        `blame` maps a label to the turn it points at ({"round": r, "agent": a}); return the id."""
        annotator, labels = annotator.strip(), list(dict.fromkeys(labels))
        if len(note.encode("utf-8")) > NOTE_LIMIT or len(annotator) > NAME_CHARS:
            what = "The note" if len(annotator) <= NAME_CHARS else "The annotator name"
            raise ValueError(f"{what} is too long (notes up to {NOTE_LIMIT // 1024} KB, names up to {NAME_CHARS} "
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
            self._require_run(conn, run_id)
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

    def _require_run(self, conn: sqlite3.Connection, run_id: str) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise KeyError(f"No run {quoted(run_id)} in {self.path}; check the id.")

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

    def labels_by_annotator(self) -> dict[str, dict[str, tuple[tuple[str, ...], dict[str, Any]]]]:
        """run id -> annotator -> (their labels, their blame as stored), for every annotated run."""
        with self.transaction(write=False) as conn:
            rows = conn.execute("SELECT run_id, annotator, labels, blame FROM annotations "
                                "ORDER BY run_id, annotator").fetchall()
        out: dict[str, dict[str, tuple[tuple[str, ...], dict[str, Any]]]] = {}
        for r in rows:
            out.setdefault(r["run_id"], {})[r["annotator"]] = (tuple(json.loads(r["labels"])), json.loads(r["blame"]))
        return out

    def annotators_by_run(self) -> dict[str, list[str]]:
        """run id -> the people who annotated it, in name order."""
        with self.transaction(write=False) as conn:
            rows = conn.execute("SELECT run_id, annotator FROM annotations ORDER BY annotator").fetchall()
        people: dict[str, list[str]] = {}
        for row in rows:
            people.setdefault(row[0], []).append(row[1])
        return people

    # --- adjudicated final labels ----------------------------------------------------------------

    def set_final_labels(self, run_id: str, labels: Sequence[str], blame: dict[str, Any], adjudicator: str) -> None:
        """Write the adjudicated labels of a run now (replacing earlier ones); KeyError for an unknown run."""
        with self.transaction() as conn:
            self._require_run(conn, run_id)
            conn.execute("INSERT OR REPLACE INTO final_labels VALUES (?, ?, ?, ?, ?)",
                         (run_id, dumps(list(labels)), dumps(blame), adjudicator, time.time()))

    def restore_final_labels(self, finals: Sequence[FinalLabels]) -> None:
        """Import final labels (a dataset's); one decided later than the store's replaces it, else it is skipped."""
        with self.transaction() as conn:
            for f in finals:
                old = conn.execute("SELECT decided_at FROM final_labels WHERE run_id = ?", (f.run_id,)).fetchone()
                if old is None or f.decided_at > old[0]:
                    conn.execute("INSERT OR REPLACE INTO final_labels VALUES (?, ?, ?, ?, ?)",
                                 (f.run_id, dumps(list(f.labels)), dumps(f.blame), f.adjudicator, f.decided_at))

    def final_labels(self) -> dict[str, FinalLabels]:
        """run id -> its adjudicated labels, for every adjudicated run."""
        with self.transaction(write=False) as conn:
            rows = conn.execute("SELECT * FROM final_labels ORDER BY run_id").fetchall()
        return {r["run_id"]: FinalLabels(r["run_id"], tuple(json.loads(r["labels"])), json.loads(r["blame"]),
                                         r["adjudicator"], r["decided_at"]) for r in rows}
