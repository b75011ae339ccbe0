"""Command line: `python -m r2mad debate | build-memory | eval | bench | export | import`.
Reads config files and environment variables (an edge of the system); prints human-readable output."""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from r2mad.backends.base import BackendError
from r2mad.bench import speed as bench
from r2mad.config import ConfigError, load_config
from r2mad.evaluation import evaluate
from r2mad.memory import build
from r2mad.memory.summaries import SUMMARIES
from r2mad.methods import METHODS
from r2mad.runs import cli as runs_cli
from r2mad.types import Transcript

SETTING_FLAGS = {  # flag -> DebateSettings field
    "agents": int, "rounds": int, "temperature": float, "top_p": float, "max_tokens": int, "seed": int,
    "k": int, "gamma": float, "policy": str, "samples": int, "pairing": str, "deadline_s": float,
    "answer_guard": str,
}


def add_settings_flags(p: argparse.ArgumentParser) -> None:
    for name, kind in SETTING_FLAGS.items():
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None)
    p.add_argument("--no-early-stop", action="store_true", help="run every round even when all agree")
    p.add_argument("--advice", action="store_true", help="add TrueMAD's one-to-one advice to a debate method")
    p.add_argument("--strict", action="store_true", help="MAD-M² subjective: also mask NOT SURE")
    p.add_argument("--no-confidence", action="store_true", help="R²-MAD without confidence annotations")
    p.add_argument("--prefetch-summaries", action="store_true",
                   help="R²-MAD: ask round summaries for likely stance patterns while agents answer")


def settings_from(args, config):
    changes = {k: getattr(args, k) for k in SETTING_FLAGS if getattr(args, k, None) is not None}
    if args.no_early_stop:
        changes["early_stop"] = False
    if args.strict:
        changes["strict"] = True
    if args.no_confidence:
        changes["use_confidence"] = False
    if args.prefetch_summaries:
        changes["prefetch_summaries"] = True
    return config.settings.replace(**changes)


def parse_options(items: list[str]) -> dict[str, str] | None:
    options = {}
    for item in items or []:
        letter, sep, text = item.partition("=")
        if not sep or not text.strip():
            raise ConfigError(f"Option '{item}' should look like A=\"text of option A\".")
        options[letter.strip().upper()] = text.strip()
    return options or None


def print_transcript(t: Transcript, out=None, show_text: bool = False) -> None:
    w = (out or sys.stdout).write
    w(f"Method {t.method} on {t.backbone} — {t.task.kind} question\n")
    for note in t.notices:
        w(f"  note: {note}\n")
    for rnd in t.rounds:
        shared = " (shared round 0)" if rnd.details.get("shared") else ""
        w(f"\nRound {rnd.index}{shared} — consensus {rnd.consensus:.2f}\n")
        if rnd.details.get("summary"):
            w(f"  summary h: {rnd.details['summary']}\n")
        for turn in rnd.turns:
            if turn.error:
                w(f"  Agent {turn.agent + 1} ({turn.persona}): abstained — {turn.error}\n")
                continue
            w(f"  Agent {turn.agent + 1} ({turn.persona}): answer {turn.answer} [{turn.answer.how}] "
              f"· {turn.tokens_in}+{turn.tokens_out} tokens · {turn.seconds:.1f} s\n")
            for line in detail_lines(turn.details):
                w(f"      {line}\n")
            if show_text:
                w("      " + turn.text.strip().replace("\n", "\n      ") + "\n")
        for call in rnd.aux:
            who = f" agent {call.source + 1} -> agent {call.target + 1}" if call.source is not None else ""
            outcome = f"failed: {call.error}" if call.error else f"{call.tokens_in}+{call.tokens_out} tokens"
            w(f"  [{call.kind}{who}] {call.label or ''} · {outcome}\n")
    u = t.usage()
    verdict = "" if t.correct is None else (" — correct" if t.correct else f" — wrong (gold {t.task.gold})")
    w(f"\nFinal answer: {t.final}{verdict}  [{t.status}]\n")
    w(f"Usage: {u.calls} calls, {u.tokens_in} tokens in, {u.tokens_out} out, {t.seconds:.1f} s wall\n")


