"""`python -m r2mad eval`'s runs through the engine: per (question, seed) one request of the methods not yet in the
results folder (r2mad/evaluation/rows.py), round 0 shared by its debate methods as side by side shares it, and
RowsSink writing a row as each method finishes."""
from __future__ import annotations

import dataclasses
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

from r2mad.engine.service import Record, Resources, RunRequest, start
from r2mad.evaluation.datasets import Split
from r2mad.evaluation.leakage import bank_record, check_no_leakage
from r2mad.evaluation.prereg import register
from r2mad.evaluation.rows import ROWS, RUN, EvalRun, finished_keys, make_row, now, prepare_folder, read_rows
from r2mad.grading.tasks import within_bound
from r2mad.methods import is_debate, needs_bank
from r2mad.runs.records import scrub
from r2mad.settings.config import ConfigError

QUESTIONS_AT_ONCE = 32  # when no backend says how many calls it decodes at once


def eval_requests(run: EvalRun, done: set, *, bank: str | None = None) -> list[RunRequest]:
    """One request per (question, seed) with its methods that have no row yet. Round 0 is shared whenever the
    run has several debate methods, even if only some are left on a rerun, so a resumed run records the same
    transcripts as an uninterrupted one; a question's calls carry one routing key."""
    share = run.share_round0 and sum(map(is_debate, run.methods)) > 1
    requests = []
    for seed in run.seed_values:
        settings = run.settings if seed == run.settings.seed else run.settings.replace(seed=seed)
        for task in run.split.tasks:
            methods = tuple(m for m in run.methods if (task.id, m, seed) not in done)
            if methods:
                requests.append(RunRequest(task, methods, settings, run.loop_backbone, source="eval",
                                           agent_backbones=run.agent_backbones, bank=bank, share_round0=share,
                                           route=f"{run.split.dataset}:{task.id}:{seed}"))
    # the first request checked brings the bank (its leak check and record in run.json): bank methods first
    return sorted(requests, key=lambda r: not any(map(needs_bank, r.methods)))


class RowsSink:
    """An eval's resumable rows as the engine's sink: before the first request runs, the bank is checked for
    the questions of `leak_split` (the whole split; refused in one sentence), the plan pre-registered when
    `prereg`, and run.json written (with the bank's record); then one row per method as it finishes. A
    question's shared round 0 counts in its debate methods' wall seconds. `warn` gets the bank's notices."""
    returns_transcripts = False  # they are in the rows

    def __init__(self, run: EvalRun, out: Path, write: Callable[[dict], None], *, leak_split: Split | None = None,
                 prereg: bool = False, warn: Callable[[str], None] | None = None):
        self.run, self.out, self.write, self.prereg = run, out, write, prereg
        self.leak_split, self.warn = leak_split or run.split, warn or (lambda text: None)
        self.index = {task.id: i for i, task in enumerate(run.split.tasks)}
        self.round0_s: dict[str, float] = {}  # request route -> seconds its shared round 0 took
        self._prepared, self._lock = False, threading.Lock()

    def prepare(self, bank, notices: Sequence[str] = ()) -> None:
        """Once, before any call: refuse a bank that holds a question, register the plan, write run.json."""
        with self._lock:
            if self._prepared:
                return
            leaks = check_no_leakage(bank, self.leak_split) if bank is not None else []
            wants = any(map(needs_bank, self.run.methods))
            for text in [*notices, *leaks] or ([] if bank is not None or not wants else [
                    "Memory off: no --bank given; r2mad and icl-cot run without retrieved cases."]):
                self.warn(text)
            if bank is not None:
                self.run = dataclasses.replace(self.run, bank=bank_record(bank))
            if self.prereg:
                register(self.out, self.run.config(), now(), started=(self.out / RUN).exists())
            prepare_folder(self.out, self.run)
            self._prepared = True

    def check(self, request: RunRequest, bank, notices: Sequence[str]) -> None:
        self.prepare(bank, notices)

    def open(self, request: RunRequest) -> dict[str, str]:
        return {}

    def record_for(self, request: RunRequest, run_ids: dict[str, str], column: str) -> Record | None:
        key, seed = request.route, request.settings.seed
        if column == "round0":  # its last record comes with the loop's final event: the whole round's time
            return lambda t: self.round0_s.__setitem__(key, t.seconds)

        def record(t) -> None:
            if t.status in ("running", "cancelled"):
                return
            seconds = t.seconds + (self.round0_s.get(key, 0.0) if is_debate(column) else 0.0)
            self.write(make_row(self.index[request.task.id], request.task, column, self.run, t, seconds, seed))
        return record

    def emit_for(self, request: RunRequest, column: str) -> Any:
        return None

    async def finished(self, run_ids: dict[str, str]) -> None:
        pass  # rows are written as each debate ends


