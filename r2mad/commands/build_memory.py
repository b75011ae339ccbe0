"""`build-memory`: run full-length debates on a training split and write each finished one into a memory bank
(r2mad/engine/build_memory.py). Resumable: questions already in the bank are skipped."""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from r2mad.engine.build_memory import build
from r2mad.memory.summaries import SummaryCache


def register(sub) -> None:
    from r2mad.commands.common import add_settings_flags, whole_in
    from r2mad.evaluation import catalog

    p = sub.add_parser("build-memory", help="debate a training split and write a memory bank")
    p.add_argument("--task", required=True, help=f"dataset: {catalog.listed()} (or mcq / math for files in the "
                   "demo schema)")
    p.add_argument("--data", default=None, help="a local data file in the dataset's schema")
    p.add_argument("--split", default="train")
    p.add_argument("--split-seed", type=whole_in(0, 2**31 - 1), default=None,
                   help="seed of the 3:1 train/test split; use eval's --split-seed (both default to 0)")
    p.add_argument("--limit", type=whole_in(1, 10**7), default=None)
    p.add_argument("--memory-backbone", "--backbone", dest="backbone", default=None, metavar="NAME",
                   help="the one model that writes every debater's turns in the bank's debates, whatever "
                   "the debaters of a later eval are (as the authors built theirs); default: the default backbone")
    p.add_argument("--out", required=True, help="bank folder, e.g. memory/my-bank")
    p.add_argument("--embedder", default=None, metavar="NAME",
                   help="sentence-transformers model that embeds the bank's cases, recorded in its manifest "
                   "(BAAI/bge-m3 is the paper's; default: app.yaml's embedder, all-MiniLM-L6-v2 offline); "
                   "an existing bank keeps its own")
    p.add_argument("--concurrency", type=whole_in(1, 1024), default=1)
    add_settings_flags(p)
    p.set_defaults(func=cmd_build)


def cmd_build(args: argparse.Namespace, config) -> int:
    from tqdm import tqdm

    import r2mad
    from r2mad.backends.embedder import load_embedder
    from r2mad.commands.common import settings_from
    from r2mad.engine.resources import backend_for
    from r2mad.evaluation.catalog import load_split
    from r2mad.evaluation.datasets import DEFAULT_SPLIT_SEED
    from r2mad.memory.bank import MemoryBank
    from r2mad.memory.files import built_embedder, check_same_source

    dataset = {"mcq": "demo-mcq", "math": "demo-math"}.get(args.task, args.task)
    seed = DEFAULT_SPLIT_SEED if args.split_seed is None else args.split_seed
    split = load_split(dataset, args.split, data_file=args.data, seed=seed, limit=args.limit)
    settings = settings_from(args, config)
    out, index_root = Path(args.out), config.app.index_root
    embedder = load_embedder(args.embedder or built_embedder(out) or config.app.embedder)
    kind = split.tasks[0].kind if split.tasks else "mcq"
    source = {"dataset": split.dataset, "split": f"{split.dataset}:{args.split}", "split_seed": seed,
              "backbone": args.backbone}
    if (out / "manifest.yaml").exists():
        check_same_source(out, source)  # one bank, one split and one model
        bank = MemoryBank.open(out, embedder, index_root=index_root, expected_task=kind)
    else:
        bank = MemoryBank.create(out, task_kind=kind, split=source["split"], backbone=args.backbone,
                                 embedder=embedder, code_version=r2mad.__version__, index_root=index_root,
                                 dataset=split.dataset, split_seed=seed)
    backend = backend_for(config, args.backbone)
    bar = tqdm(total=len(split.tasks), initial=sum(bank.has_question(t.id) for t in split.tasks),
               desc="debates", unit="q", file=sys.stderr)
    stats = asyncio.run(build(split.tasks, bank, backend, settings,
                              concurrency=args.concurrency, progress=lambda t: bar.update(1),
                              summaries=SummaryCache(config.app.summaries_file)))
    bar.close()
    if stats["refused"]:
        print(f"warning: {stats['refused']}", file=sys.stderr)
    cases = bank.cases()
    per_agent = {}
    for case in cases:
        per_agent[case.agent] = per_agent.get(case.agent, 0) + 1
    positive = sum(c.reward > 0 for c in cases) / len(cases) if cases else 0.0
    print(f"Bank {out} (embedder {embedder.id}): {stats['questions']} new questions debated "
          f"({stats['skipped_existing']} already there, "
          f"{stats['failed']} failed and left out); cases per agent {per_agent}; "
          f"positive share {positive:.2f}; {stats['tokens']} tokens; {stats['seconds']} s.")
    return 0 if stats["failed"] == 0 else 1
