"""Steering's view of the run store's lineage (runs/links.py): a fork's link to its parent as a ForkSpec,
the forks of a run, and the blame replays (single turns, and sets of turns)."""
from __future__ import annotations

from dataclasses import asdict

from r2mad.runs.links import Blame
from r2mad.runs.store import RunStore
from r2mad.steer.fork import Change, ForkSpec

__all__ = ["Blame", "blame_of", "fork_of", "forks_of", "link_fork", "save_blame"]


def link_fork(store: RunStore, run_id: str, parent_id: str, spec: ForkSpec) -> None:
    store.link_fork(run_id, parent_id, asdict(spec))


def fork_of(store: RunStore, run_id: str) -> tuple[str | None, ForkSpec | None]:
    """(parent run id, what the fork changed), or (None, None) for a run that is no fork."""
    parent_id, data = store.fork_link(run_id)
    if not data:
        return parent_id, None
    spec = ForkSpec(data["from_round"], tuple(Change(**c) for c in data["changes"]), data.get("method"),
                    data.get("backbone"), data.get("rounds"))
    return parent_id, spec


def forks_of(store: RunStore, run_id: str) -> list[str]:
    """The ids of the runs forked from `run_id`, oldest first."""
    return store.forks_of(run_id)


def save_blame(store: RunStore, rows: list[Blame]) -> None:
    """Single-turn replays go to the blame table, replays of several turns to blame_sets."""
    store.save_blame(rows)


def blame_of(store: RunStore, run_id: str) -> list[Blame]:
    """Every replay of a run: single turns first (by round, agent, neutraliser), then sets of turns."""
    return store.blame_of(run_id)
