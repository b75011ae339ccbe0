"""`fork` and `blame` subcommands: steer a saved run and save what comes of it, linked to the run."""
from __future__ import annotations

import asyncio
import dataclasses

from r2mad.commands.common import (
    add_backbone_flags,
    add_settings_flags,
    open_store,
    print_transcript,
    settings_from,
    whole_in,
)
from r2mad.engine.service import backbone_plan
from r2mad.steer.fork import ForkSpec, align, live_usage, parse_changes


class Steering:
    """One saved parent run and what running forks of it needs: the store, backends, bank, settings."""

    def __init__(self, args, config, run_id: str):
        self.config, self.args = config, args
        self.store = open_store(config)
        try:
            self.parent = self.store.get_run(run_id)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        if self.parent.transcript is None or not self.parent.transcript.finished().rounds:
            raise ValueError(f"Run {run_id} has no finished round to replay yet; choose a run with a transcript.")
        parent_cfg = dataclasses.replace(config, settings=config.settings.replace(**self.parent.settings))
        self.settings = settings_from(args, parent_cfg)

    def plan(self, spec: ForkSpec) -> tuple[str, list[str]]:
        """(auxiliary backbone, per-agent backbones or []) for a fork: flags first, else the parent's."""
        t, args = self.parent.transcript, self.args
        if getattr(args, "agent_backbones", None) or spec.backbone:
            return backbone_plan(args.agent_backbones, args.aux_backbone, spec.backbone or "")
        return backbone_plan(",".join(t.agent_backbones()), args.aux_backbone or t.backbone, t.backbone)

    async def fork(self, spec: ForkSpec, source: str = "fork", wrap=None):
        """Run the fork, saved as a new run linked to the parent; returns (run id, transcript). `wrap`
        wraps each backend (blame's call meter)."""
        from r2mad.engine.resources import Local
        from r2mad.engine.service import Fork, RunRequest, start
        from r2mad.memory.summaries import SummaryCache

        parent = self.parent
        aux, names = self.plan(spec)
        folder = getattr(self.args, "bank", None) or parent.bank  # e.g. a MAD run forked into r2mad
        request = RunRequest(parent.task, (spec.method or parent.method,), self.settings, aux, source=source,
                             agent_backbones=tuple(names), bank=folder, fork=Fork(parent.id, parent.transcript, spec))
        runs = await start(request, Local(self.config, wrap), self.store,
                           summaries=SummaryCache(self.config.app.summaries_file))
        [(method, t)] = runs.transcripts.items()
        return runs.run_ids[method], t


def cmd_fork(args, config) -> int:
    steering = Steering(args, config, args.run_id)
    changes = parse_changes(args.edit, args.answer, args.mask, args.unmask, args.drop_case, args.replace_case,
                            args.drop_advice)
    spec = ForkSpec(args.from_round, changes, args.method, args.fork_backbone, args.rounds)
    run_id, t = asyncio.run(steering.fork(spec))
    print_transcript(t, show_text=args.show_text)
    parent = steering.parent
    print(f"\nFork {run_id} of run {parent.id} ({spec.describe()}); {live_usage(t).calls} model calls "
          "made, none for the replayed rounds.")
    for row in align(parent.transcript, t):
        print("  ".join(f"{cell:<28}" for cell in row).rstrip())
    return 0 if t.status == "done" else 1


def cmd_blame(args, config) -> int:
    from r2mad.steer.blame import blame
    from r2mad.steer.links import save_blame

    steering = Steering(args, config, args.run_id)
    rows, skipped = asyncio.run(blame(steering.parent.transcript, steering.parent.id,
                                      lambda spec, wrap: steering.fork(spec, source="blame", wrap=wrap),
                                      args.budget, pairs=args.pairs))
    save_blame(steering.store, rows)
    for b in rows:
        verdict = ("cut by the budget (incomplete)" if b.correct is None else "turns it CORRECT" if b.correct
                   else f"still wrong ({b.final_answer or 'UNPARSED'})")
        turns = " + ".join(f"round {r} agent {a + 1} {how:<8}" for r, a, how in b.turns)
        print(f"{turns} -> {verdict} · {b.calls} calls · fork {b.fork_id}")
    singles, sets = [b for b in rows if not b.also], [b for b in rows if b.also]
    spent = sum(b.calls for b in rows)
    cut = sum(b.correct is None for b in rows)
    print(f"{sum(bool(b.correct) for b in singles)} of {len(singles)} single-turn replays turn the answer correct"
          + (f"; {sum(bool(b.correct) for b in sets)} of {len(sets)} pairs do" if args.pairs else "")
          + f"; {spent} calls of a budget of {args.budget}; {len(skipped)} left out for the budget, {cut} cut by "
          "it. Saved in the blame tables; annotators see the ones that turn it correct as suggestions.")
    if args.pairs and not sets and not any(b.correct for b in singles) and not skipped:
        print("No two wrong turns share a round, so there was no pair to try.")
    return 0


def register(sub) -> None:
    f = sub.add_parser("fork", help="replay a saved debate up to a round, change one thing, go on live")
    f.add_argument("run_id")
    f.add_argument("--from-round", type=whole_in(1, 100), required=True, metavar="T",
                   help="rounds before T are replayed from the record; --edit/--answer/--mask change round "
                        "T-1, the others act on round T's own hooks")
    f.add_argument("--edit", action="append", metavar="AGENT=TEXT", help="replace an agent's message (repeat)")
    f.add_argument("--answer", action="append", metavar="AGENT=X", help="force an agent's answer (repeat)")
    f.add_argument("--mask", action="append", metavar="AGENT", help="hide an agent's response from its peers")
    f.add_argument("--unmask", action="append", metavar="AGENT",
                   help="MAD-M²: show the agent's round T-1 response at round T whatever the masks decide")
    f.add_argument("--drop-case", action="append", metavar="AGENT=RANK",
                   help="R²-MAD: leave the case shown at RANK (from 1) out of the agent's memory block at round T")
    f.add_argument("--replace-case", action="append", metavar="AGENT=RANK:CASE_ID",
                   help="R²-MAD: show case CASE_ID of the agent's bank at RANK instead, at round T")
    f.add_argument("--drop-advice", action="append", metavar="AGENT=SOURCE",
                   help="TrueMAD / +advice: the advice SOURCE would write to AGENT at round T is not asked for")
    f.add_argument("--method", default=None, help="go on with another debate method")
    f.add_argument("--backbone", dest="fork_backbone", default=None,
                   help="go on with another backbone for every agent")
    f.add_argument("--bank", default=None, help="memory bank for r2mad / icl-cot (default: the run's)")
    f.add_argument("--show-text", action="store_true", help="print every agent's full response")
    add_settings_flags(f)
    add_backbone_flags(f)
    f.set_defaults(func=cmd_fork)
    b = sub.add_parser("blame", help="find the turn (or, with --pairs, two turns) of a failed run whose "
                                     "removal fixes the answer")
    b.add_argument("run_id")
    b.add_argument("--budget", type=whole_in(1, 10**6), default=60,
                   help="most model calls to spend on replays (default 60)")
    b.add_argument("--pairs", action="store_true",
                   help="when no single turn's replay fixes the answer, try pairs of turns of one round "
                        "(within the same budget)")
    add_settings_flags(b)
    b.set_defaults(func=cmd_blame, agent_backbones=None, aux_backbone=None)
