"""`bank add-runs | history | undo`: saved debates become memory cases with their provenance
(r2mad/memory/growth.py); the bank's history lists each batch and can undo one."""
from __future__ import annotations

import sys
from pathlib import Path


def open_for_growth(folder: str | Path, config, task_kind: str | None = None):
    """The bank at `folder` opened to write (its own embedder), or a BankError naming the fix."""
    from r2mad.memory.bank import MemoryBank, own_embedder

    return MemoryBank.open(Path(folder), own_embedder(folder, config.app.embedder), index_root=config.app.index_root,
                           expected_task=task_kind)


def grow(store, bank, run_ids, *, by: str, data_file=None):
    """Add these saved runs to an open bank under the leakage rule; (batch or None, refusals)."""
    from r2mad.annotation.book import LabelBook
    from r2mad.evaluation.leakage import eval_tasks
    from r2mad.memory.growth import Refused, add_runs

    records, missing = [], []
    for run_id in run_ids:
        try:
            records.append(store.get_run(run_id))
        except KeyError:
            missing.append(Refused(run_id, f"no saved run has id {run_id}; check it with `runs` or the Inspect tab."))
    batch, refused = add_runs(bank, records, by=by, tested=eval_tasks(bank, data_file),
                              finals=LabelBook(store).finals())
    return batch, missing + refused


def cmd_add_runs(args, config) -> int:
    from r2mad.annotation.book import LabelBook
    from r2mad.commands.common import open_store

    store = open_store(config)
    run_ids = list(args.run or [])
    if args.adjudicated:
        run_ids += [r for r in LabelBook(store).finals() if r not in run_ids]
    if args.gold:
        run_ids += [r.id for r in store.list_runs(status="done", limit=1_000_000)
                    if r.gold is not None and r.id not in run_ids]
    if not run_ids:
        print("error: Say which runs to add: --run ID (repeat), --adjudicated or --gold.", file=sys.stderr)
        return 2
    bank = open_for_growth(args.bank, config)
    try:
        batch, refused = grow(store, bank, run_ids, by=args.annotator, data_file=args.data)
    finally:
        bank.close()
    for r in refused:
        print(f"refused: {r.reason}")
    if batch is None:
        print(f"Nothing added to {args.bank}.")
        return 1
    print(f"Batch {batch.number}: {len(batch.runs)} runs, {len(batch.case_ids)} cases added to {args.bank} "
          f"by {batch.by} (undo with `bank undo {args.bank} {batch.number}`).")
    return 0


def cmd_history(args, config) -> int:
    from r2mad.memory.growth import history

    batches = history(args.bank)
    if not batches:
        print(f"Bank {args.bank} has no added runs (it holds only what build-memory wrote).")
    for b in batches:
        state = f"undone {b.undone_at} by {b.undone_by}" if b.undone_at else "in the bank"
        print(f"batch {b.number}  {b.added_at}  by {b.by}: {len(b.runs)} runs, {len(b.case_ids)} cases ({state})")
        for run in b.runs:
            labels = ("no adjudicated labels" if run["labels"] is None
                      else f"labels {', '.join(run['labels']) or 'none'}")
            print(f"  run {run['run']}  question {run['question_id']}  annotator {run['annotator']}  {labels}")
    return 0


def cmd_undo(args, config) -> int:
    from r2mad.memory.growth import undo

    removed = undo(args.bank, args.batch, by=args.annotator, reopen=lambda p: open_for_growth(p, config))
    print(f"Batch {args.batch} undone: {removed} cases removed from {args.bank} (its index was rebuilt).")
    return 0


def register(sub) -> None:
    p = sub.add_parser("bank", help="grow a memory bank from saved debates: add-runs, history, undo")
    actions = p.add_subparsers(dest="bank_command", required=True)
    a = actions.add_parser("add-runs", help="write finished debates with a gold answer into a bank as cases")
    a.add_argument("bank", help="bank folder, e.g. memory/demo-mcq")
    a.add_argument("--run", action="append", help="a saved run id (repeat)")
    a.add_argument("--adjudicated", action="store_true", help="every run with adjudicated final labels")
    a.add_argument("--gold", action="store_true", help="every finished run with a gold answer")
    a.add_argument("--annotator", required=True, help="who adds them (kept on every case)")
    a.add_argument("--data", default=None, help="the data file of the bank's dataset, for the leakage check")
    a.set_defaults(func=cmd_add_runs)
    h = actions.add_parser("history", help="list what was added to a bank, batch by batch")
    h.add_argument("bank")
    h.set_defaults(func=cmd_history)
    u = actions.add_parser("undo", help="take one batch's cases out of a bank again")
    u.add_argument("bank")
    u.add_argument("batch", type=int)
    u.add_argument("--annotator", default="cli", help="who undoes it (kept in the history)")
    u.set_defaults(func=cmd_undo)
