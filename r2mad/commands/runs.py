"""`runs` (list saved runs, show one), `export`, `import` and `rerun` subcommands over the SQLite run store."""
from __future__ import annotations

import asyncio
import os
import sys

from r2mad.commands.common import open_store as _store
from r2mad.commands.common import whole_in
from r2mad.runs.io import (
    export_annotations_csv,
    export_jsonl,
    import_jsonl,
    push_to_hub,
)
from r2mad.text import quoted

OUTCOMES = {"correct": {"correct": True}, "wrong": {"correct": False}, "unscored": {"scored": False}}


def outcome_word(correct: bool | None) -> str:
    return "unscored" if correct is None else "correct" if correct else "wrong"


def run_line(r) -> str:
    """One saved run in a line: id, when, method, backbone, where it started, status, outcome, the question."""
    from datetime import datetime, timezone

    when = datetime.fromtimestamp(r.created_at, timezone.utc).strftime("%Y-%m-%d %H:%M")
    question = " ".join(r.question.split())
    question = question if len(question) <= 60 else question[:59] + "…"
    return (f"{r.id[:12]}  {when}  {r.method}  {r.backbone}  {r.source}  {r.status}  "
            f"{outcome_word(r.correct)}  {question}")


def cmd_runs(args, config) -> int:
    """The saved runs, newest first, filtered; or one run in full (`runs show ID`)."""
    store = _store(config)
    if args.action == "show":
        return show_run(store, args.run_id)
    filters = {"method": args.method, "source": args.source, **OUTCOMES.get(args.outcome, {})}
    rows = store.list_runs(limit=args.limit, **filters)
    if not rows:
        filtered = any(v is not None for v in filters.values())
        print("No saved run matches these filters; drop one to see more." if filtered else
              "No saved runs yet; `python -m r2mad debate` starts one.")
        return 0
    print("id            created (UTC)     method  backbone  source  status  outcome  question")
    for r in rows:
        print(run_line(r))
    total = store.count_runs(**filters)
    if total > len(rows):
        print(f"({len(rows)} of {total}; --limit shows more)")
    return 0


def show_run(store, run_id: str) -> int:
    """One run: what it asked and answered, its labels and the debate round by round (scrubbed as stored)."""
    from r2mad.commands.common import print_transcript

    try:
        r = store.get_run(run_id)
    except KeyError:
        raise ValueError(f"No saved run has the id {quoted(run_id)}; `python -m r2mad runs` lists them.") from None
    print(f"Run {r.id} · {r.method} on {r.backbone} · from {r.source} · {r.status}"
          + (f" ({r.status_note})" if r.status_note else ""))
    print(f"Question: {r.question}")
    print(f"Gold: {r.gold if r.gold is not None else 'none'} · final: {r.final_answer} · {outcome_word(r.correct)}")
    if r.bank:
        print(f"Bank: {r.bank}")
    for a in r.annotations:
        print(f"Labels by {a.annotator}: {', '.join(a.labels) or 'none'}" + (f" — {a.note}" if a.note else ""))
    if r.transcript is not None:
        print()
        print_transcript(store.scrub_transcript(r.transcript))
    return 0


def _is_jsonl(path: str | None) -> bool:
    return bool(path) and str(path).endswith(".jsonl")


