"""The run service is the one way a saved run starts: a RunRequest is resolved, saved with this code's version,
run and its bank released; a fork that cannot run is refused before anything is saved or let into the line."""
from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

import r2mad
from r2mad.runs.store import RunStore
from r2mad.service import Fork, RunRequest, start
from r2mad.steer.fork import ForkSpec
from tests.helpers import FORK_SETTINGS, PLANET_MCQ, fork_replies, parent, save_run
from tests.scripted import ScriptedBackend

ROOT = Path(__file__).resolve().parents[1]


class Stub:
    """Resources that hand out one scripted backend and a pretend bank, and remember what was released."""

    def __init__(self):
        self.backend, self.released = ScriptedBackend(fork_replies), []

    def backends(self, request):
        return self.backend, request.backbone, []

    def bank(self, folder, task_kind):
        return (f"bank at {folder}", []) if folder else (None, [])

    def release(self, bank):
        self.released.append(bank)


def test_only_the_run_service_starts_a_saved_run():
    callers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "r2mad").rglob("*.py")
                     if re.search(r"\.start_run\(", p.read_text(encoding="utf-8")))
    assert callers == ["r2mad/service.py"]


def test_a_comparison_is_saved_per_method_with_source_owner_and_version(tmp_path):
    store, resources, seen = RunStore(tmp_path / "runs.sqlite"), Stub(), []
    request = RunRequest(PLANET_MCQ, ("cot", "mad"), FORK_SETTINGS.replace(rounds=2), "b", source="api",
                         owner="visitor-1")
    runs = asyncio.run(start(request, resources, store, on_update=lambda m, t: seen.append(m)))
    assert set(runs.run_ids) == set(runs.transcripts) == {"cot", "mad"}
    for method, run_id in runs.run_ids.items():
        record = store.get_run(run_id)
        assert (record.method, record.source, record.owner, record.code_version) == \
            (method, "api", "visitor-1", r2mad.__version__)
        assert record.status == runs.transcripts[method].status == "done"
        assert record.bank is None  # neither method uses a bank
    assert {"cot", "mad"} <= set(seen) and resources.released == [None]


def test_a_fork_is_linked_to_its_parent_and_a_refused_one_saves_nothing(tmp_path):
    from r2mad.steer.links import fork_of

    store, resources = RunStore(tmp_path / "runs.sqlite"), Stub()
    t, _ = parent("mad")
    parent_id = save_run(store, t)
    spec = ForkSpec(1, (), None, None)
    request = RunRequest(t.task, ("mad",), FORK_SETTINGS, "b", source="fork", fork=Fork(parent_id, t, spec))
    runs = asyncio.run(start(request, resources, store))
    assert fork_of(store, runs.run_ids["mad"])[0] == parent_id
    assert runs.transcripts["mad"].rounds[0].details.get("replayed")

    admitted = []

    async def admit():
        admitted.append(True)
    before = len(store.list_runs(limit=100))
    baseline = RunRequest(t.task, ("cot",), FORK_SETTINGS, "b", source="fork",
                          fork=Fork(parent_id, t, ForkSpec(1, (), "cot", None)))
    with pytest.raises(ValueError, match="single-agent baseline"):
        asyncio.run(start(baseline, resources, store, admit=admit))
    assert len(store.list_runs(limit=100)) == before and not admitted
