"""Helpers every subcommand shares (debate, build-memory, eval, rerun): the debate-settings flags and
how they become DebateSettings, and how a transcript is printed. No subcommand lives here."""
from __future__ import annotations

import argparse
import sys

from r2mad.grading.kinds import kind_of
from r2mad.grading.outcome import agreement_line
from r2mad.grading.verdicts import how_graded, how_read
from r2mad.settings.config import ConfigError, DebateSettings, whole_number
from r2mad.settings.fields import BY_NAME, FIELDS
from r2mad.steer.fork import steer_notes
from r2mad.text import quoted
from r2mad.types import Transcript

SETTING_FLAGS = tuple(f for f in FIELDS if f.cli_flag)  # the settings a command line may set


def whole_in(lo: int, hi: int):
    """An argparse type for a flag's whole number within lo..hi; argparse says the problem and the range."""
    def parse(text: str) -> int:
        try:
            return whole_number(int(text), "the value", lo, hi)
        except ValueError as exc:  # not a whole number, or ConfigError: out of range
            problem = str(exc) if isinstance(exc, ConfigError) else f"expected a whole number, got {quoted(text)}"
            raise argparse.ArgumentTypeError(problem.removeprefix("the value: ").rstrip(".")) from None
    return parse


def add_settings_flags(p: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """One flag per settings field that has one (r2mad.settings.fields) but those named in `skip`, then --profile
    and --advice."""
    p.add_argument("--profile", choices=BY_NAME["profile"].choices, default=None,
                   help="paper: the papers' decoding (temperature 1.0, top_p 1.0, up to 6144 output tokens), "
                        "task personas with the answer format in the system prompt; demo (default): fast "
                        "settings for small models; truemad, du, madm2: the papers' decoding and that paper's "
                        "protocol (agents, rounds; docs/benchmarks.md). Flags given beside it win.")
    for f in SETTING_FLAGS:
        if f.name in skip:
            continue
        if f.kind is bool:
            p.add_argument(f.cli_flag, dest=f.name, action="store_const", const=not f.default(DebateSettings()),
                           default=None, help=f.help)
        else:
            p.add_argument(f.cli_flag, dest=f.name, type=f.kind, default=None, help=f.help or None,
                           metavar="{" + ",".join(f.choices) + "}" if f.choices else None)
    p.add_argument("--advice", action="store_true", help="add TrueMAD's one-to-one advice to a debate method")


def settings_from(args, config):
    changes = {f.name: getattr(args, f.name) for f in SETTING_FLAGS if getattr(args, f.name, None) is not None}
    if changes.get("prefetch_summaries"):  # only the pattern-only summary can be asked ahead
        changes.setdefault("summary", "pattern")
    settings = config.settings
    if getattr(args, "profile", None):
        from r2mad.settings.config import with_profile
        settings = with_profile(settings, args.profile)
    return settings.replace(**changes)


def open_store(config):
    """The configured run store for a command: it scrubs the environment's keys and any HF token from
    all it keeps, reads the config folder's label taxonomy, and faults it met are said on stderr."""
    from r2mad.runs.store import RunStore
    from r2mad.settings.config import env_secrets

    keys = env_secrets(config)
    store = RunStore(config.app.runs_db, secrets=lambda: keys, taxonomy=config.taxonomy_file,
                     lock_wait_s=config.app.store_lock_wait_s,
                     on_wait=lambda text: print(f"note: {text}", file=sys.stderr, flush=True))
    report_notices(store)
    return store


def report_notices(store) -> None:
    for notice in store.take_notices():
        print(f"note: {notice}", file=sys.stderr)


def print_transcript(t: Transcript, out=None, show_text: bool = False, prices=None) -> None:
    """The debate round by round; with `prices` (evaluation.costs.price_table: backbone name -> prices) the
    usage lines give its cost in money, per model for a mixed-model debate."""
    w = (out or sys.stdout).write
    kind = kind_of(t.task)
    w(f"Method {t.method} on {t.backbone} — answer kind: {kind.label}\n  {kind.agree}\n")
    for note in t.notices:
        w(f"  note: {note}\n")
    mixed = len({turn.backbone or t.backbone for rnd in t.rounds for turn in rnd.turns}) > 1
    for rnd in t.rounds:
        shared = (" (shared round 0)" if rnd.details.get("shared") else
                  " (replayed from the record)" if rnd.details.get("replayed") else "")
        w(f"\nRound {rnd.index}{shared} — consensus {rnd.consensus:.2f}\n")
        if rnd.details.get("summary"):
            w(f"  summary h: {rnd.details['summary']}\n")
        for turn in rnd.turns:
            if turn.error:
                w(f"  Agent {turn.agent + 1} ({turn.persona}): abstained — {turn.error}\n")
                continue
            model = f" on {turn.backbone}" if mixed else ""
            graded = how_graded(turn.answer, t.task, t.judged) if turn.answer.parsed else ""
            read = how_read(turn.answer, t.task) + (f"; {graded}" if graded else "")
            w(f"  Agent {turn.agent + 1} ({turn.persona}){model}: answer {turn.answer} [{read}] "
              f"· {turn.tokens_in}+{turn.tokens_out} tokens · {turn.seconds:.1f} s\n")
            for line in detail_lines(turn.details):
                w(f"      {line}\n")
            if show_text:
                w("      " + turn.text.strip().replace("\n", "\n      ") + "\n")
        for call in rnd.aux:
            who = f" agent {call.source + 1} -> agent {call.target + 1}" if call.source is not None else ""
            outcome = f"failed: {call.error}" if call.error else f"{call.tokens_in}+{call.tokens_out} tokens"
            w(f"  [{call.kind}{who}] {call.label + ' · ' if call.label else ''}{outcome}\n")
    u = t.usage()
    graded = how_graded(t.final, t.task, t.judged) if t.rounds else ""
    verdict = f" — {graded}" + (f" (gold {t.task.gold})" if t.correct is not True else "") if graded else ""
    w(f"\nFinal answer: {t.final}{verdict}  [{t.status}]\n")
    if t.rounds:
        w(f"Consensus: {agreement_line(t)}\n")
    per_model = t.usage_by_model()
    from r2mad.evaluation.costs import format_cost, model_costs, total_words

    costs = model_costs(per_model, prices or {})
    cost = "" if costs is None else f" ({total_words(costs)})"
    w(f"Usage: {u.calls} calls, {u.tokens_in} tokens in, {u.tokens_out} out{cost}, {t.seconds:.1f} s wall\n")
    if len(per_model) > 1:
        w("Usage by model: " + "; ".join(
            f"{name}: {m.calls} calls, {m.tokens_in} in, {m.tokens_out} out"
            + ("" if costs is None else f", {'price unknown' if costs[name] is None else format_cost(costs[name])}")
            for name, m in per_model.items()) + "\n")


def detail_lines(d: dict) -> list[str]:
    """Method details of one turn in a line each: R²-MAD retrieval and confidence, MAD-M² masks, advice."""
    lines = []
    if "lambda" in d:
        lam = "n/a" if d["lambda"] is None else f"{d['lambda']:.2f}"
        lines.append(f"consensus {d['consensus']:.2f}, lambda {lam}, {len(d['candidates'])} candidates")
    for case in d.get("retrieved", []):
        mmr = "" if case["mmr"] is None else f", MMR {case['mmr']:.3f}"
        verdict = "correct" if case["correct"] else "wrong"
        sim = "n/a" if case["similarity"] is None else f"{case['similarity']:.3f}"
        lines.append(f"retrieved {case['case_id']}: similarity {sim}, reward "
                     f"{case['reward']:g}{mmr} (that agent was {verdict})")
    for peer, conf in d.get("confidence", {}).items():
        c = "n/a" if conf["c"] is None else f"{conf['c']:.2f}"
        lines.append(f"confidence in agent {int(peer) + 1}: {c} -> {conf['label'] or 'no annotation'}")
    if "shown" in d:
        lines.append("shown after masking: " + (", ".join(f"agent {j + 1}" for j in d["shown"]) or "none")
                     + (" (solved again alone)" if d.get("resolved_alone") else ""))
    lines += [f"fork: {note}" for note in steer_notes(d)]
    if d.get("advice_from"):
        lines.append("advice from: " + ", ".join(d["advice_from"]))
    return lines


def add_backbone_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent-backbones", default=None, metavar="A,B,C",
                   help="one backbone per agent, comma-separated (a mixed-model debate)")
    p.add_argument("--aux-backbone", default=None,
                   help="backbone of summaries, judges and advice (default: agent 1's)")
