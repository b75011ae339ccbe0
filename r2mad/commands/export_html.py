"""`export-html RUN_ID`: one self-contained HTML file of a saved run (r2mad/exports/html.py) to open
anywhere, JavaScript off included."""
from __future__ import annotations

import dataclasses
from pathlib import Path


def cmd_export_html(args, config) -> int:
    from r2mad.annotation.book import LabelBook
    from r2mad.commands.common import open_store
    from r2mad.exports.html import run_page
    from r2mad.safewrite import write_atomic

    store = open_store(config)
    try:
        record = store.get_run(args.run_id)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    book = LabelBook(store)
    book.detect([record.id])
    if record.transcript is not None:  # saved scrubbed; scrubbed again for keys set since
        record = dataclasses.replace(record, transcript=store.scrub_transcript(record.transcript))
    html = run_page(record, book.suggestions(record.id), book.finals().get(record.id), store.taxonomy)
    out = Path(args.out or f"run-{record.id[:8]}.html")
    write_atomic(out, html)
    print(f"Run {record.id} written to {out} ({len(html.encode()) // 1024} KB, self-contained)")
    return 0


def register(sub) -> None:
    p = sub.add_parser("export-html", help="write one saved run as a self-contained HTML file")
    p.add_argument("run_id", help="a saved run id (a short id works)")
    p.add_argument("--out", default=None, help="the HTML file (default: run-<short id>.html)")
    p.set_defaults(func=cmd_export_html)
