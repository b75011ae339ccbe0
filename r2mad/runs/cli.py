"""`export`, `import` and `rerun` subcommands over the SQLite run store."""
from __future__ import annotations

import asyncio
import os

from r2mad.cli_common import open_store as _store
from r2mad.memory.summaries import SummaryCache
from r2mad.runs.io import (
    export_annotations_csv,
    export_jsonl,
    import_jsonl,
    push_to_hub,
)


def cmd_export(args, config) -> int:
    store = _store(config)
    count = export_jsonl(store, args.out, args.run or None)
    print(f"Exported {count} runs with their annotations to {args.out}")
    if args.csv:
        print(f"Wrote {export_annotations_csv(store, args.csv)} annotation rows to {args.csv}")
    if args.push:
        url = push_to_hub(args.out, args.push, os.environ.get("HF_TOKEN"))
        print(f"Pushed to {url}")
    return 0


def cmd_import(args, config) -> int:
    count = import_jsonl(_store(config), args.file)
    print(f"Imported {count} new or newer runs from {args.file}")
    return 0


def cmd_rerun(args, config) -> int:
    """Start the same question, method, backbone, bank and settings again as a new run."""
    import r2mad
    from r2mad.cli_common import print_transcript, report_notices
    from r2mad.runner import backend_for, open_bank, run_debate

    store = _store(config)
    old = store.get_run(args.run_id)
    settings, task = config.settings.replace(**old.settings), old.task
    bank, notices = open_bank(old.bank, config, task_kind=task.kind)
    run_id = store.start_run(method=old.method, backbone=old.backbone, bank=old.bank, task=task,
                             settings=old.settings, seed=settings.seed,
                             code_version=r2mad.__version__, source="rerun")
    try:
        transcript = asyncio.run(run_debate(task, old.method, backend_for(config, old.backbone), settings,
                                            backbone=old.backbone, bank=bank, notices=tuple(notices),
                                            record=store.recorder(run_id),
                                            summaries=SummaryCache(config.app.summaries_file)))
    finally:
        if bank is not None:
            bank.close()
    report_notices(store)
    print_transcript(store.scrub_transcript(transcript))
    print(f"Saved as run {run_id}")
    return 0 if transcript.status == "done" else 1


def register(sub) -> None:
    p = sub.add_parser("export", help="export saved runs and annotations as JSONL (and CSV)")
    p.add_argument("--out", required=True)
    p.add_argument("--run", action="append", help="only this run id (repeat)")
    p.add_argument("--csv", default=None, help="also write the annotations as CSV here")
    p.add_argument("--push", default=None, metavar="REPO_ID", help="upload the export to this HF dataset repo "
                   "(needs HF_TOKEN)")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("import", help="import runs from an export file")
    p.add_argument("file")
    p.set_defaults(func=cmd_import)
    p = sub.add_parser("rerun", help="run a saved debate's configuration again")
    p.add_argument("run_id")
    p.set_defaults(func=cmd_rerun)
