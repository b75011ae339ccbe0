"""The label book over a RunStore: detector suggestions (stored per run, reviewed by people), human labels
with blame and suggestion reviews, and adjudicated final labels. Not for queues (queues.py) or
statistics (agreement.py)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from r2mad.annotation.detectors import NO_LABEL, VERSION, counterfactual, detect
from r2mad.runs.records import dumps
from r2mad.runs.store import RunStore
from r2mad.text import quoted

Turn = dict[str, int]  # {"round": r, "agent": a} (0-based agent)
Blame = dict[str, "Turn | list[Turn]"]  # label -> the turn it blames, or a list of turns (several culprits)


def blame_turns(value: Any) -> list[tuple[int, int]]:
    """The (round, agent) pairs a label's blame names, whether stored as one turn or a list of turns."""
    items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
    return sorted({(int(t["round"]), int(t["agent"])) for t in items
                   if isinstance(t, dict) and t.get("round") is not None and t.get("agent") is not None})


def blame_value(turns: Sequence[tuple[int, int]]) -> Turn | list[Turn] | None:
    """How a set of turns is stored: one turn as a plain {"round", "agent"}, several as a list."""
    items = [{"round": r, "agent": a} for r, a in sorted(set(turns))]
    return None if not items else items[0] if len(items) == 1 else items


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


@dataclass(frozen=True)
class FinalLabels:
    run_id: str
    labels: tuple[str, ...]
    blame: Blame
    adjudicator: str
    decided_at: float


