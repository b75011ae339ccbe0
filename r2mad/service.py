"""The run service: one way in for every entry point that starts a saved run (CLI debate, rerun, fork, blame,
the app's Debate and Fork tabs, the API, eval-to-store). An entry point translates its input into a RunRequest;
`start` resolves the backbones, opens the bank, saves the run(s) with their recorders, runs the debate (one
method, several side by side, or a fork) and closes what it opened. Flags, forms, printing and the app's line
for debates stay with the entry points."""
from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol, Sequence

import r2mad
from r2mad.backends.base import ChatBackend
from r2mad.engine.runner import run_debate, run_side_by_side
from r2mad.evaluation.leakage import check_question_not_in_bank
from r2mad.methods import is_debate, needs_bank
from r2mad.settings.config import DebateSettings
from r2mad.steer.fork import ForkSpec
from r2mad.types import Task, Transcript

Record = Callable[[Transcript], None]
AgentBackends = list[tuple[str, ChatBackend]]


@dataclass(frozen=True)
class Fork:
    """The saved run a fork goes on from, and what changes."""
    parent_id: str
    parent: Transcript
    spec: ForkSpec


@dataclass(frozen=True)
class RunRequest:
    """One run (or one comparison) to start and save, as every entry point asks for it."""
    task: Task
    methods: tuple[str, ...]
    settings: DebateSettings
    backbone: str  # the auxiliary calls' backbone, and every agent's unless agent_backbones
    source: str  # who started it: cli, rerun, fork, blame, app, app-fork, api, api-fork
    agent_backbones: tuple[str, ...] = ()  # a mixed-model debate: one backbone per agent
    bank: str | None = None  # memory bank folder for the methods that use one
    owner: str | None = None  # who may read the runs on a public Space (ui/visitors.py)
    fork: Fork | None = None

    def saved_backbone(self, method: str) -> str:
        return saved_backbone(method, self.backbone, list(self.agent_backbones))

    def saved_bank(self, method: str) -> str | None:
        return self.bank if needs_bank(method) else None


@dataclass
class Runs:
    """What `start` returns: per method, the saved run's id and the debate's transcript."""
    run_ids: dict[str, str] = field(default_factory=dict)
    transcripts: dict[str, Transcript] = field(default_factory=dict)


class Resources(Protocol):
    """Where backends and banks come from (r2mad/engine/resources.py): the environment's keys for a command (Local),
    the process-wide cache and a visitor's token for the app (VisitorResources)."""
    def backends(self, request: RunRequest) -> tuple[ChatBackend, str, AgentBackends]: ...
    def bank(self, folder: str | None, task_kind: str) -> tuple[Any, list[str]]: ...
    def release(self, bank) -> None: ...


def open_run(store, *, method: str, backbone: str, bank: str | None, task: Task, settings: dict,
             seed: int | None, source: str, owner: str | None = None) -> str:
    """Save a new run as running, stamped with this code's version; returns its id. The one place a run starts."""
    return store.start_run(method=method, backbone=backbone, bank=bank, task=task, settings=settings, seed=seed,
                           code_version=r2mad.__version__, source=source, owner=owner)


def open_runs(request: RunRequest, store) -> dict[str, str]:
    """Save one run per method of the request (a fork linked to its parent); returns their ids."""
    settings = dataclasses.asdict(request.settings)
    ids = {m: open_run(store, method=m, backbone=request.saved_backbone(m), bank=request.saved_bank(m),
                       task=request.task, settings=dict(settings), seed=request.settings.seed,
                       source=request.source, owner=request.owner) for m in request.methods}
    if request.fork is not None:
        from r2mad.steer.links import link_fork

        for run_id in ids.values():
            link_fork(store, run_id, request.fork.parent_id, request.fork.spec)
    return ids


async def check_runnable(request: RunRequest, bank) -> None:
    """Refuse, in one sentence and before anything is saved or called, a bank that holds the question (its
    cases would show the debaters the answer) and a fork that cannot run."""
    if bank is not None:
        await asyncio.to_thread(check_question_not_in_bank, bank, request.task)
    if request.fork is not None:
        from r2mad.engine.forks import plan_fork

        await asyncio.to_thread(plan_fork, request.fork.parent, request.fork.spec, request.settings, bank)