async def run_eval(run: EvalRun, resources: Resources, out: str | Path, *, bank: str | None = None,
                   concurrency: int | None = None, progress: bool = False, retry_failed: bool = False,
                   prereg: bool = False, leak_split: Split | None = None,
                   warn: Callable[[str], None] | None = None, secrets: Sequence[str] = ()) -> Path:
    """Run every (question, method, seed) not yet in `out`/rows.jsonl through the engine and append a row as each
    finishes; returns the rows file. An exception stops the run; the rows written so far stay valid. `bank`: the
    bank folder the resources open for the methods that use one; `concurrency`: questions in flight (default:
    what the backends decode at once, else 32); `prereg`: write the plan to OUT/prereg.json before the first
    call (prereg.register); `leak_split`: the questions a bank must not hold (default the run's split); `secrets`:
    keys each row is scrubbed of on its way to disk (records.scrub), beside anything shaped like a token."""
    if concurrency is not None and concurrency < 1:
        raise ConfigError(f"--concurrency must be 1 or more, not {concurrency}.")
    dup = next((i for i, n in Counter(run.split.ids).items() if n > 1), None)
    if dup is not None:
        raise ConfigError(f"The split has two questions with the id {dup!r}; give every row its own id.")
    tasks, refused = within_bound(run.split.tasks, run.settings.max_question_chars)
    if refused:  # the rows over the question bound are never sent; the rest run
        if warn is not None:
            warn(refused)
        kept = {t.id for t in tasks}
        run = dataclasses.replace(run, split=dataclasses.replace(
            run.split, tasks=tuple(tasks), ids=tuple(i for i in run.split.ids if i in kept)))
    out = Path(out)
    rows_path = out / ROWS
    done = finished_keys(read_rows(rows_path, repair=True), retry_failed=retry_failed)
    requests = eval_requests(run, done, bank=bank)
    total = len(run.split.tasks) * len(run.methods) * len(run.seed_values)
    from tqdm import tqdm

    bar = tqdm(total=total, initial=total - sum(len(r.methods) for r in requests), unit="row",
               desc=f"eval {run.split.dataset}", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    handle = None  # opened at the first row: a refused run leaves no folder

    def write(row: dict) -> None:
        nonlocal handle
        handle = handle or rows_path.open("a", encoding="utf-8")
        handle.write(json.dumps(scrub(row, secrets, keys=False), ensure_ascii=False) + "\n")
        handle.flush()
        bar.update(1)

    sink = RowsSink(run, out, write, leak_split=leak_split, prereg=prereg, warn=warn)
    try:
        if not requests:  # nothing left to run: the folder is still checked and its record kept
            sink.prepare(None)
        else:
            at_once = concurrency or questions_at_once(resources, requests[0])
            await start(requests, resources, sink, concurrency=at_once)
    finally:
        bar.close()
        if handle is not None:
            handle.close()
    return rows_path


def questions_at_once(resources: Resources, request: RunRequest) -> int:
    """A backend that decodes a few sequences at once (the embedded model) gets about that many calls."""
    backend, agents = resources.backends(request)
    slots = min((b.capabilities.max_parallel for b in [backend, *agents]
                 if b.capabilities.max_parallel), default=None)
    return max(1, slots // max(1, request.settings.agents)) if slots else QUESTIONS_AT_ONCE