def detail_lines(d: dict) -> list[str]:
    """Method details of one turn in a line each: R²-MAD retrieval and confidence, MAD-M² masks, advice."""
    lines = []
    if "lambda" in d:
        lam = "n/a" if d["lambda"] is None else f"{d['lambda']:.2f}"
        lines.append(f"consensus {d['consensus']:.2f}, lambda {lam}, {len(d['candidates'])} candidates")
    for case in d.get("retrieved", []):
        mmr = "" if case["mmr"] is None else f", MMR {case['mmr']:.3f}"
        verdict = "correct" if case["correct"] else "wrong"
        lines.append(f"retrieved {case['case_id']}: similarity {case['similarity']:.3f}, reward "
                     f"{case['reward']:g}{mmr} (that agent was {verdict})")
    for peer, conf in d.get("confidence", {}).items():
        c = "n/a" if conf["c"] is None else f"{conf['c']:.2f}"
        lines.append(f"confidence in agent {int(peer) + 1}: {c} -> {conf['label'] or 'no annotation'}")
    if "shown" in d:
        lines.append("shown after masking: " + (", ".join(f"agent {j + 1}" for j in d["shown"]) or "none")
                     + (" (solved again alone)" if d.get("resolved_alone") else ""))
    if d.get("advice_from"):
        lines.append("advice from: " + ", ".join(d["advice_from"]))
    return lines


async def _debate(args, config) -> Transcript:
    import dataclasses
    import os

    import r2mad
    from r2mad.runner import backend_for, open_bank, run_debate
    from r2mad.runs.store import RunStore
    from r2mad.tasks import task_from_input

    settings = settings_from(args, config)
    task = task_from_input(args.question, parse_options(args.option), args.gold,
                           max_chars=settings.max_question_chars)
    backend = backend_for(config, args.backbone)
    bank, notices = open_bank(args.bank, config, task_kind=task.kind)
    method = args.method + ("+advice" if args.advice and args.method != "truemad" else "")
    key_env = config.backbone(args.backbone).api_key_env
    store = RunStore(config.app.runs_db,
                     secrets=lambda: [os.environ[key_env]] if key_env and os.environ.get(key_env) else [])
    run_id = store.start_run(method=method, backbone=args.backbone, bank=args.bank, task=task,
                             settings=dataclasses.asdict(settings), seed=settings.seed,
                             code_version=r2mad.__version__, source="cli")
    return await run_debate(task, method, backend, settings, backbone=args.backbone, bank=bank,
                            notices=tuple(notices),
                            record=lambda t: store.save_transcript(run_id, t, t.status))


def cmd_debate(args, config) -> int:
    transcript = asyncio.run(_debate(args, config))
    print_transcript(transcript, show_text=args.show_text)
    if args.json:
        Path(args.json).write_text(transcript.to_json(indent=1), encoding="utf-8")
        print(f"Transcript written to {args.json}")
    return 0 if transcript.status == "done" else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m r2mad", description="Multi-agent debate: MAD, MAD-M², "
                                     "TrueMAD, R²-MAD and single-agent baselines.")
    parser.add_argument("--config-dir", default=None, help="folder with backbones.yaml, methods.yaml, app.yaml")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("debate", help="run one debate and print it round by round")
    d.add_argument("--question", required=True)
    d.add_argument("--option", action="append", metavar='A="text"', help="a multiple-choice option (repeat)")
    d.add_argument("--gold", default=None, help="the correct answer, to score the debate")
    d.add_argument("--backbone", default=None)
    d.add_argument("--method", default="mad", help=f"one of {', '.join(METHODS)}")
    d.add_argument("--bank", default=None, help="memory bank folder for r2mad / icl-cot")
    d.add_argument("--json", default=None, help="write the transcript as JSON here")
    d.add_argument("--show-text", action="store_true", help="print every agent's full response")
    add_settings_flags(d)
    d.set_defaults(func=cmd_debate)
    for module in (build, evaluate, bench, runs_cli):  # each adds its own subcommands
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config_dir) if args.config_dir else load_config()
        if getattr(args, "backbone", "unset") is None:
            args.backbone = config.default_backbone
        SUMMARIES.keep_in(config.app.summaries_file)
        return args.func(args, config)
    except (ConfigError, BackendError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
