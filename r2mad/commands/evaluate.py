"""The `eval` subcommand: run methods over a benchmark split (evaluate.py), then write the report
(report.py)."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from r2mad.commands.common import (
    add_backbone_flags,
    add_settings_flags,
    settings_from,
    whole_in,
)
from r2mad.engine.evaluate import run_eval
from r2mad.engine.service import backbone_label, backbone_plan
from r2mad.evaluation import catalog
from r2mad.evaluation.benchmarks.du import DRAWS
from r2mad.evaluation.catalog import load_split
from r2mad.evaluation.costs import prices_of
from r2mad.evaluation.datasets import DEFAULT_SPLIT_SEED, Split
from r2mad.evaluation.paper_tables import write_paper_tables
from r2mad.evaluation.prereg import PREREG
from r2mad.evaluation.prereg import read as read_prereg
from r2mad.evaluation.report import write_report, write_table1
from r2mad.evaluation.rows import ROWS, RUN, EvalRun, parse_methods
from r2mad.grading.kinds import KIND_NAMES
from r2mad.methods import METHODS, is_debate, needs_bank, with_advice
from r2mad.settings.config import ConfigError, env_secrets


def register(sub) -> None:
    e = sub.add_parser("eval", help="run methods over a benchmark split (resumable) and write a report",
                       description="Writes OUT/run.json, OUT/rows.jsonl (one row per question x method), "
                       "OUT/report.md and plots. Rerun the same command to continue an interrupted run.")
    e.add_argument("--task", help=catalog.listed())
    e.add_argument("--split", default="test", help="train, test or all (default test)")
    e.add_argument("--data", default=None, help="local data file (jsonl, json or parquet) in the hub schema; "
                   "with --columns, your own data: a csv, tsv, jsonl, json or parquet file or a hub dataset id")
    e.add_argument("--columns", default=None, metavar="question=Q,answer=A,choices=C",
                   help="your own data's columns (roles question, answer, choices, id; choices=A+B+C+D for one option "
                        "a column; numbers from 0 for a CSV without a header); docs/own-data.md")
    e.add_argument("--kind", default=None, help=f"your own data's answer kind: {', '.join(KIND_NAMES)} "
                   "(default mcq with choices, else short)")
    e.add_argument("--limit", type=whole_in(1, 10**7), default=None, help="only the first N questions of the split")
    e.add_argument("--sample", choices=("authors", "first"), default=None,
                   help="which questions: the paper's own draw where its profile has one (Du et al.'s 100 of GSM8K "
                        "and MMLU under --profile du; the default there), or the split's first --limit")
    e.add_argument("--unparsed", choices=("authors", "wrong"), default=None,
                   help="a question with no parsed final answer in the paper's table: as the paper's evaluator "
                        "scores it (Du et al.: dropped from arithmetic, correct in GSM8K and MMLU; the default "
                        "under --profile du) or wrong")
    e.add_argument("--split-seed", type=whole_in(0, 2**31 - 1), default=DEFAULT_SPLIT_SEED,
                   help=f"seed of the 3:1 train/test split (default {DEFAULT_SPLIT_SEED}; build-memory's default too)")
    e.add_argument("--methods", default="cot,mad", help=f"comma-separated, from: {', '.join(METHODS)}")
    e.add_argument("--backbone", default=None)
    e.add_argument("--bank", default=None, help="memory bank folder for r2mad, its ablations and icl-cot")
    e.add_argument("--concurrency", type=whole_in(1, 1024), default=None,
                   help="questions in flight at once (default 32; 1 on a backend that answers one call at a time, "
                        "where more would only wait in line and run into the debate deadline)")
    e.add_argument("--independent-round0", action="store_true",
                   help="each debate method computes its own round 0 instead of sharing one")
    e.add_argument("--seeds", type=whole_in(1, 100), default=1,
                   help="run each method with N sampling seeds (seed, seed+1, ...); the report gives mean and spread")
    e.add_argument("--retry-failed", action="store_true", help="rerun rows whose debate failed")
    e.add_argument("--prereg", action="store_true",
                   help="before the first call, write the plan (methods, seeds, split, data digest, decision rule, "
                   "settings) to OUT/prereg.json with its sha256; the report says whether the run kept to it")
    e.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    e.add_argument("--report-only", action="store_true", help="only rebuild OUT/report.md and the plots")
    e.add_argument("--to-store", action="store_true",
                   help="also copy the debates that helped or hurt (ledger.md) into the run store for Inspect")
    e.add_argument("--combine", nargs="+", metavar="DIR", default=None,
                   help="with --report-only: write OUT/table1.md, Table 1 over these results folders")
    e.add_argument("--grow-batch", type=whole_in(1, 10**6), default=None, metavar="N",
                   help="a learning curve: after each eval of the bank's methods, debate N more training questions "
                   "into a copy of --bank (OUT/bank-NAME) and evaluate again; OUT/learning_curve.md and .png")
    e.add_argument("--grow-steps", type=whole_in(1, 1000), default=3, metavar="K",
                   help="with --grow-batch: how many batches to add (default 3)")
    e.add_argument("--out", required=True, help="results folder, e.g. results/NAME")
    add_settings_flags(e)
    add_backbone_flags(e)
    e.set_defaults(func=cmd_eval)


def cmd_eval(args, config) -> int:

    out = Path(args.out)
    if args.combine:
        missing = [d for d in args.combine if not (Path(d) / RUN).exists()]
        if not args.report_only:
            raise ConfigError("--combine only rebuilds tables from finished runs; add --report-only.")
        if missing:
            raise ConfigError(f"{missing[0]} has no {RUN}; pass results folders written by `eval`.")
        print(f"Table 1 written to {write_table1(args.combine, out / 'table1.md')}")
        if paper := write_paper_tables(args.combine, out / "paper_tables.md"):  # runs under a paper's profile
            print(f"The paper's tables written to {paper}")
        return 0
    if args.report_only:
        if not (out / RUN).exists():
            raise ConfigError(f"{out} has no {RUN}; run `python -m r2mad eval ... --out {out}` first.")
        print(f"Report written to {write_report(out, _to_store(out, config) if args.to_store else None)}")
        return 0
    if not args.task and not args.columns:
        raise ConfigError(f"--task is required; choose {catalog.listed()} (docs/benchmarks.md), or give --data "
                          "with --columns.")
    from r2mad.engine.resources import Local, check_agent_count

    settings = settings_from(args, config)
    if args.answer_guard is None:  # the papers count unparsed answers as they are
        settings = settings.replace(answer_guard="off")
    methods = parse_methods(args.methods, settings)
    aux, names = backbone_plan(args.agent_backbones, args.aux_backbone, args.backbone)
    mix = backbone_label(aux, names)
    if names:
        check_agent_count(names, settings.agents)  # refused before any call
    names = names if mix != aux else []  # every agent on the auxiliary backbone: not a mix
    if args.advice:  # TrueMAD's advice on every debate method; baselines stay as they are
        methods = tuple(dict.fromkeys(with_advice(m) if is_debate(m) else m for m in methods))
    if args.columns:  # your own data (evaluation/own_data.py)
        from r2mad.evaluation.own_data import load_own
        whole = load_own(args.data or "", args.columns, split=args.split, kind=args.kind)
    else:
        whole = load_split(args.task, args.split, data_file=args.data, seed=args.split_seed)
    sample = args.sample or ("authors" if settings.profile == "du" and args.task in DRAWS else "first")
    if sample == "authors":
        if args.task not in DRAWS:
            raise ConfigError(f"--sample authors: no paper's own draw of {args.task} is known; the draws are of "
                              f"{', '.join(DRAWS)} (Du et al.). Use --sample first.")
        drawn = DRAWS[args.task](whole.tasks)[:args.limit]
        split = Split(whole.name, whole.dataset, tuple(drawn), whole.seed, tuple(t.id for t in drawn))
    else:
        split = whole.head(args.limit)
    unparsed = args.unparsed or ("authors" if settings.profile == "du" else "wrong")
    if args.grow_batch:  # the curve grows a copy of the bank and evaluates only the methods that use one
        from r2mad.engine.learning_curve import copy_bank
        methods = tuple(m for m in methods if needs_bank(m))
        if not methods or not args.bank:
            raise ConfigError("--grow-batch measures a bank as it grows; give --bank and a method that uses it "
                              "(r2mad, its ablations or icl-cot).")
        args.bank = str(copy_bank(args.bank, out))
    run = EvalRun(split, methods, mix, settings, not args.independent_round0,
                  str(args.data) if args.data else None, args.limit, None, seeds=args.seeds,
                  prices=prices_of(config.backbone(aux)), agent_backbones=tuple(names),
                  aux_backbone=aux if names else None,
                  model_prices={n: prices_of(config.backbone(n)) for n in dict.fromkeys([aux, *names])}
                  if names else {}, sample=sample, unparsed=unparsed)
    resources = Local(config)
    eval_kw = dict(concurrency=args.concurrency, progress=not args.no_progress, retry_failed=args.retry_failed,
                   prereg=args.prereg, leak_split=whole, warn=lambda text: print(f"warning: {text}", file=sys.stderr),
                   secrets=env_secrets(config))
    try:
        if args.grow_batch:
            return _curve(args, run, resources, settings, aux, eval_kw)
        asyncio.run(run_eval(run, resources, out, bank=args.bank, **eval_kw))
    except KeyboardInterrupt:
        print(f"Stopped; the finished rows are kept in {out / ROWS}. Run the same command again to "
              "continue.", file=sys.stderr)
        return 130
    ids = _to_store(out, config) if args.to_store else None
    if args.prereg:
        print(f"Plan pre-registered in {out / PREREG} (sha256 {read_prereg(out)['sha256']}).")
    print(f"Rows in {out / ROWS}; report written to {write_report(out, ids)}")
    return 0


def _curve(args, run, resources, settings, aux, eval_kw) -> int:
    from r2mad.commands.bank import open_for_growth
    from r2mad.engine.learning_curve import learning_curve
    from r2mad.engine.resources import Given
    from r2mad.engine.service import RunRequest

    train = load_split(args.task, "train", data_file=args.data, seed=args.split_seed).tasks
    kind = run.split.tasks[0].kind if run.split.tasks else None
    bank = open_for_growth(args.bank, resources.config, task_kind=kind)  # opened even while empty: step 0
    try:  # the curve debates into the bank itself, so it holds the backends it made
        backend, agents = resources.backends(RunRequest(run.split.tasks[0], run.methods, settings, aux,
                                                        source="eval", agent_backbones=run.agent_backbones))
        given = Given(backend, agents, bank=bank, summaries=resources.summaries)
        points = asyncio.run(learning_curve(run, given, args.out, train=train, batch=args.grow_batch,
                                            steps=args.grow_steps, build_settings=settings, **eval_kw))
    finally:
        bank.close()
    for p in points:
        print(f"step {p.step}: {p.bank_cases} cases ({p.questions_added} questions added): "
              + ", ".join(f"{name} {a.value:.3f} (n={a.n})" for name, a in p.accuracy.items()))
    print(f"Learning curve written to {Path(args.out) / 'learning_curve.md'} (and .png, .html)")
    return 0


def _to_store(out: Path, config) -> dict:
    from r2mad.commands.common import open_store
    from r2mad.commands.to_store import store_ledger
    from r2mad.evaluation.results import load_results

    ids = store_ledger(load_results(out), open_store(config))
    print(f"{len(ids)} debates that the debate helped or hurt are in the run store {config.app.runs_db}; "
          f"their run ids are in {out / 'ledger.md'}, for the app's Inspect tab.")
    return ids
