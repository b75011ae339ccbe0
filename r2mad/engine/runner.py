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
from r2mad.methods.base import Method
from r2mad.settings.config import ConfigError, DebateSettings
from r2mad.types import Event, Judged, Round, Task, Transcript


@dataclass(frozen=True)
class Setup:
    """What every debate of one request runs with: the backend of the auxiliary calls and of every agent unless
    `agent_backends` (one per agent; each backend knows its backbone's name), the settings, the bank and what to
    say about it, R²-MAD's summary cache, and the judge of undecided answers (grading/judge.py; None: no judge)."""
    backend: ChatBackend
    settings: DebateSettings
    agent_backends: tuple[ChatBackend, ...] = ()
    bank: Any = None
    bank_notices: tuple[str, ...] = ()
    summaries: Any = None
    judge: Any = None

    def debate(self, method: Method, *, moderator=None) -> Debate:
        """The loop for `method` on these backends (each agent's named as its backend names itself)."""
        return Debate(self.backend, method, moderator=moderator, judge=self.judge, agent_backends=self.agent_backends)


async def run_debate(task: Task, method: str, setup: Setup, *, round0: Round | None = None,
                     record: Callable[[Transcript], None] | None = None, emit: EventSink | None = None,
                     replay: Sequence[Round] = (), steer: Sequence = (), fork_notices: Sequence[str] = (),
                     moderator=None, judged: Sequence[Judged] = ()) -> Transcript:
    """One debate on `setup`, whose bank and its notices reach only methods that use a bank. `record` receives
    the loop's own transcript whenever it changes (status running, the round in progress included), at the
    end, and on cancellation (status cancelled): the run store and the app's live view plug in here;
    `emit` is for streaming live text. `round0` is a shared round 0 (side by side); `replay` recorded
    rounds taken over without model calls (a fork), `steer` the fork's changes to the first live round's
    hooks and `fork_notices` what to say about its changes; `moderator` a person's notes and seats between
    rounds (r2mad/human.py); `judged` the verdicts recorded before (a fork's parent's)."""
    notices = setup.bank_notices if needs_bank(method) else ()
    if not needs_bank(method):
        setup = dataclasses.replace(setup, bank=None)
    if setup.agent_backends and not is_debate(method):  # a single-agent baseline: agent 1's model answers
        setup = dataclasses.replace(setup, backend=setup.agent_backends[0], agent_backends=())
        notices = (*notices, f"Mixed models: {method} has a single agent; it runs on agent 1's backbone "
                             f"({setup.backend.name}).")
    strategy = make_method(method, setup.settings, bank=setup.bank, summaries=setup.summaries)
    if needs_bank(method) and setup.bank is None and not notices:
        notices = ("Memory off: no memory bank was given; this runs without retrieved cases.",)
    if round0 is not None and is_debate(method) and strategy.shares_round0:
        replay = (dataclasses.replace(round0, details={**round0.details, "shared": True}),)
    debate = setup.debate(strategy, moderator=moderator if is_debate(method) else None)
    debate.judged.extend(judged)
    try:
        transcript = await debate.run(task, replay=replay if is_debate(method) else (),
                                      notices=(*notices, *fork_notices), steer=steer,
                                      emit=_recording(debate, record, emit))
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


async def compute_round0(task: Task, setup: Setup, *, emit: EventSink | None = None,
                         record: Callable[[Transcript], None] | None = None) -> Round:
    """Round 0 is the same for every debate method: each agent answers alone (on its own backbone)."""
    method = make_method(PLAIN, setup.settings.replace(rounds=1, advice=False))
    method.wants_logprobs = True  # objective MAD-M² scores round 0 by its logprobs (when the backend has them)
    debate = setup.debate(method)
    transcript = await debate.run(task, emit=_recording(debate, record, emit))
    return transcript.rounds[0]


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
    round0 = None
    with debate_key(route):  # the shared round 0 and every fork on one replica behind a router
        if share:
            round0 = await compute_round0(task, setup, emit=emit_for("round0"), record=record_for("round0"))
        jobs = [run_debate(task, m, setup, emit=emit_for(m), round0=round0 if is_debate(m) else None,
                           record=record_for(m), moderator=moderator)
                for m in methods]
        results = await asyncio.gather(*jobs)
    return dict(zip(methods, results))
