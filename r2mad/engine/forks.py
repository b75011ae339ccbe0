"""Running a fork: the parent's recorded rounds replayed into the one debate loop, then live rounds.
Receives backends and a bank; reads no config and no environment."""
from __future__ import annotations

import asyncio
from typing import Callable

from r2mad.engine.runner import Setup, run_debate
from r2mad.grading.answers import is_unanimous
from r2mad.human import recorded, scripted
from r2mad.methods import is_debate, make_method, spec_of, takers
from r2mad.settings.config import DebateSettings
from r2mad.steer.fork import LIVE_KINDS, ForkSpec, replay_rounds
from r2mad.types import Round, Transcript

HOOKS = {"unmask": ("Unmasking a response", "MAD-M²'s masks"),  # kind -> (what it does, what it acts on)
         "drop-case": ("Dropping a retrieved case", "R²-MAD's memory block"),
         "replace-case": ("Replacing a retrieved case", "R²-MAD's memory block"),
         "drop-advice": ("Dropping advice", "TrueMAD's advice")}


def plan_fork(parent: Transcript, spec: ForkSpec, settings: DebateSettings,
              bank=None) -> tuple[str, tuple[Round, ...]]:
    """(the method the fork goes on with, the rounds it replays); a fork that cannot run is refused here
    with one sentence, before anything is saved or called. `bank`: the fork's (a replaced case must be in it)."""
    method = spec.method or parent.method
    spec_of(method)  # an unknown name is refused with the list of methods
    baseline = next((m for m in (parent.method, method) if not is_debate(m)), None)
    if baseline:
        raise ValueError(f"Only debates can be forked, and '{baseline}' is a single-agent baseline; "
                         "choose a debate method.")
    replay = replay_rounds(parent, spec)
    if len(replay[0].turns) != settings.agents:
        raise ValueError(f"The run has {len(replay[0].turns)} agents but the fork's settings ask for "
                         f"{settings.agents}; leave --agents out when forking.")
    if settings.rounds < spec.from_round:
        raise ValueError(f"The fork would have {settings.rounds} rounds, fewer than the {spec.from_round} it "
                         f"replays; raise --rounds to at least {spec.from_round}.")
    _check_live_changes(spec, method, settings, replay[-1], bank, parent)
    return method, replay


def _check_live_changes(spec: ForkSpec, method: str, settings: DebateSettings, before: Round, bank,
                        parent: Transcript) -> None:
    """Each change to round T's hooks must meet a hook of the fork's method that takes it, in a round the
    fork runs, about a response there was."""
    live = [c for c in spec.changes if c.kind in LIVE_KINDS]
    if not live:
        return
    if settings.rounds <= spec.from_round:
        raise ValueError(f"{HOOKS[live[0].kind][0]} acts on round {spec.from_round}, which this fork does not run; "
                         f"fork from an earlier round or raise the rounds above {spec.from_round}.")
    strategy = make_method(method, settings, bank=bank)
    for change in live:
        taker = next((x for x in (strategy, *strategy.plugins) if change.kind in x.steers), None)
        if taker is None:
            what, hooks = HOOKS[change.kind]
            raise ValueError(f"{what} acts on {hooks}, which '{method}' does not have; fork a run that has it "
                             f"or go on with such a method (e.g. {takers(change.kind)[0]}).")
        problem = taker.check_steer(change, strategy.settings)
        if problem:
            raise ValueError(problem)
        if change.kind == "unmask" and before.turns[change.agent].error is not None:
            raise ValueError(f"Agent {change.agent + 1} has no response in round {before.index} to unmask (its "
                             "call failed); unmask another agent.")
        if change.kind == "unmask" and any(c.kind == "mask" and c.agent == change.agent for c in spec.changes):
            raise ValueError(f"Agent {change.agent + 1} is both masked and unmasked; keep one of the two changes.")
    if settings.early_stop and is_unanimous([t.answer for t in before.turns], parent.task, parent.judged):
        raise ValueError(f"{HOOKS[live[0].kind][0]} acts on round {spec.from_round}, but every agent agrees after "
                         f"round {before.index}, so the debate stops early before it; turn early stop off "
                         "(--no-early-stop) or fork from an earlier round.")


def same_answer_notices(changed: Round) -> list[str]:
    """A forced answer the agent had already given changes only its text (the reasoning becomes the bare
    answer); say so, so that nobody reads the fork as a change of answer."""
    return [f"Agent {t.agent + 1} already answered {t.answer.value} in round {changed.index}; forcing it keeps "
            "that answer and replaces only the reasoning with the bare answer."
            for t in changed.turns if "answer" in (t.details.get("steer") or {})
            and t.details["steer"]["original_answer"] == str(t.answer)]


async def fork_debate(parent: Transcript, spec: ForkSpec, setup: Setup, *,
                      record: Callable[[Transcript], None] | None = None, emit=None, moderator=None) -> Transcript:
    """The fork of `parent` described by `spec`, on `setup`: rounds before `spec.from_round` taken from the record
    (no model call), the changes applied, then the debate goes on live with `spec.method` or the parent's.
    A person's notes and seats in the parent's live rounds are said again there (unless `moderator`)."""
    method, replay = await asyncio.to_thread(plan_fork, parent, spec, setup.settings, setup.bank)  # compares answers
    return await run_debate(parent.task, method, setup, record=record, emit=emit, replay=replay,
                            steer=tuple(c for c in spec.changes if c.kind in LIVE_KINDS),
                            fork_notices=same_answer_notices(replay[-1]), judged=parent.judged,
                            moderator=moderator or scripted(recorded(parent.rounds[len(replay):])))
