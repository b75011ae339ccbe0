"""Running a fork: the parent's recorded rounds replayed into the one debate loop, then live rounds.
Receives backends and a bank; reads no config and no environment."""
from __future__ import annotations

from typing import Callable, Sequence

from r2mad.backends.base import ChatBackend
from r2mad.config import DebateSettings
from r2mad.methods import is_debate, spec_of
from r2mad.runner import run_debate
from r2mad.steer.fork import ForkSpec, replay_rounds
from r2mad.types import Round, Transcript


def plan_fork(parent: Transcript, spec: ForkSpec, settings: DebateSettings) -> tuple[str, tuple[Round, ...]]:
    """(the method the fork goes on with, the rounds it replays); a fork that cannot run is refused here
    with one sentence, before anything is saved or called."""
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
    return method, replay


async def fork_debate(parent: Transcript, spec: ForkSpec, backend: ChatBackend, settings: DebateSettings, *,
                      backbone: str = "", bank=None, bank_notices: tuple[str, ...] = (),
                      agent_backends: Sequence[tuple[str, ChatBackend]] = (),
                      record: Callable[[Transcript], None] | None = None, emit=None,
                      summaries=None) -> Transcript:
    """The fork of `parent` described by `spec`: rounds before `spec.from_round` taken from the record
    (no model call), the changes applied, then the debate goes on live with `spec.method` or the parent's."""
    method, replay = plan_fork(parent, spec, settings)
    return await run_debate(parent.task, method, backend, settings, backbone=backbone, bank=bank,
                            notices=bank_notices, record=record, emit=emit, summaries=summaries,
                            replay=replay, agent_backends=agent_backends)
