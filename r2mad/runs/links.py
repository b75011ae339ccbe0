"""The run store's lineage: a fork's link to the run it replays (runs.parent_id, runs.fork) and blame's
counterfactual replays (single turns, and sets of turns). What a fork changes is steer/'s."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from r2mad.text import quoted


@dataclass(frozen=True)
class Blame:
    """One counterfactual replay of a failed run: round `round`'s turn of `agent` neutralised, the debate
    replayed to its end; `correct` says whether that alone turns the final answer correct."""
    run_id: str
    round: int
    agent: int
    neutraliser: str  # "mask" | "previous" (the agent's own answer of the round before)
    fork_id: str | None
    final_answer: str | None
    correct: bool | None  # None: the replay was cut where blame's budget ended (incomplete)
    calls: int
    tokens: int
    created_at: float = 0.0
    also: tuple[tuple[int, int, str], ...] = ()  # more turns neutralised in the same replay: (round, agent, how)

    @property
    def turns(self) -> tuple[tuple[int, int, str], ...]:
        return ((self.round, self.agent, self.neutraliser), *self.also)


class Linking:
    """The lineage methods of the RunStore (store.py), which gives `transaction`, `scrub`, `path`."""

    def link_fork(self, run_id: str, parent_id: str, fork: dict[str, Any]) -> None:
        """Mark run `run_id` a fork of `parent_id`; `fork` (what it changed) is kept as JSON, scrubbed."""
        with self.transaction() as conn:
            conn.execute("UPDATE runs SET parent_id = ?, fork = ? WHERE id = ?",
                         (parent_id, json.dumps(self.scrub(fork, keys=False)), run_id))

    def fork_link(self, run_id: str) -> tuple[str | None, dict[str, Any] | None]:
        """(parent run id, what the fork changed as stored), or (None, None) for a run that is no fork."""
        with self.transaction(write=False) as conn:
            row = conn.execute("SELECT parent_id, fork FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"No run {quoted(run_id)} in {self.path}; check the id.")
        return row["parent_id"], json.loads(row["fork"]) if row["fork"] else None

    def forks_of(self, run_id: str) -> list[str]:
        """The ids of the runs forked from `run_id`, oldest first."""
        with self.transaction(write=False) as conn:
            return [r[0] for r in conn.execute("SELECT id FROM runs WHERE parent_id = ? ORDER BY created_at, id",
                                               (run_id,)).fetchall()]

    def save_blame(self, rows: list[Blame]) -> None:
        """Single-turn replays go to the blame table, replays of several turns to blame_sets."""
        def outcome(b: Blame) -> tuple:
            return (b.fork_id, b.final_answer, None if b.correct is None else int(b.correct), b.calls, b.tokens,
                    b.created_at or time.time())
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO blame VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             [(b.run_id, b.round, b.agent, b.neutraliser, *outcome(b)) for b in rows if not b.also])
            conn.executemany("INSERT OR REPLACE INTO blame_sets VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [(b.run_id, json.dumps([list(t) for t in b.turns]), *outcome(b)) for b in rows if b.also])

    def blame_of(self, run_id: str) -> list[Blame]:
        """Every replay of a run: single turns first (by round, agent, neutraliser), then sets of turns."""
        with self.transaction(write=False) as conn:
            rows = conn.execute("SELECT * FROM blame WHERE run_id = ? ORDER BY round, agent, neutraliser",
                                (run_id,)).fetchall()
            sets = conn.execute("SELECT * FROM blame_sets WHERE run_id = ? ORDER BY turns", (run_id,)).fetchall()
        out = [Blame(**{**dict(r), "correct": None if r["correct"] is None else bool(r["correct"])}) for r in rows]
        for r in sets:
            (first, *rest) = [tuple(t) for t in json.loads(r["turns"])]
            out.append(Blame(run_id, first[0], first[1], first[2], r["fork_id"], r["final_answer"],
                             None if r["correct"] is None else bool(r["correct"]), r["calls"], r["tokens"],
                             r["created_at"], tuple(rest)))
        return out
