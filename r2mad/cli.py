"""Command line: `python -m r2mad debate | build-memory | eval | bench | export | import | judge | export-html | bank
| serve`.
Reads config files and environment variables (an edge of the system); prints human-readable output."""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from r2mad.backends.base import BackendError
from r2mad.commands import bank as bank_cli
from r2mad.commands import bench, build_memory, evaluate
from r2mad.commands import export_html as export_html_cli
from r2mad.commands import factuality as factuality_cli
from r2mad.commands import judge as judge_cli
from r2mad.commands import runs as runs_cli
from r2mad.commands import serve as serve_cli
from r2mad.commands import steer as steer_cli
from r2mad.commands import traces as traces_cli
from r2mad.commands.common import (
    add_backbone_flags,
    add_settings_flags,
    open_store,
    print_transcript,
    report_notices,
    settings_from,
)
from r2mad.engine.resources import Local
from r2mad.engine.service import RunRequest, StoreSink, backbone_plan, start
from r2mad.exports.live import install as install_traces
from r2mad.grading.kinds import KIND_NAMES
from r2mad.methods import METHODS, PLAIN, with_advice
from r2mad.runs.exits import scrub_logs
from r2mad.runs.faults import StoreError
from r2mad.safewrite import WriteFailed, is_disk_full, write_atomic, write_failed
from r2mad.settings.config import ConfigError, config_folder, env_secrets, load_config
from r2mad.text import quoted


def parse_options(items: list[str]) -> dict[str, str] | None:
    options = {}
    for item in items or []:
        letter, sep, text = item.partition("=")
        if not sep or not text.strip():
            raise ConfigError(f"Option {quoted(item)} should look like A=\"text of option A\".")
        options[letter.strip().upper()] = text.strip()
    return options or None


def debate_request(args, config) -> RunRequest:
    """The `debate` flags as a run request."""
    from r2mad.grading.tasks import task_from_input

    settings = settings_from(args, config)
    task = task_from_input(args.question, parse_options(args.option), args.gold,
                           max_chars=settings.max_question_chars, kind=args.kind)
    aux, names = backbone_plan(args.agent_backbones, args.aux_backbone, args.backbone)
    method = with_advice(args.method) if args.advice else args.method
    moderator = None
    if getattr(args, "interactive", False):  # a person in the debate, at the terminal (r2mad/human.py)
        from r2mad.human import typed

        moderator = typed()
    return RunRequest(task, (method,), settings, aux, source="cli", agent_backbones=tuple(names), bank=args.bank,
                      moderator=moderator)


def cmd_debate(args, config) -> int:
    request = debate_request(args, config)
    store = open_store(config)
    [runs] = asyncio.run(start([request], Local(config), StoreSink(store)))
    [transcript] = map(store.scrub_transcript, runs.transcripts.values())  # printed: no keys
    report_notices(store)
    from r2mad.evaluation.costs import price_table

    print_transcript(transcript, show_text=args.show_text, prices=price_table(config.backbones.values()))
    print(f"Saved as run {runs.run_ids[request.methods[0]]}")  # the id fork, blame and rerun take
    if args.json:
        write_atomic(Path(args.json), transcript.to_json(indent=1))
        print(f"Transcript written to {args.json}")
    return 0 if transcript.status == "done" else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m r2mad", description="Multi-agent debate: MAD, MAD-M², "
                                     "TrueMAD, R²-MAD and single-agent baselines.")
    parser.add_argument("--config-dir", default=None, help="folder with backbones.yaml, methods.yaml, app.yaml "
                        "(default: R2MAD_CONFIG_DIR, else configs/)")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("debate", help="run one debate and print it round by round")
    d.add_argument("--question", required=True)
    d.add_argument("--option", action="append", metavar='A="text"', help="a multiple-choice option (repeat)")
    d.add_argument("--gold", default=None, help="the correct answer, to score the debate")
    d.add_argument("--kind", choices=KIND_NAMES, default=None,
                   help="the answer kind (default: guessed from the question; options make it mcq)")
    d.add_argument("--backbone", default=None)
    d.add_argument("--method", default=PLAIN, help=f"one of {', '.join(METHODS)}")
    d.add_argument("--bank", default=None, help="memory bank folder for r2mad / icl-cot")
    d.add_argument("--json", default=None, help="write the transcript as JSON here")
    d.add_argument("--show-text", action="store_true", help="print every agent's full response")
    d.add_argument("--interactive", action="store_true", help="before each debate round, type a note for every "
                   "agent ('@2 …' for agent 2, 'seat 2: …' to write agent 2's turn); Enter goes on")
    add_settings_flags(d)
    add_backbone_flags(d)
    d.set_defaults(func=cmd_debate)
    # each adds its own subcommands
    for module in (build_memory, evaluate, bench, runs_cli, steer_cli, bank_cli, judge_cli,
                   export_html_cli, serve_cli, traces_cli, factuality_cli):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    install_traces()  # R2MAD_OTEL_ENDPOINT: finished runs as traces (nothing when unset)
    try:
        config = load_config(config_folder(args.config_dir))
        scrub_logs(env_secrets(config))  # whatever a command logs leaves without the environment's keys
        if getattr(args, "backbone", "unset") is None:
            args.backbone = config.default_backbone
        return args.func(args, config)
    except (ConfigError, BackendError, ValueError, StoreError, WriteFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk met by a library that writes files of its own (Qdrant, tqdm, ...)
        if not is_disk_full(exc):
            raise
        print(f"error: {write_failed(exc.filename, exc)}" if exc.filename else
              f"error: A write failed because the disk is full ({exc.strerror}); free some space and try again.",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
