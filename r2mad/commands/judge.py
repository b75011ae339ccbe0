"""`judge`: an LLM reads saved debates and proposes failure labels with the turn and a quoted span
(r2mad/annotation/judge.py), stored beside the detectors' suggestions; `judge --scores` prints its
agreement with the adjudicated labels per label."""
from __future__ import annotations

import asyncio
import sys


def judge_backbone(config, record, chosen: str | None) -> str:
    """The judge's backbone: the one asked for, else the run's auxiliary backbone where this config has
    it, else the default backbone."""
    if chosen:
        return chosen
    aux = record.transcript.backbone if record.transcript is not None else None
    return aux if aux in config.backbones else config.default_backbone


async def judge_runs(config, book, records, chosen: str | None, say=print) -> int:
    """Judge each record in turn; returns how many calls failed."""
    from r2mad.annotation.judge import judge_transcript
    from r2mad.annotation.judge_book import save_verdict
    from r2mad.backends.base import BackendError
    from r2mad.engine.resources import backend_for

    failed, backends = 0, {}
    for record in records:
        name = judge_backbone(config, record, chosen)
        backend = backends.setdefault(name, backend_for(config, name))
        try:
            verdict = await judge_transcript(backend, name, record.transcript, book.store.taxonomy)
        except BackendError as exc:
            say(f"run {record.id[:8]}: the judge's call failed ({exc}); nothing stored for it.")
            failed += 1
            continue
        save_verdict(book, record.id, verdict)
        say(f"run {record.id[:8]}: {verdict.judge} proposed {len(verdict.suggestions)} label(s), dropped "
            f"{len(verdict.dropped)} ({verdict.tokens} tokens)")
        for s in verdict.suggestions:
            say(f"  {s.label}: {s.summary}")
        for why in verdict.dropped:
            say(f"  dropped {why}")
    return failed


def cmd_judge(args, config) -> int:
    from r2mad.annotation.book import LabelBook
    from r2mad.annotation.judge_book import judge_markdown
    from r2mad.commands.common import open_store

    book = LabelBook(open_store(config))
    run_ids = list(args.run_ids or [])
    if args.adjudicated:
        run_ids += [r for r in book.finals() if r not in run_ids]
    if not run_ids and not args.scores:
        print("error: Say which runs the judge reads: run ids, or --adjudicated.", file=sys.stderr)
        return 2
    records = []
    for run_id in run_ids:
        try:
            record = book.store.get_run(run_id)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        if record.transcript is None or record.status == "running":
            print(f"skipped run {run_id[:8]}: it has not finished.")
            continue
        records.append(record)
    failed = asyncio.run(judge_runs(config, book, records, args.backbone)) if records else 0
    if args.scores:
        print(judge_markdown(book))
    return 1 if failed else 0


def register(sub) -> None:
    p = sub.add_parser("judge", help="an LLM proposes failure labels (with turn and quote) for saved runs")
    p.add_argument("run_ids", nargs="*", help="saved run ids (short ids work)")
    p.add_argument("--adjudicated", action="store_true", help="also every run with adjudicated final labels")
    p.add_argument("--backbone", default=None, help="the judge's backbone (default: each run's auxiliary backbone)")
    p.add_argument("--scores", action="store_true", help="print each judge's κ, precision and recall per label "
                   "against the adjudicated labels")
    p.set_defaults(func=cmd_judge)
