"""The run store's side of steering: a fork's link to its parent (runs.parent_id and runs.fork) and
the blame tables (single turns, and sets of turns).
Uses RunStore's public transaction; the schema is in runs/records.py's MIGRATIONS."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from r2mad.runs.store import RunStore
from r2mad.steer.fork import Change, ForkSpec
from r2mad.text import quoted


def link_fork(store: RunStore, run_id: str, parent_id: str, spec: ForkSpec) -> None:
    with store.transaction() as conn:
        conn.execute("UPDATE runs SET parent_id = ?, fork = ? WHERE id = ?",
                     (parent_id, json.dumps(store.scrub(asdict(spec), keys=False)), run_id))


def fork_of(store: RunStore, run_id: str) -> tuple[str | None, ForkSpec | None]:
    """(parent run id, what the fork changed), or (None, None) for a run that is no fork."""
    with store.transaction(write=False) as conn:
        row = conn.execute("SELECT parent_id, fork FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise KeyError(f"No run {quoted(run_id)} in {store.path}; check the id.")
    if not row["fork"]:
        return row["parent_id"], None
    data = json.loads(row["fork"])
    spec = ForkSpec(data["from_round"], tuple(Change(**c) for c in data["changes"]), data.get("method"),
                    data.get("backbone"), data.get("rounds"))
    return row["parent_id"], spec


def forks_of(store: RunStore, run_id: str) -> list[str]:
    """The ids of the runs forked from `run_id`, oldest first."""
    with store.transaction(write=False) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM runs WHERE parent_id = ? ORDER BY created_at, id",
                                           (run_id,)).fetchall()]


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


def save_blame(store: RunStore, rows: list[Blame]) -> None:
    """Single-turn replays go to the blame table, replays of several turns to blame_sets."""
    def outcome(b: Blame) -> tuple:
        return (b.fork_id, b.final_answer, None if b.correct is None else int(b.correct), b.calls, b.tokens,
                b.created_at or time.time())
    with store.transaction() as conn:
        conn.executemany("INSERT OR REPLACE INTO blame VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [(b.run_id, b.round, b.agent, b.neutraliser, *outcome(b)) for b in rows if not b.also])
        conn.executemany("INSERT OR REPLACE INTO blame_sets VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [(b.run_id, json.dumps([list(t) for t in b.turns]), *outcome(b)) for b in rows if b.also])


def blame_of(store: RunStore, run_id: str) -> list[Blame]:
    """Every replay of a run: single turns first (by round, agent, neutraliser), then sets of turns."""
    with store.transaction(write=False) as conn:
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
