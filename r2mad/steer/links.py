"""Steering's view of the run store's lineage (runs/links.py): a fork's link to its parent as a ForkSpec. The
forks of a run and its blame replays are the store's own (store.forks_of, store.blame_of, store.save_blame)."""
from __future__ import annotations

from r2mad.runs.links import Blame
from r2mad.runs.store import RunStore
from r2mad.steer.fork import Change, ForkSpec

__all__ = ["Blame", "fork_of"]


def fork_of(store: RunStore, run_id: str) -> tuple[str | None, ForkSpec | None]:
    """(parent run id, what the fork changed), or (None, None) for a run that is no fork."""
    parent_id, data = store.fork_link(run_id)
    if not data:
        return parent_id, None
    spec = ForkSpec(data["from_round"], tuple(Change(**c) for c in data["changes"]), data.get("method"),
                    data.get("backbone"), data.get("rounds"))
    return parent_id, spec
