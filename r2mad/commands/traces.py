"""`export-otel`, `export-whowhen`, `import-whowhen`, `export-mpbench` and `import-mpbench`: saved runs as
OpenTelemetry traces (r2mad/exports/otel.py) and as the failure-attribution benchmarks' records."""
from __future__ import annotations

import sys
from pathlib import Path


def _ids(store, run_ids: list[str]) -> list[str]:
    ids = [store.full_id(r) for r in run_ids]
    for run_id in ids:
        store.get_run(run_id)  # KeyError: one sentence naming the id
    return ids


def cmd_export_otel(args, config) -> int:
    from r2mad.commands.common import open_store
    from r2mad.exports.otel import export_runs

    store = open_store(config)
    try:
        sent = export_runs(store, _ids(store, args.run_ids), args.endpoint, headers=dict(args.header or []),
                           project=args.project)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    print(f"Sent {sent.spans} spans of {len(args.run_ids)} run(s) to {args.endpoint}"
          + (f", with {sent.annotations} span annotations (labels and grades)" if sent.annotations else ""))
    if sent.note:
        print(f"note: {sent.note}", file=sys.stderr)
    return 0


def cmd_export_whowhen(args, config) -> int:
    from r2mad.commands.common import open_store
    from r2mad.exports.whowhen import export_runs

    store = open_store(config)
    try:
        written = export_runs(store, _ids(store, args.run_ids), Path(args.out), args.annotator)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    print(f"Wrote {len(written)} Who&When record(s) to {args.out}")
    return 0


def cmd_import_whowhen(args, config) -> int:
    from r2mad.commands.common import open_store
    from r2mad.exports.whowhen import import_files

    paths = [p for given in args.paths for p in (sorted(Path(given).glob("*.json")) if Path(given).is_dir()
                                                 else [Path(given)])]
    if not paths:
        raise ValueError(f"No .json file in {', '.join(args.paths)}; give Who&When files or their folder.")
    print(f"Saved the labels of {import_files(open_store(config), paths, args.annotator)} record(s)")
    return 0


def cmd_export_mpbench(args, config) -> int:
    from r2mad.commands.common import open_store
    from r2mad.exports.mpbench import export_runs

    store = open_store(config)
    try:
        written = export_runs(store, _ids(store, args.run_ids), Path(args.out))
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    folders = sorted({p.parent.name for p in written})
    print(f"Wrote {len(written)} MP-Bench record(s) to {args.out} (annotators: {', '.join(folders) or 'none'})")
    return 0


def cmd_import_mpbench(args, config) -> int:
    from r2mad.commands.common import open_store
    from r2mad.exports.mpbench import import_folder

    print(f"Saved the labels of {import_folder(open_store(config), Path(args.folder))} record(s)")
    return 0


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"Header {text!r} should look like NAME=VALUE.")
    return name.strip(), value.strip()


def register(sub) -> None:
    p = sub.add_parser("export-otel", help="send saved runs as OpenTelemetry traces (OTLP over HTTP)")
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="saved run ids (short ids work)")
    p.add_argument("--endpoint", required=True, help="the OTLP/HTTP traces URL, e.g. http://127.0.0.1:6006/v1/traces")
    p.add_argument("--header", action="append", type=_header, metavar="NAME=VALUE",
                   help="an HTTP header for the collector (repeat), e.g. Authorization=Basic ...")
    p.add_argument("--project", default="r2mad", help="the project the traces land in (Phoenix reads it)")
    p.set_defaults(func=cmd_export_otel)
    p = sub.add_parser("export-whowhen", help="write saved runs as Who&When records (one file per run)")
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    p.add_argument("--out", required=True, help="the folder for <run id>.json files")
    p.add_argument("--annotator", default=None, help="whose labels (default: the adjudicated ones, else the first)")
    p.set_defaults(func=cmd_export_whowhen)
    p = sub.add_parser("import-whowhen", help="read labels from Who&When records of saved runs")
    p.add_argument("paths", nargs="+", metavar="FILE_OR_FOLDER")
    p.add_argument("--annotator", default=None, help="who labelled them, when the records do not say")
    p.set_defaults(func=cmd_import_whowhen)
    p = sub.add_parser("export-mpbench", help="write saved runs as MP-Bench records (one folder per annotator)")
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    p.add_argument("--out", required=True, help="the folder that gets one folder per annotator")
    p.set_defaults(func=cmd_export_mpbench)
    p = sub.add_parser("import-mpbench", help="read labels from MP-Bench records (one folder per annotator)")
    p.add_argument("folder", help="the folder holding one folder per annotator")
    p.set_defaults(func=cmd_import_mpbench)
