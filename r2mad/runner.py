"""Running debates for the run service, `eval` and the benchmarks: backends + method + bank -> a finished debate,
and side-by-side comparisons that compute round 0 once. Backends and banks are resolved in r2mad/engine/resources.py."""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Callable, Sequence

from r2mad.backends.affinity import debate_key
from r2mad.backends.base import ChatBackend
from r2mad.debate import Debate, EventSink
from r2mad.methods import PLAIN, is_debate, make_method, needs_bank
from r2mad.settings.config import ConfigError, DebateSettings
from r2mad.types import Event, Round, Task, Transcript


async def run_debate(task: Task, method: str, backend: ChatBackend, settings: DebateSettings, *,
                     backbone: str = "", bank=None, emit: EventSink | None = None,
                     round0: Round | None = None, notices: tuple[str, ...] = (),
                     record: Callable[[Transcript], None] | None = None, summaries=None,
                     replay: Sequence[Round] = (), steer: Sequence = (), fork_notices: Sequence[str] = (),
                     agent_backends: Sequence[tuple[str, ChatBackend]] = ()) -> Transcript:
    """One debate. `bank` and its `notices` reach only methods that use a bank. `record` receives the
    loop's own transcript whenever it changes (status running, the round in progress included), at the
    end, and on cancellation (status cancelled): the run store and the app's live view plug in here;
    `emit` is for streaming live text. `round0` is a shared round 0 (side by side); `replay` recorded
    rounds taken over without model calls (a fork), `steer` the fork's changes to the first live round's
    hooks and `fork_notices` what to say about its changes; `agent_backends` one (name, backend) per agent."""
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

    if round0 is not None and is_debate(method):
        replay = (dataclasses.replace(round0, details={**round0.details, "shared": True}),)
    debate = Debate(backend, strategy, backbone=backbone, agent_backends=agent_backends)
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
                         agent_backends: Sequence[tuple[str, ChatBackend]] = ()) -> Round:
    """Round 0 is the same for every debate method: each agent answers alone (on its own backbone)."""
    method = make_method(PLAIN, settings.replace(rounds=1, advice=False))
    method.wants_logprobs = True  # objective MAD-M² scores round 0 by its logprobs (when the backend has them)
    debate = Debate(backend, method, backbone=backbone, agent_backends=agent_backends)
    debate.emit = _recording(debate, record, emit)
    transcript = await debate.run(task)
    return transcript.rounds[0]


async def run_side_by_side(task: Task, methods: list[str], backend: ChatBackend,
                           settings: DebateSettings, *, backbone: str = "", bank=None,
                           bank_notices: tuple[str, ...] = (),
                           emit_for: Callable[[str], EventSink] | None = None,
                           record_for: Callable[[str], Callable[[Transcript], None] | None] | None = None,
                           share_round0: bool = True, summaries=None,
                           agent_backends: Sequence[tuple[str, ChatBackend]] = ()) -> dict[str, Transcript]:
    """Run several methods on one question; debate methods share one round 0 and then fork.
    `record_for(method)` is that method's `record` (see run_debate); "round0" names the shared round 0;
    `agent_backends` (one per agent) applies to every method's debate."""
    if not 1 <= len(methods) <= 8 or len(set(methods)) != len(methods):
        raise ConfigError("Choose between 1 and 8 different methods to compare.")
    emit_for = emit_for or (lambda name: None)
    record_for = record_for or (lambda name: None)
    debates = [m for m in methods if is_debate(m)]
    round0 = None
    with debate_key():  # the shared round 0 and every fork on one replica behind a router
        if share_round0 and len(debates) > 1:
            round0 = await compute_round0(task, backend, settings, emit=emit_for("round0"),
                                          record=record_for("round0"), backbone=backbone,
                                          agent_backends=agent_backends)
        jobs = [run_debate(task, m, backend, settings, backbone=backbone, emit=emit_for(m),
                           bank=bank, notices=bank_notices, round0=round0 if is_debate(m) else None,
                           record=record_for(m), summaries=summaries, agent_backends=agent_backends)
                for m in methods]
        results = await asyncio.gather(*jobs)
    return dict(zip(methods, results))