async def run(request: RunRequest, backend: ChatBackend, backbone: str, agents: AgentBackends, *, bank=None,
              notices: Sequence[str] = (), record_for: Callable[[str], Record | None] | None = None,
              emit_for: Callable[[str], Any] | None = None, summaries=None) -> dict[str, Transcript]:
    """Run the request's debate(s) on resolved backends: one method, several side by side (debates share round
    0), or a fork. `record_for(method)` saves a method's transcript as it grows; "round0" names the shared one."""
    record_for, emit_for = record_for or (lambda m: None), emit_for or (lambda m: None)
    methods, notices = list(request.methods), tuple(notices)
    if request.fork is not None:
        from r2mad.engine.forks import fork_debate

        [m] = methods
        f = request.fork
        return {m: await fork_debate(f.parent, f.spec, backend, request.settings, backbone=backbone, bank=bank,
                                     bank_notices=notices, agent_backends=agents, record=record_for(m),
                                     emit=emit_for(m), summaries=summaries)}
    if len(methods) == 1:
        [m] = methods
        return {m: await run_debate(request.task, m, backend, request.settings, backbone=backbone, bank=bank,
                                    emit=emit_for(m), notices=notices, record=record_for(m), summaries=summaries,
                                    agent_backends=agents)}
    return await run_side_by_side(request.task, methods, backend, request.settings, backbone=backbone, bank=bank,
                                  bank_notices=notices, emit_for=emit_for, record_for=record_for,
                                  summaries=summaries, agent_backends=agents)


async def start(request: RunRequest, resources: Resources, store, *, summaries=None,
                on_update: Callable[[str, Transcript], None] | None = None,
                admit: Callable[[], Awaitable[None]] | None = None,
                on_open: Callable[[dict[str, str]], None] | None = None,
                emit_for: Callable[[str], Any] | None = None) -> Runs:
    """Resolve the backbones, open the bank, save the run(s), run them and close the bank. `admit` is awaited
    once the request is found runnable and before anything is saved (the app's line for debates); `on_open` gets
    the saved runs' ids; `on_update(column, transcript)` sees each transcript as it grows, after it is saved
    ("round0": the round side-by-side debates share, not saved on its own); `emit_for(column)` takes the loop's
    events (live text)."""
    backend, backbone, agents = resources.backends(request)
    folder = request.bank if any(map(needs_bank, request.methods)) else None
    bank, notices = resources.bank(folder, request.task.kind)
    try:
        await check_runnable(request, bank)
        if admit is not None:
            await admit()
        runs = Runs(open_runs(request, store))
        if on_open is not None:
            on_open(dict(runs.run_ids))
        recorders = {m: store.recorder(run_id) for m, run_id in runs.run_ids.items()}

        def record_for(column: str) -> Record | None:
            saving = recorders.get(column)
            if on_update is None:
                return saving
            return lambda t: (saving and saving(t), on_update(column, t))
        runs.transcripts = await run(request, backend, backbone, agents, bank=bank, notices=notices,
                                     record_for=record_for, emit_for=emit_for, summaries=summaries)
    finally:
        resources.release(bank)
    return runs


@dataclass(frozen=True)
class Resolved:
    """Resources an entry point has already resolved: the Debate tab resolves the backends to refuse at once,
    and opens the bank itself to tell the visitor how far it got. Nothing to release."""
    backend: ChatBackend
    backbone: str
    agents: AgentBackends = field(default_factory=list)
    opened_bank: Any = None
    notices: tuple[str, ...] = ()

    def backends(self, request: RunRequest) -> tuple[ChatBackend, str, AgentBackends]:
        return self.backend, self.backbone, list(self.agents)

    def bank(self, folder: str | None, task_kind: str) -> tuple[Any, list[str]]:
        return self.opened_bank, list(self.notices)

    def release(self, bank) -> None:
        pass


def saved_backbone(method: str, aux: str, names: list[str]) -> str:
    """The backbone column of one method's run: the mix for a debate, agent 1's backbone for a single-agent
    baseline (it runs there: runner.run_debate)."""
    if not names:
        return aux
    return backbone_label(aux, names) if is_debate(method) else names[0]


def backbone_label(aux: str, names: list[str]) -> str:
    """What the run store's backbone column says: the one backbone, or each agent's in order."""
    return aux if all(n == aux for n in names) else ",".join(names)


def backbone_plan(agent_backbones: str | None, aux: str | None, default: str) -> tuple[str, list[str]]:
    """(backbone of the auxiliary calls, one backbone per agent or [] when none was given)."""
    names = [n.strip() for n in (agent_backbones or "").split(",") if n.strip()]
    return aux or (names[0] if names else default), names