def cmd_export(args, config) -> int:
    store = _store(config)
    if not args.out and not args.hub:
        print("error: Say where to export: --out runs.jsonl (a file), --out DIR (a Parquet dataset) or --hub "
              "user/name.", file=sys.stderr)
        return 2
    if args.hub or not _is_jsonl(args.out):
        try:
            return _export_dataset(store, args)
        except (RuntimeError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    count = export_jsonl(store, args.out, args.run or None)
    print(f"Exported {count} runs with their annotations to {args.out}")
    if args.csv:
        print(f"Wrote {export_annotations_csv(store, args.csv)} annotation rows to {args.csv}")
    if args.push:
        url = push_to_hub(args.out, args.push, os.environ.get("HF_TOKEN"))
        print(f"Pushed to {url}")
    return 0


def _export_dataset(store, args) -> int:
    import tempfile

    from r2mad.annotation.book import LabelBook
    from r2mad.exports.dataset import push_dataset, write_dataset
    folder = args.out or tempfile.mkdtemp(prefix="r2mad-dataset-")
    counts = write_dataset(LabelBook(store), folder, args.run or None)
    print(f"Wrote {counts['runs']} runs and {counts['labels']} label rows (Parquet + dataset card, with "
          f"{counts['votes']} visitors' votes) to {folder}")
    if args.hub:
        url = push_dataset(folder, args.hub, os.environ.get("HF_TOKEN"), endpoint=os.environ.get("HF_ENDPOINT"))
        print(f"Pushed to {url}")
    return 0


def cmd_import(args, config) -> int:
    from pathlib import Path
    if args.file and not Path(args.file).exists():
        print(f"error: No export at {args.file}; give a runs.jsonl file or a folder written by export --out.",
              file=sys.stderr)
        return 2
    store = _store(config)
    if args.hub or (args.file and Path(args.file).is_dir()):
        import tempfile

        from r2mad.annotation.book import LabelBook
        from r2mad.exports.dataset import pull_dataset, read_dataset
        try:
            folder = args.file or pull_dataset(args.hub, tempfile.mkdtemp(prefix="r2mad-dataset-"),
                                               os.environ.get("HF_TOKEN"), endpoint=os.environ.get("HF_ENDPOINT"))
            count = read_dataset(LabelBook(store), folder)
        except (RuntimeError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    elif args.file:
        count = import_jsonl(store, args.file)
    else:
        print("error: Say what to import: a runs.jsonl file, a dataset folder, or --hub user/name.", file=sys.stderr)
        return 2
    print(f"Imported {count} new or newer runs from {args.file or args.hub}")
    return 0


def cmd_rerun(args, config) -> int:
    """Start the same question, method, backbone, bank and settings again as a new run."""
    from r2mad.commands.common import print_transcript, report_notices
    from r2mad.engine.resources import Local
    from r2mad.engine.service import RunRequest, StoreSink, start

    store = _store(config)
    try:
        old = store.get_run(args.run_id)
    except KeyError as exc:  # one sentence, as for fork
        raise ValueError(exc.args[0]) from None
    aux, names = old.backbone, ()
    if old.transcript is not None and "," in old.backbone:  # a mixed-model run: each agent's own backbone
        aux, names = old.transcript.backbone, tuple(old.transcript.agent_backbones())
    request = RunRequest(old.task, (old.method,), config.settings.replace(**old.settings), aux, source="rerun",
                         agent_backbones=names, bank=old.bank)
    [runs] = asyncio.run(start([request], Local(config), StoreSink(store)))
    [(run_id, transcript)] = [(runs.run_ids[m], t) for m, t in runs.transcripts.items()]
    report_notices(store)
    print_transcript(store.scrub_transcript(transcript))
    print(f"Saved as run {run_id}")
    return 0 if transcript.status == "done" else 1


def register(sub) -> None:
    p = sub.add_parser("runs", help="list saved runs, newest first (filters below), or `runs show ID` for one")
    p.add_argument("--method", default=None, help="only runs of this method")
    p.add_argument("--outcome", choices=tuple(OUTCOMES), default=None, help="only correct, wrong or unscored runs")
    p.add_argument("--source", default=None, help="only runs started from here: cli, app, api, eval, serve, ...")
    p.add_argument("--limit", type=whole_in(1, 10_000), default=50, help="most runs listed (default 50)")
    p.set_defaults(func=cmd_runs, action=None)
    shown = p.add_subparsers(dest="action").add_parser("show", help="one saved run in full")
    shown.add_argument("run_id", help="its id, or the start of it as the list shows")
    p = sub.add_parser("export", help="export saved runs and annotations: JSONL (and CSV), or a Parquet "
                       "dataset with a card (to a folder or the Hub)")
    p.add_argument("--out", default=None, help="a .jsonl file, or a folder for the Parquet dataset")
    p.add_argument("--hub", default=None, metavar="REPO_ID", help="push the Parquet dataset to this HF "
                   "dataset repo (needs HF_TOKEN)")
    p.add_argument("--run", action="append", help="only this run id (repeat)")
    p.add_argument("--csv", default=None, help="also write the annotations as CSV here")
    p.add_argument("--push", default=None, metavar="REPO_ID", help="upload the export to this HF dataset repo "
                   "(needs HF_TOKEN)")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("import", help="import runs from an export file, a dataset folder or the Hub")
    p.add_argument("file", nargs="?", default=None)
    p.add_argument("--hub", default=None, metavar="REPO_ID", help="import the dataset in this HF repo")
    p.set_defaults(func=cmd_import)
    p = sub.add_parser("rerun", help="run a saved debate's configuration again")
    p.add_argument("run_id")
    p.set_defaults(func=cmd_rerun)
