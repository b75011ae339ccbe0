"""`python -m r2mad eval`'s runs: every (question, method, seed) not yet in the results folder
(r2mad/evaluation/rows.py), round 0 shared by a question's debate methods, a row written as each finishes."""
from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path

from r2mad.backends.affinity import debate_key
from r2mad.engine.runner import compute_round0, run_debate
from r2mad.evaluation.leakage import check_no_leakage
from r2mad.evaluation.prereg import register
from r2mad.evaluation.rows import ROWS, RUN, EvalRun, finished_keys, make_row, now, prepare_folder, read_rows
from r2mad.methods import is_debate
from r2mad.settings.config import ConfigError


async def run_eval(run: EvalRun, backend, out: str | Path, *, bank=None, bank_notices: tuple[str, ...] = (),
                   concurrency: int = 32, progress: bool = False, retry_failed: bool = False,
                   summaries=None, agent_backends=(), prereg: bool = False) -> Path:
    """Run every (question, method) not yet in `out`/rows.jsonl and append a row as each finishes.
    Returns the rows file. An exception stops the run; the rows written so far stay valid. `summaries`:
    R²-MAD's summary cache, shared by the run's debates; `agent_backends`: one (name, backend) per agent
    of a mixed-model run (named as run.agent_backbones), `backend` then makes the auxiliary calls. `prereg`:
    write the plan to OUT/prereg.json before the first call (prereg.register)."""
    if [name for name, _ in agent_backends] != list(run.agent_backbones):
        raise ConfigError("The agents' backends do not match the run's agent backbones; pass one per agent.")
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be 1 or more, not {concurrency}.")
    ids = run.split.ids
    dup = next((i for i, n in Counter(ids).items() if n > 1), None)
    if dup is not None:
        raise ConfigError(f"The split has two questions with the id {dup!r}; give every row its own id.")
    if bank is not None:
        check_no_leakage(bank, run.split)  # refuses a bank holding a test question, before any call
    out = Path(out)
    if prereg:
        register(out, run.config(), now(), started=(out / RUN).exists())
    prepare_folder(out, run)
    rows_path = out / ROWS
    done = finished_keys(read_rows(rows_path, repair=True), retry_failed=retry_failed)
    todo = [(i, task, seed, [m for m in run.methods if (task.id, m, seed) not in done])
            for seed in run.seed_values for i, task in enumerate(run.split.tasks)]
    todo = [item for item in todo if item[3]]
    total = len(run.split.tasks) * len(run.methods) * len(run.seed_values)
    from tqdm import tqdm

    bar = tqdm(total=total, initial=total - sum(len(m) for *_, m in todo), unit="row",
               desc=f"eval {run.split.dataset}", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    gate = asyncio.Semaphore(concurrency)
    with rows_path.open("a", encoding="utf-8") as sink:
        def write(row: dict) -> None:
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            sink.flush()
            bar.update(1)

        try:
            async with asyncio.TaskGroup() as group:
                for index, task, seed, methods in todo:
                    group.create_task(_run_question(index, task, seed, methods, run, backend, bank,
                                                    bank_notices, gate, write, summaries, agent_backends))
        except BaseExceptionGroup as group_error:
            raise _first(group_error) from None
        finally:
            bar.close()
    return rows_path


def _first(error: BaseException) -> BaseException:
    """The first real error inside (nested) task-group exception groups."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def _run_question(index, task, seed, methods, run, backend, bank, bank_notices, gate, write,
                        summaries, agent_backends=()) -> None:
    settings = run.settings if seed == run.settings.seed else run.settings.replace(seed=seed)
    # one routing key per question and seed: its shared round 0 and every method's fork on one replica
    with debate_key(f"{run.split.dataset}:{task.id}:{seed}"):
        async with gate:
            round0, round0_s = None, 0.0
            # Share one round 0 whenever the run has several debate methods, even if only some are left
            # on a rerun, so a resumed run records the same transcripts as an uninterrupted one.
            if run.share_round0 and sum(is_debate(m) for m in run.methods) > 1 and any(map(is_debate, methods)):
                started = time.monotonic()
                round0 = await compute_round0(task, backend, settings, backbone=run.loop_backbone,
                                              agent_backends=agent_backends)
                round0_s = time.monotonic() - started

            async def one(method: str) -> None:
                t = await run_debate(task, method, backend, settings, backbone=run.loop_backbone,
                                     bank=bank, notices=bank_notices, round0=round0 if is_debate(method) else None,
                                     summaries=summaries, agent_backends=agent_backends)
                seconds = t.seconds + (round0_s if is_debate(method) and round0 is not None else 0.0)
                write(make_row(index, task, method, run, t, seconds, seed))

            async with asyncio.TaskGroup() as group:
                for method in methods:
                    group.create_task(one(method))
