"""Visitors' blind votes: which debate of a side-by-side comparison convinced them most, chosen before the
methods' names and the gold answer were shown. One row per visitor per comparison, in its own table of the run
store's SQLite file (so a backup or a copy of the store carries the votes). A second vote on the same
comparison is refused, whichever visitor key it comes with: after the first the names are shown, and a second
vote would not be blind.

The visitor is kept as a hash of the key their runs are kept under (a browser id works like a password and is
never stored here) and, when signed in, their Hugging Face username."""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Iterable

from r2mad.runs.store import RunStore
from r2mad.types import Transcript, Vote

SCHEMA = """CREATE TABLE IF NOT EXISTS votes (
    comparison TEXT NOT NULL,   -- the comparison's run ids, sorted, joined by ','
    voter TEXT NOT NULL,        -- sha256 of the visitor's key, 16 hex characters
    username TEXT,              -- their Hugging Face login when signed in
    winner TEXT NOT NULL,       -- the run id of the debate they chose
    runs TEXT NOT NULL,         -- JSON: method -> run id, every debate of the comparison
    shown TEXT NOT NULL,        -- JSON: label shown ("Debate A") -> method
    created_at REAL NOT NULL,
    PRIMARY KEY (comparison, voter))"""


READ_AS_IDENTICAL: dict[tuple[str, str], bool] = {}  # (store, comparison) -> its debates read the same


class VoteRefused(ValueError):
    """A vote that cannot be counted, in one sentence."""


def identical(transcripts: Iterable[Transcript]) -> bool:
    """Whether two or more debates read the same from round 0 on: every agent's text and answer in every finished
    round, and the final answer (e.g. every method stopped after the shared round 0). Nothing to vote on."""
    seen = [(tuple((r.index, tuple((turn.agent, turn.text, turn.answer.value) for turn in r.turns))
                   for r in t.finished().rounds), t.final.value) for t in transcripts]
    return len(seen) > 1 and all(s == seen[0] for s in seen)


def comparison_id(run_ids: Iterable[str]) -> str:
    return ",".join(sorted(run_ids))


def voter_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


class VoteStore:
    def __init__(self, store: RunStore):
        self.store = store
        with store.transaction() as conn:
            conn.execute(SCHEMA)

    def record(self, *, runs: dict[str, str], winner_method: str, voter_key: str, shown: dict[str, str],
               username: str | None = None) -> Vote:
        """Count the vote for `winner_method` among `runs` (method -> run id); raises VoteRefused for a
        comparison of fewer than two debates, a winner not in it, or a second vote on the comparison (from
        any visitor key: a comparison is one visitor's, and a page can send any id)."""
        if len(runs) < 2 or winner_method not in runs:
            raise VoteRefused("A vote picks one debate of a side-by-side comparison of two or more; "
                              "nothing was counted.")
        vote = Vote(comparison_id(runs.values()), voter_hash(voter_key), runs[winner_method], dict(runs),
                    dict(shown), username, time.time())
        with self.store.transaction() as conn:
            # one vote per comparison, whoever sends it: a page may send several ids at once, and BEGIN
            # IMMEDIATE makes this read and the insert one step
            earlier = conn.execute("SELECT shown, winner, runs FROM votes WHERE comparison = ? LIMIT 1",
                                   (vote.comparison,)).fetchone()
            if earlier is None:
                conn.execute("INSERT INTO votes VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (vote.comparison, vote.voter, username, vote.winner, json.dumps(vote.runs),
                              json.dumps(vote.shown), vote.created_at))
        if earlier is not None:
            chose = next((label for label, m in json.loads(earlier["shown"]).items()
                          if json.loads(earlier["runs"]).get(m) == earlier["winner"]), "one debate")
            raise VoteRefused(f"This comparison already has its vote (for {chose}); one vote per comparison, "
                              "so this one was not counted.")
        return vote

    def votes(self, run_ids: Iterable[str] | None = None) -> list[Vote]:
        """Every vote, oldest first; with `run_ids`, those on a comparison holding one of them."""
        with self.store.transaction(write=False) as conn:
            rows = conn.execute("SELECT * FROM votes ORDER BY created_at, comparison, voter").fetchall()
        found = [Vote(r["comparison"], r["voter"], r["winner"], json.loads(r["runs"]), json.loads(r["shown"]),
                      r["username"], r["created_at"]) for r in rows]
        if run_ids is None:
            return found
        wanted = set(run_ids)
        return [v for v in found if wanted & set(v.runs.values())]

    def counted(self) -> tuple[list[Vote], int]:
        """The votes the method board counts, oldest first, and how many it leaves out: a vote on debates that
        read the same (stored before such votes were refused) chose nothing. A comparison's runs are final once
        voted on, so each is read once per process."""
        found = self.votes()
        kept = [v for v in found if not self._identical(v.comparison, v.runs.values())]
        return kept, len(found) - len(kept)

    def _identical(self, comparison: str, run_ids: Iterable[str]) -> bool:
        key = (str(self.store.path), comparison)
        if key not in READ_AS_IDENTICAL:
            try:
                transcripts = [self.store.get_run(r).transcript for r in run_ids]
            except KeyError:  # a run deleted since: the vote stands as cast
                return False
            READ_AS_IDENTICAL[key] = None not in transcripts and identical(transcripts)
        return READ_AS_IDENTICAL[key]

    def add_rows(self, rows: Iterable[dict[str, Any]]) -> int:
        """Import exported rows (Vote.row); a vote already here is kept. Returns how many were added."""
        added = 0
        with self.store.transaction() as conn:
            for r in rows:
                added += conn.execute("INSERT OR IGNORE INTO votes VALUES (?, ?, ?, ?, ?, ?, ?)",
                                      (r["comparison"], r["voter"], r["username"], r["winner"], r["runs"],
                                       r["shown"], r["created_at"])).rowcount
        return added

    def correctness(self, run_ids: Iterable[str]) -> dict[str, bool | None]:
        """Whether each run's final answer was right (None: no gold, or not finished)."""
        ids, found = sorted(set(run_ids)), {}
        with self.store.transaction(write=False) as conn:
            for start in range(0, len(ids), 500):  # SQLite's limit on a query's parameters
                chunk = ids[start:start + 500]
                for r in conn.execute(f"SELECT id, correct FROM runs WHERE id IN ({','.join('?' * len(chunk))})",
                                      chunk):
                    found[r["id"]] = None if r["correct"] is None else bool(r["correct"])
        return found
