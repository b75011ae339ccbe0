"""One engine for every run: an eval row and a saved debate of the same (question, method, seed) come out of the
same `start` with the same transcript, calls and tokens; a batch shares its bank, refuses before any call, and
only r2mad/engine/service.py starts runs."""
from __future__ import annotations

import asyncio
import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from r2mad.engine.resources import Given
from r2mad.engine.service import RunRequest, StoreSink, start
from r2mad.evaluation.rows import read_rows
from r2mad.runs.store import RunStore
from r2mad.settings.config import ConfigError
from r2mad.types import to_dict
from tests import helpers
from tests.helpers import FORK_SETTINGS, PLANET_MCQ, PLANET_TASKS, answer_from, evaluate, make_eval_run
from tests.scripted import ScriptedBackend

ROOT = Path(__file__).resolve().parents[2]
CLOCK = {"started", "seconds", "started_at", "ended_at", "created_at"}  # wall-clock fields, never the same twice


def timeless(value):
    """A transcript's dict without its wall-clock fields."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in CLOCK}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def test_an_eval_row_and_a_saved_debate_of_the_same_seed_are_the_same_debate(tmp_path):
    run = make_eval_run(methods=("cot", "mad", "madm2-subjective"), limit=2)
    run = dataclasses.replace(run, settings=run.settings.replace(seed=7), seeds=2)
    evaluate(run, tmp_path / "ev")
    rows = {(r["question_id"], r["method"], r["seed"]): r for r in read_rows(tmp_path / "ev" / "rows.jsonl")}
    assert len(rows) == 2 * 3 * 2  # questions x methods x seeds

    store = RunStore(tmp_path / "runs.sqlite")
    for seed in (7, 8):
        for task in run.split.tasks:  # the same request eval makes: every method, round 0 shared
            request = RunRequest(task, run.methods, run.settings.replace(seed=seed), run.backbone, source="cli",
                                 share_round0=True)
            [runs] = asyncio.run(start([request], Given(ScriptedBackend(answer_from)), StoreSink(store)))
            for method, t in runs.transcripts.items():
                row = rows[(task.id, method, seed)]
                saved = store.get_run(runs.run_ids[method]).transcript
                assert timeless(to_dict(saved)) == timeless(row["transcript"])
                usage = saved.usage()
                assert (usage.calls, usage.tokens_in, usage.tokens_out) == (
                    sum(u["calls"] for u in row["usage_by_model"].values()), row["tokens"]["input"],
                    row["tokens"]["output"])
                assert usage.calls > 0 and (row["final"], row["correct"]) == (t.final.value, t.correct)


def test_a_rerun_with_some_methods_left_shares_the_same_round0(tmp_path):
    """A resumed eval runs only the methods without a row and still shares round 0, so its debates match an
    uninterrupted run's."""
    whole = make_eval_run(methods=("mad", "madm2-subjective"), limit=1)
    evaluate(whole, tmp_path / "whole")
    half = make_eval_run(methods=("mad",), limit=1)
    evaluate(half, tmp_path / "half")  # only mad has a row here
    shutil.copy(tmp_path / "whole" / "run.json", tmp_path / "half" / "run.json")
    evaluate(whole, tmp_path / "half")  # continues with madm2-subjective alone
    get = lambda folder: {r["method"]: timeless(r["transcript"]) for r in read_rows(tmp_path / folder / "rows.jsonl")}
    assert get("half")["madm2-subjective"] == get("whole")["madm2-subjective"]
    assert get("half")["madm2-subjective"]["shared_round0"]


bank = helpers.bank  # a real bank on disk that holds PLANET_TASKS (q0-q3)


def test_a_batch_is_refused_before_any_call_when_one_question_is_in_the_bank(tmp_path, bank):
    backend = ScriptedBackend(answer_from)
    fresh = dataclasses.replace(PLANET_MCQ, id="fresh", question="Which planet spins fastest?")
    requests = [RunRequest(t, ("r2mad",), FORK_SETTINGS, "scripted", source="cli", bank="planets")
                for t in (fresh, PLANET_TASKS[2])]
    store = RunStore(tmp_path / "runs.sqlite")
    with pytest.raises(ConfigError, match="holds question q2"):
        asyncio.run(start(requests, Given(backend, bank=bank), StoreSink(store), concurrency=2))
    assert not backend.calls and not store.list_runs(limit=10)


def test_every_saved_or_evaluated_run_starts_in_the_engine():
    """grep: the run store's start_run and the debates of eval and the app are reached only through start."""
    def callers(pattern: str) -> list[str]:
        return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "r2mad").rglob("*.py")
                      if re.search(pattern, p.read_text(encoding="utf-8")))
    assert callers(r"\.start_run\(") == ["r2mad/engine/service.py"]
    assert callers(r"\brun_methods\(") == [  # and the speed bench, which times the loop and keeps nothing
        "r2mad/bench/speed.py", "r2mad/engine/runner.py", "r2mad/engine/service.py"]
    assert callers(r"\bcompute_round0\(") == ["r2mad/engine/runner.py"]
    assert "Resolved" not in (ROOT / "r2mad/engine/service.py").read_text(encoding="utf-8")
    assert callers(r"\bawait start\(|asyncio\.run\(start\(|create_task\(start\(") == sorted(
        ["r2mad/cli.py", "r2mad/commands/runs.py", "r2mad/commands/steer.py", "r2mad/engine/evaluate.py",
         "r2mad/serving/live.py", "r2mad/serving/visitor_runs.py", "r2mad/ui/examples.py"])
