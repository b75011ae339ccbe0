"""The run store's annotation queues: an Inspect filter saved under a name, with how many people should
label each of its runs and whether they label blind. Checking a queue and ordering its runs is annotation/'s."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from r2mad.runs.records import dumps


@dataclass(frozen=True)
class Queue:
    name: str
    filters: dict[str, Any] = field(default_factory=dict)
    annotators_per_run: int = 1
    blind: bool = False

    @property
    def frozen(self) -> bool:
        """A snapshot of runs (the ids matching when it was made), not a live filter that new runs join."""
        return "runs" in self.filters


class Queueing:
    """The queue methods of the RunStore (store.py), which gives `transaction`."""

    def save_queue(self, queue: Queue) -> None:
        """Create or replace the queue of that name (checked by annotation/queues.py)."""
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO queues VALUES (?, ?, ?, ?, ?)",
                         (queue.name, dumps(queue.filters), int(queue.annotators_per_run), int(bool(queue.blind)),
                          time.time()))

    def queues(self) -> dict[str, Queue]:
        """Every queue by name, in name order."""
        with self.transaction(write=False) as conn:
            rows = conn.execute("SELECT * FROM queues ORDER BY name").fetchall()
        return {r["name"]: Queue(r["name"], json.loads(r["filters"]), r["annotators_per_run"], bool(r["blind"]))
                for r in rows}
