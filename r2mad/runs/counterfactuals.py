"""The run store's counterfactuals: sampled blame (each counterfactual replayed K times, the change in
P(correct) with its interval) and annotators' corrections (the ideal text of a blamed turn, and what a
fork with it in place ended with). Rows and their SQL; the schema is in records.py's MIGRATIONS (7)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from r2mad.runs.records import NOTE_LIMIT
from r2mad.runs.store import RunStore
from r2mad.text import quoted

Turn = tuple[int, int, str]  # (round, 0-based agent, neutraliser)


@dataclass(frozen=True)
class SampledBlame:
    """One counterfactual replayed `samples` times with other seeds: `correct` of them ended right, against
    `base_correct` of `base_samples` plain replays from the same round; `change` = the difference in
    P(correct), [low, high] its 95% interval (None when no sample finished)."""
    run_id: str
    turns: tuple[Turn, ...]
    samples: int
    correct: int
    base_samples: int
    base_correct: int
    change: float | None
    low: float | None
    high: float | None
    calls: int
    fork_ids: tuple[str | None, ...] = ()
    cut: bool = False  # the budget ended inside its samples
    deterministic: bool = False  # no live round after the change: one replay says it all
    created_at: float = 0.0


@dataclass(frozen=True)
class Correction:
    """An annotator's ideal text for one turn (what the agent should have said), and once verified, what a
    fork of the run with that text in place ended with: `flips` when a wrong run ends right."""
    run_id: str
    round: int
    agent: int  # 0-based
    annotator: str
    ideal: str
    written_at: float = 0.0
    fork_id: str | None = None
    final_answer: str | None = None
    correct: bool | None = None  # None: not verified yet (or the fork was cut)
    verified_at: float | None = None

    @property
    def verified(self) -> bool:
        return self.verified_at is not None


def save_samples(store: RunStore, rows: list[SampledBlame]) -> None:
    with store.transaction() as conn:
        conn.executemany("INSERT OR REPLACE INTO blame_samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [(b.run_id, json.dumps([list(t) for t in b.turns]), b.samples, b.correct, b.base_samples,
                           b.base_correct, b.change, b.low, b.high, b.calls, json.dumps(list(b.fork_ids)),
                           int(b.cut), int(b.deterministic), b.created_at or time.time()) for b in rows])


def samples_of(store: RunStore, run_id: str) -> list[SampledBlame]:
    """A run's sampled counterfactuals, the largest lower bound of the change first."""
    with store.transaction(write=False) as conn:
        rows = conn.execute("SELECT * FROM blame_samples WHERE run_id = ? ORDER BY COALESCE(low, -2) DESC, turns",
                            (run_id,)).fetchall()
    return [SampledBlame(**{**dict(r), "turns": tuple(tuple(t) for t in json.loads(r["turns"])),
                            "fork_ids": tuple(json.loads(r["fork_ids"])), "cut": bool(r["cut"]),
                            "deterministic": bool(r["deterministic"])}) for r in rows]


def write_correction(store: RunStore, run_id: str, round_index: int, agent: int, annotator: str, ideal: str) -> None:
    """Keep (or replace) an annotator's ideal text for a turn; a new text clears the old verification."""
    ideal, annotator = store.scrub(ideal.strip()), annotator.strip()
    if not ideal:
        raise ValueError("The ideal action is empty; write what the agent should have said, then verify.")
    if len(ideal.encode("utf-8")) > NOTE_LIMIT:
        raise ValueError(f"The ideal action is longer than {NOTE_LIMIT // 1024} KB; shorten it and save again.")
    with store.transaction() as conn:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise KeyError(f"No run {quoted(run_id)} in {store.path}; check the id.")
        old = conn.execute("SELECT ideal FROM corrections WHERE run_id = ? AND round = ? AND agent = ? AND "
                           "annotator = ?", (run_id, round_index, agent, annotator)).fetchone()
        if old is not None and old["ideal"] == ideal:
            return  # the same text keeps its verification
        conn.execute("INSERT OR REPLACE INTO corrections (run_id, round, agent, annotator, ideal, written_at) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (run_id, round_index, agent, annotator, ideal, time.time()))


def record_verification(store: RunStore, c: Correction, fork_id: str | None, final_answer: str | None,
                        correct: bool | None) -> None:
    """What the fork with `c`'s text in place ended with (only while the text is still the one verified)."""
    with store.transaction() as conn:
        conn.execute("UPDATE corrections SET fork_id = ?, final_answer = ?, correct = ?, verified_at = ? WHERE "
                     "run_id = ? AND round = ? AND agent = ? AND annotator = ? AND ideal = ?",
                     (fork_id, final_answer, None if correct is None else int(correct), time.time(), c.run_id,
                      c.round, c.agent, c.annotator, c.ideal))


def corrections_of(store: RunStore, run_id: str) -> list[Correction]:
    """A run's corrections by turn, then annotator."""
    with store.transaction(write=False) as conn:
        rows = conn.execute("SELECT * FROM corrections WHERE run_id = ? ORDER BY round, agent, annotator",
                            (run_id,)).fetchall()
    return [Correction(**{**dict(r), "correct": None if r["correct"] is None else bool(r["correct"])}) for r in rows]