class LabelBook:
    def __init__(self, store: RunStore):
        self.store = store

    # --- detector suggestions -----------------------------------------------------------------

    def detect(self, run_ids: Sequence[str] | None = None) -> int:
        """Run the detectors on every finished run (or those given) not yet checked by this detector
        version or changed since (the run, or its blame replays: `counterfactual` suggestions); return
        how many runs were (re)checked."""
        from r2mad.steer.links import blame_of

        with self.store.transaction(write=False) as conn:
            stamp = ("MAX(r.updated_at, COALESCE((SELECT MAX(created_at) FROM (SELECT created_at FROM blame WHERE "
                     "run_id = r.id UNION ALL SELECT created_at FROM blame_sets WHERE run_id = r.id)), 0))")
            rows = conn.execute(
                f"SELECT r.id, {stamp} AS stamp FROM runs r LEFT JOIN detected d ON d.run_id = r.id WHERE r.status "
                f"!= 'running' AND r.transcript IS NOT NULL AND (d.run_id IS NULL OR d.version != ? OR "
                f"d.updated_at < {stamp})", (VERSION,)).fetchall()
        todo = [(r["id"], r["stamp"]) for r in rows if run_ids is None or r["id"] in set(run_ids)]
        for run_id, stamp in todo:
            record = self.store.get_run(run_id)
            found = detect(record.transcript) + counterfactual(blame_of(self.store, run_id))
            with self.store.transaction() as conn:
                kept = {}  # people's reviews of a suggestion that is found again carry over
                for r in conn.execute("SELECT s.label, s.detector, s.round, s.agents, v.annotator, v.verdict, "
                                      "v.reviewed_at FROM suggestions s JOIN suggestion_reviews v ON "
                                      "v.suggestion_id = s.id WHERE s.run_id = ?", (run_id,)).fetchall():
                    kept.setdefault((r[0], r[1], r[2], r[3]), []).append((r[4], r[5], r[6]))
                conn.execute("DELETE FROM suggestions WHERE run_id = ? AND detector NOT LIKE 'llm:%'", (run_id,))
                for s in found:
                    agents = dumps(list(s.agents))
                    sid = conn.execute(
                        "INSERT INTO suggestions (run_id, label, detector, round, agents, summary, evidence) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (run_id, s.label, s.detector, s.round, agents, self.store.scrub(s.summary),
                         dumps(self.store.scrub(s.evidence, keys=False)))).lastrowid
                    reviews = kept.get((s.label, s.detector, s.round, agents), [])
                    conn.executemany("INSERT INTO suggestion_reviews VALUES (?, ?, ?, ?)",
                                     [(sid, *review) for review in reviews])
                conn.execute("INSERT OR REPLACE INTO detected VALUES (?, ?, ?)", (run_id, VERSION, stamp))
        return len(todo)

    def suggestions(self, run_id: str | None = None) -> list[StoredSuggestion]:
        """Suggestions of one run (or all), each with its reviews, in the order they were found."""
        where, params = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
        with self.store.transaction(write=False) as conn:
            rows = conn.execute(f"SELECT * FROM suggestions {where} ORDER BY id", params).fetchall()
            reviews: dict[int, dict[str, str]] = {}
            for r in conn.execute("SELECT suggestion_id, annotator, verdict FROM suggestion_reviews "
                                  "ORDER BY annotator").fetchall():
                reviews.setdefault(r["suggestion_id"], {})[r["annotator"]] = r["verdict"]
        return [StoredSuggestion(r["id"], r["run_id"], r["label"], r["detector"], r["round"],
                                 tuple(json.loads(r["agents"])), r["summary"], json.loads(r["evidence"]),
                                 reviews.get(r["id"], {})) for r in rows]

    # --- human labels -------------------------------------------------------------------------

    def save_labels(self, run_id: str, annotator: str, labels: Sequence[str], note: str = "",
                    blame: Blame | None = None) -> int:
        """Save a person's labels (through the store's checks); every suggestion of the run counts as
        confirmed by them when its label is among theirs, rejected otherwise; a counterfactual one (no
        label) when they blamed one of its turns for some label. The confirmed suggestions of a label the
        person gave no turn for lend it their turns (round, first agent): one, or a set of several."""
        blame = dict(blame or {})
        found = self.suggestions(run_id)
        lent: dict[str, set[tuple[int, int]]] = {}
        for s in found:
            if s.label in labels and s.label not in blame and s.round is not None and s.agents:
                lent.setdefault(s.label, set()).add((s.round, s.agents[0]))
        blame.update({label: blame_value(turns) for label, turns in lent.items()})
        annotation_id = self.store.annotate(run_id, annotator=annotator, labels=labels, note=note, blame=blame)
        turns = [turn for value in blame.values() for turn in blame_turns(value)]

        def confirmed(s: StoredSuggestion) -> bool:
            return any((s.round, a) in turns for a in s.agents) if s.label == NO_LABEL else s.label in labels
        now = time.time()
        with self.store.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO suggestion_reviews VALUES (?, ?, ?, ?)",
                             [(s.id, annotator.strip(), "confirmed" if confirmed(s) else "rejected", now)
                              for s in found])
        return annotation_id

    # --- adjudication -------------------------------------------------------------------------

    def set_final(self, run_id: str, labels: Sequence[str], adjudicator: str, blame: Blame | None = None) -> None:
        """Write the adjudicated label set of a run (replacing an earlier one)."""
        labels = list(dict.fromkeys(labels))
        unknown = [x for x in labels if x not in self.store.taxonomy]
        if unknown:
            raise ValueError(f"Unknown label(s) {', '.join(map(repr, unknown))}; choose from: "
                             f"{', '.join(self.store.taxonomy)}.")
        if not adjudicator.strip():
            raise ValueError("Adjudicator name is empty; enter your name before writing final labels.")
        with self.store.transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise KeyError(f"No run {quoted(run_id)} in {self.store.path}; check the id.")
            conn.execute("INSERT OR REPLACE INTO final_labels VALUES (?, ?, ?, ?, ?)",
                         (run_id, dumps(labels), dumps({k: v for k, v in (blame or {}).items() if k in labels}),
                          adjudicator.strip(), time.time()))

    def finals(self) -> dict[str, FinalLabels]:
        with self.store.transaction(write=False) as conn:
            rows = conn.execute("SELECT * FROM final_labels ORDER BY run_id").fetchall()
        return {r["run_id"]: FinalLabels(r["run_id"], tuple(json.loads(r["labels"])), json.loads(r["blame"]),
                                         r["adjudicator"], r["decided_at"]) for r in rows}

    def human_labels(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """run id -> annotator -> labels, for every annotated run."""
        with self.store.transaction(write=False) as conn:
            rows = conn.execute("SELECT run_id, annotator, labels FROM annotations ORDER BY run_id, annotator")
            out: dict[str, dict[str, tuple[str, ...]]] = {}
            for r in rows.fetchall():
                out.setdefault(r["run_id"], {})[r["annotator"]] = tuple(json.loads(r["labels"]))
        return out

    def human_blame(self) -> dict[str, dict[str, dict[str, list[tuple[int, int]]]]]:
        """run id -> annotator -> label -> the turns they blamed for it, for every annotated run."""
        with self.store.transaction(write=False) as conn:
            rows = conn.execute("SELECT run_id, annotator, blame FROM annotations ORDER BY run_id, annotator")
            out: dict[str, dict[str, dict[str, list[tuple[int, int]]]]] = {}
            for r in rows.fetchall():
                out.setdefault(r["run_id"], {})[r["annotator"]] = {
                    label: blame_turns(value) for label, value in json.loads(r["blame"]).items()}
        return out
