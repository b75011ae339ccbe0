"""Running debates for the run service, `eval` and the benchmarks: backends + method + bank -> a finished debate,
and side-by-side comparisons that compute round 0 once. Backends and banks are resolved in r2mad/engine/resources.py."""
from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from r2mad.backends.affinity import debate_key
from r2mad.backends.base import ChatBackend
from r2mad.debate import Debate, EventSink
from r2mad.methods import PLAIN, is_debate, make_method, needs_bank
from r2mad.settings.config import ConfigError, DebateSettings
from r2mad.types import Event, Judged, Round, Task, Transcript


async def run_debate(task: Task, method: str, backend: ChatBackend, settings: DebateSettings, *,
                     backbone: str = "", bank=None, emit: EventSink | None = None,
                     round0: Round | None = None, notices: tuple[str, ...] = (),
                     record: Callable[[Transcript], None] | None = None, summaries=None,
                     replay: Sequence[Round] = (), steer: Sequence = (), fork_notices: Sequence[str] = (),
                     agent_backends: Sequence[tuple[str, ChatBackend]] = (), moderator=None, judge=None,
                     judged: Sequence[Judged] = ()) -> Transcript:
    """One debate. `bank` and its `notices` reach only methods that use a bank. `record` receives the
    loop's own transcript whenever it changes (status running, the round in progress included), at the
    end, and on cancellation (status cancelled): the run store and the app's live view plug in here;
    `emit` is for streaming live text. `round0` is a shared round 0 (side by side); `replay` recorded
    rounds taken over without model calls (a fork), `steer` the fork's changes to the first live round's
    hooks and `fork_notices` what to say about its changes; `agent_backends` one (name, backend) per agent;
    `moderator` a person's notes and seats between rounds (r2mad/human.py); `judge` grades the answers the rules
    leave undecided, `judged` the verdicts recorded before (a fork's parent's)."""
    if not needs_bank(method):
        bank, notices = None, ()
    if agent_backends and not is_debate(method):  # a single-agent baseline: agent 1's model answers
        (backbone, backend), agent_backends = agent_backends[0], ()
        notices = (*notices, f"Mixed models: {method} has a single agent; it runs on agent 1's backbone "
                             f"({backbone}).")
    strategy = make_method(method, settings, bank=bank, summaries=summaries)
    if needs_bank(method) and bank is None and not notices:
        notices = ("Memory off: no memory bank was given; this runs without retrieved cases.",)
    debate: Debate

    if round0 is not None and is_debate(method) and strategy.shares_round0:
        replay = (dataclasses.replace(round0, details={**round0.details, "shared": True}),)
    debate = Debate(backend, strategy, backbone=backbone, agent_backends=agent_backends,
                    moderator=moderator if is_debate(method) else None, judge=judge)
    debate.judged.extend(judged)
    debate.emit = _recording(debate, record, emit)
    try:
        transcript = await debate.run(task, replay=replay if is_debate(method) else (),
                                      notices=(*notices, *fork_notices),
                                      steer=steer)
    except asyncio.CancelledError:
        if record:
            record(debate.transcript("cancelled"))
        raise
    if record:
        record(transcript)
    return transcript


def _recording(debate: Debate, record, emit) -> EventSink:
    """An event sink that hands `record` the loop's transcript after every step, then streams the event."""
    def on_event(event: Event) -> None:
        if record and event.kind != "delta":
            record(debate.transcript("running"))
        if emit:
            emit(event)
    return on_event


async def compute_round0(task: Task, backend: ChatBackend, settings: DebateSettings, *,
                         emit: EventSink | None = None,
                         record: Callable[[Transcript], None] | None = None, backbone: str = "",
                         agent_backends: Sequence[tuple[str, ChatBackend]] = (), judge=None) -> Round:
    """Round 0 is the same for every debate method: each agent answers alone (on its own backbone)."""
    method = make_method(PLAIN, settings.replace(rounds=1, advice=False))
    method.wants_logprobs = True  # objective MAD-M² scores round 0 by its logprobs (when the backend has them)
    debate = Debate(backend, method, backbone=backbone, agent_backends=agent_backends, judge=judge)
    debate.emit = _recording(debate, record, emit)
    transcript = await debate.run(task)
    return transcript.rounds[0]


@dataclass(frozen=True)
class Setup:
    """What every debate of one request runs with: the backend (named `backbone`) of the auxiliary calls and of
    every agent unless `agent_backends` (one (name, backend) per agent), the settings, the bank and what to say
    about it, R²-MAD's summary cache, and the judge of undecided answers (grading/judge.py; None: no judge)."""
    backend: ChatBackend
    settings: DebateSettings
    backbone: str = ""
    agent_backends: tuple[tuple[str, ChatBackend], ...] = ()
    bank: Any = None
    bank_notices: tuple[str, ...] = ()
    summaries: Any = None
    judge: Any = None


async def run_methods(task: Task, methods: Sequence[str], setup: Setup, *, share_round0: bool | None = None,
                      emit_for: Callable[[str], EventSink | None] | None = None,
                      record_for: Callable[[str], Callable[[Transcript], None] | None] | None = None,
                      route: str | None = None, moderator=None) -> dict[str, Transcript]:
    """Run several methods on one question; debate methods share one round 0 and then fork. `share_round0`:
    None shares it when two or more debate methods run, True whenever one does (an eval whose other debate
    methods already have rows), False never. `record_for(method)` is that method's `record` (see run_debate);
    "round0" names the shared round 0. `route`: the calls' routing key (all on one replica behind a router).
    `moderator`: a person's notes and seats between rounds (r2mad/human.py), heard by every debate method."""
    if len(set(methods)) != len(methods) or not methods:
        raise ConfigError("Choose one or more different methods to compare.")
    emit_for = emit_for or (lambda name: None)
    record_for = record_for or (lambda name: None)
    debates = [m for m in methods if is_debate(m)]
    share = len(debates) > 1 if share_round0 is None else bool(share_round0 and debates)
    s = setup
    round0 = None
    with debate_key(route):  # the shared round 0 and every fork on one replica behind a router
        if share:
            round0 = await compute_round0(task, s.backend, s.settings, emit=emit_for("round0"),
                                          record=record_for("round0"), backbone=s.backbone,
                                          agent_backends=s.agent_backends, judge=s.judge)
        jobs = [run_debate(task, m, s.backend, s.settings, backbone=s.backbone, emit=emit_for(m), bank=s.bank,
                           notices=s.bank_notices, round0=round0 if is_debate(m) else None, record=record_for(m),
                           summaries=s.summaries, agent_backends=s.agent_backends, moderator=moderator,
                           judge=s.judge)
                for m in methods]
        results = await asyncio.gather(*jobs)
    return dict(zip(methods, results))
