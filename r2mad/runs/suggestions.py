"""The run store's machine labels: detectors' and LLM judges' suggestions per run, which runs each detector
version and each judge read, and people's reviews of the suggestions. Finding them is annotation/'s."""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol, Sequence

from r2mad.runs.records import dumps

# when a run last changed: the run itself, or one of its blame replays (steer/blame.py)
_STAMP = ("MAX(r.updated_at, COALESCE((SELECT MAX(created_at) FROM (SELECT created_at FROM blame WHERE run_id = r.id "
          "UNION ALL SELECT created_at FROM blame_sets WHERE run_id = r.id)), 0))")


class Found(Protocol):
    """A suggestion as a detector or a judge gives it (annotation/suggestion.py's Suggestion)."""
    label: str
    detector: str
    round: int | None
    agents: Sequence[int]
    summary: str
    evidence: dict[str, Any]


@dataclass(frozen=True)
class StoredSuggestion:
    id: int
    run_id: str
    label: str
    detector: str
    round: int | None
    agents: tuple[int, ...]
    summary: str
    evidence: dict[str, Any]
    reviews: dict[str, str] = field(default_factory=dict)  # annotator -> confirmed | rejected


class Suggesting:
    """The suggestion methods of the RunStore (store.py), which gives `transaction`, `scrub`, `path`."""

    def undetected(self, version: int) -> list[tuple[str, float]]:
        """(run id, stamp) of each finished run the detectors of `version` have not read since it last
        changed (the stamp: when that was, the run's blame replays included)."""
        with self.transaction(write=False) as conn:
            rows = conn.execute(
                f"SELECT r.id, {_STAMP} AS stamp FROM runs r LEFT JOIN detected d ON d.run_id = r.id WHERE r.status "
                f"!= 'running' AND r.transcript IS NOT NULL AND (d.run_id IS NULL OR d.version != ? OR "
                f"d.updated_at < {_STAMP})", (version,)).fetchall()
        return [(r["id"], r["stamp"]) for r in rows]

    def replace_detected(self, run_id: str, found: Iterable[Found], version: int, stamp: float) -> None:
        """The detectors' suggestions of a run (all but LLM judges') become `found`; people's reviews of a
        suggestion found again carry over; the run counts as read by `version` at `stamp`."""
        with self.transaction() as conn:
            kept: dict[tuple, list[tuple]] = {}
            for r in conn.execute("SELECT s.label, s.detector, s.round, s.agents, v.annotator, v.verdict, "
                                  "v.reviewed_at FROM suggestions s JOIN suggestion_reviews v ON "
                                  "v.suggestion_id = s.id WHERE s.run_id = ?", (run_id,)).fetchall():
                kept.setdefault((r[0], r[1], r[2], r[3]), []).append((r[4], r[5], r[6]))
            conn.execute("DELETE FROM suggestions WHERE run_id = ? AND detector NOT LIKE 'llm:%'", (run_id,))
            for s in found:
                agents = dumps(list(s.agents))
                sid = self._add_suggestion(conn, run_id, s, agents, self.scrub(s.summary),
                                           dumps(self.scrub(s.evidence, keys=False)))
                conn.executemany("INSERT INTO suggestion_reviews VALUES (?, ?, ?, ?)",
                                 [(sid, *review) for review in kept.get((s.label, s.detector, s.round, agents), [])])
            conn.execute("INSERT OR REPLACE INTO detected VALUES (?, ?, ?)", (run_id, version, stamp))

    def restore_suggestions(self, checked: Mapping[str, float], version: int,
                            found: Iterable[StoredSuggestion]) -> None:
        """Import suggestions with their reviews (a dataset's): the runs in `checked` (run id -> stamp) lose
        theirs and count as read by `version`; each of `found` is added as it is, reviewed now."""
        with self.transaction() as conn:
            for run_id, stamp in checked.items():
                conn.execute("DELETE FROM suggestions WHERE run_id = ?", (run_id,))
                conn.execute("INSERT OR REPLACE INTO detected VALUES (?, ?, ?)", (run_id, version, stamp))
            for s in found:
                sid = self._add_suggestion(conn, s.run_id, s, dumps(list(s.agents)), s.summary, dumps(s.evidence))
                conn.executemany("INSERT INTO suggestion_reviews VALUES (?, ?, ?, ?)",
                                 [(sid, who, verdict, time.time()) for who, verdict in s.reviews.items()])

    def _add_suggestion(self, conn: sqlite3.Connection, run_id: str, s: Found, agents: str, summary: str,
                        evidence: str) -> int:
        return conn.execute("INSERT INTO suggestions (run_id, label, detector, round, agents, summary, evidence) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (run_id, s.label, s.detector, s.round, agents, summary, evidence)).lastrowid

    def suggestions(self, run_id: str | None = None) -> list[StoredSuggestion]:
        """Suggestions of one run (or all), each with its reviews, in the order they were found."""
        where, params = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
        with self.transaction(write=False) as conn:
            rows = conn.execute(f"SELECT * FROM suggestions {where} ORDER BY id", params).fetchall()
            reviews: dict[int, dict[str, str]] = {}
            for r in conn.execute("SELECT suggestion_id, annotator, verdict FROM suggestion_reviews "
                                  "ORDER BY annotator").fetchall():
                reviews.setdefault(r["suggestion_id"], {})[r["annotator"]] = r["verdict"]
        return [StoredSuggestion(r["id"], r["run_id"], r["label"], r["detector"], r["round"],
                                 tuple(json.loads(r["agents"])), r["summary"], json.loads(r["evidence"]),
                                 reviews.get(r["id"], {})) for r in rows]

    def review_suggestions(self, annotator: str, verdicts: Mapping[int, str]) -> None:
        """Record one person's verdict (confirmed | rejected) on each suggestion id, now."""
        now = time.time()
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO suggestion_reviews VALUES (?, ?, ?, ?)",
                             [(sid, annotator, verdict, now) for sid, verdict in verdicts.items()])

    def suggestion_counts(self) -> dict[str, int]:
        """run id -> how many suggestions it has, for runs with any."""
        with self.transaction(write=False) as conn:
            return dict(conn.execute("SELECT run_id, COUNT(*) FROM suggestions GROUP BY run_id").fetchall())

    def runs_suggested(self, label: str | None) -> set[str]:
        """The runs with a suggestion of `label`."""
        with self.transaction(write=False) as conn:
            return {r[0] for r in conn.execute("SELECT DISTINCT run_id FROM suggestions WHERE label = ?",
                                               (label,)).fetchall()}

    # --- LLM judges --------------------------------------------------------------------------

    def save_judgement(self, run_id: str, judge: str, found: Iterable[Found], reply: str, dropped: int) -> None:
        """Replace judge `judge`'s suggestions of a run by `found`, and note that it read the run (its raw reply,
        how many proposals it dropped); KeyError for an unknown run."""
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise KeyError(f"No run {run_id} in {self.path}; check the id.")
            conn.execute("DELETE FROM suggestions WHERE run_id = ? AND detector = ?", (run_id, judge))
            for s in found:
                self._add_suggestion(conn, run_id, s, dumps(list(s.agents)), self.scrub(s.summary),
                                     dumps(self.scrub(s.evidence, keys=False)))
            conn.execute("INSERT OR REPLACE INTO judged VALUES (?, ?, ?, ?, ?)",
                         (run_id, judge, time.time(), self.scrub(reply), dropped))

    def judged_runs(self) -> dict[str, set[str]]:
        """judge -> the runs it read (with or without finding anything)."""
        with self.transaction(write=False) as conn:
            rows = conn.execute("SELECT judge, run_id FROM judged ORDER BY judge").fetchall()
        out: dict[str, set[str]] = {}
        for r in rows:
            out.setdefault(r["judge"], set()).add(r["run_id"])
        return out
