"""Inspect's run drawer names the run a fork came from (with what it changed) and the forks made of a
run, and only those the visitor may read."""
from dataclasses import asdict
from types import SimpleNamespace

from r2mad.runs.store import RunStore
from r2mad.serving.visitors import Visitor
from r2mad.steer.fork import Change, ForkSpec
from r2mad.ui.inspect_tab import InspectHandlers
from tests.helpers import STORED_MCQ as MCQ
from tests.helpers import make_transcript


def saved(store: RunStore, owner: str | None) -> str:
    t = make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False)
    run_id = store.start_run(method="mad", backbone="b", bank=None, task=MCQ, settings={}, seed=0,
                             code_version="t", owner=owner)
    store.save_transcript(run_id, t, "done")
    return run_id


def test_the_drawer_names_parent_and_forks_the_visitor_may_read(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    parent, mine, theirs = saved(store, "ana"), saved(store, "ana"), saved(store, "bo")
    store.link_fork(mine, parent, asdict(ForkSpec(2, (Change("unmask", 2),))))
    store.link_fork(theirs, parent, asdict(ForkSpec(1)))
    h = InspectHandlers(SimpleNamespace(store=store))
    ana, everyone = Visitor("ana", annotator=False), Visitor(None)
    assert h._lineage(mine, ana) == f"Fork of run `{parent[:8]}` (from round 2, agent 3 unmasked at round 2)."
    assert h._lineage(parent, ana) == f"Forked into `{mine[:8]}`."  # bo's fork is not named to ana
    assert h._lineage(parent, everyone) == f"Forked into `{mine[:8]}`, `{theirs[:8]}`."
    assert h._lineage(theirs, ana) == f"Fork of run `{parent[:8]}` (from round 1)."
    assert h._lineage(mine, Visitor("cy", annotator=False)) == ""  # cy may read neither parent nor forks
