"""The engine is the one way a saved run starts: a RunRequest is resolved, saved with this code's version, run and
its bank released; a fork that cannot run is refused before anything is saved or let into the line."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from pathlib import Path

import pytest

import r2mad
from r2mad.engine.service import Fork, RunRequest, StoreSink, start
from r2mad.runs.store import RunStore
from r2mad.settings.config import ConfigError
from r2mad.steer.fork import ForkSpec
from tests import helpers
from tests.helpers import FORK_SETTINGS, PLANET_MCQ, PLANET_TASKS, fork_replies, parent, save_run
from tests.scripted import ScriptedBackend

ROOT = Path(__file__).resolve().parents[2]


class Stub:
    """Resources that hand out one scripted backend and a pretend bank, remember what was released and let
    a request in (`admitted` lists them) at once."""
    summaries = None

    def __init__(self):
        self.backend, self.released, self.let_in = ScriptedBackend(fork_replies, name="b"), [], []

    def backends(self, request):
        return self.backend, []

    def bank(self, folder, task_kind):
        return (f"bank at {folder}", []) if folder else (None, [])

    def release(self, bank):
        self.released.append(bank)

    @contextlib.asynccontextmanager
    async def admitted(self, request):
        self.let_in.append(request)
        yield None


def run(request, resources, store, **sink):
    [runs] = asyncio.run(start([request], resources, StoreSink(store, **sink)))
    return runs


def test_only_the_run_service_starts_a_saved_run():
    callers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "r2mad").rglob("*.py")
                     if re.search(r"\.start_run\(", p.read_text(encoding="utf-8")))
    assert callers == ["r2mad/engine/service.py"]


def test_a_comparison_is_saved_per_method_with_source_owner_and_version(tmp_path):
    store, resources, seen = RunStore(tmp_path / "runs.sqlite"), Stub(), []
    request = RunRequest(PLANET_MCQ, ("cot", "mad"), FORK_SETTINGS.replace(rounds=2), "b", source="api",
                         owner="visitor-1")
    runs = run(request, resources, store, on_update=lambda m, t: seen.append(m))
    assert set(runs.run_ids) == set(runs.transcripts) == {"cot", "mad"}
    for method, run_id in runs.run_ids.items():
        record = store.get_run(run_id)
        assert (record.method, record.source, record.owner, record.code_version) == \
            (method, "api", "visitor-1", r2mad.__version__)
        assert record.status == runs.transcripts[method].status == "done"
        assert record.bank is None  # neither method uses a bank
    assert {"cot", "mad"} <= set(seen) and resources.released == []  # no method opened a bank


def test_a_fork_is_linked_to_its_parent_and_a_refused_one_saves_nothing(tmp_path):
    from r2mad.steer.links import fork_of

    store, resources = RunStore(tmp_path / "runs.sqlite"), Stub()
    t, _ = parent("mad")
    parent_id = save_run(store, t)
    spec = ForkSpec(1, (), None, None)
    request = RunRequest(t.task, ("mad",), FORK_SETTINGS, "b", source="fork", fork=Fork(parent_id, t, spec))
    runs = run(request, resources, store)
    assert fork_of(store, runs.run_ids["mad"])[0] == parent_id
    assert runs.transcripts["mad"].rounds[0].details.get("replayed")

    before = len(store.list_runs(limit=100))
    baseline = RunRequest(t.task, ("cot",), FORK_SETTINGS, "b", source="fork",
                          fork=Fork(parent_id, t, ForkSpec(1, (), "cot", None)))
    with pytest.raises(ValueError, match="single-agent baseline"):
        run(baseline, resources, store)
    assert len(store.list_runs(limit=100)) == before and resources.let_in == [request]


bank = helpers.bank  # a real bank on disk that holds PLANET_TASKS (q0–q3)


class BankStub(Stub):
    def __init__(self, bank):
        super().__init__()
        self.held = bank

    def bank(self, folder, task_kind):
        return (self.held, []) if folder else (None, [])


def test_a_bank_that_holds_the_question_is_refused_before_anything_is_saved_or_called(tmp_path, bank):
    store, resources = RunStore(tmp_path / "runs.sqlite"), BankStub(bank)
    held, typed = PLANET_TASKS[0], dataclasses.replace(PLANET_TASKS[1], id=None)  # by id; by its text
    for task, how in ((held, "question q0"), (typed, "this question's text")):
        request = RunRequest(task, ("r2mad",), FORK_SETTINGS, "b", source="cli", bank="planets")
        with pytest.raises(ConfigError, match=f"holds {how}, so its cases would show the debaters the answer"):
            run(request, resources, store)
    t, _ = parent("mad")  # a fork of a debate on a held question, asked to go on with the bank
    parent_id = save_run(store, t)
    fork = RunRequest(held, ("r2mad",), FORK_SETTINGS, "b", source="fork", bank="planets",
                      fork=Fork(parent_id, dataclasses.replace(t, task=held), ForkSpec(1, (), "r2mad", None)))
    with pytest.raises(ConfigError, match="holds question q0"):
        run(fork, resources, store)
    assert len(store.list_runs(limit=100)) == 1 and not resources.let_in and not resources.backend.calls
    fresh = dataclasses.replace(PLANET_MCQ, question="Which planet has the most moons?", id="fresh")
    runs = run(RunRequest(fresh, ("r2mad",), FORK_SETTINGS.replace(rounds=2), "b", source="cli", bank="planets"),
               resources, store)
    assert runs.transcripts["r2mad"].status == "done"  # a question the bank does not hold runs with it
