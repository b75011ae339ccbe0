"""The engine: one way in for every run that is saved or evaluated (CLI debate, rerun, fork, blame, the app's
Debate and Fork tabs, the API, eval). An entry point translates its input into RunRequests; `start` resolves
their backbones and banks through Resources (which also own the line a visitor's run waits in), lets a Sink
check and open each request (the run store: StoreSink; eval's resumable rows: r2mad/engine/evaluate.py), runs
its debates (one method, several sharing round 0, or a fork) and closes what it opened. Flags, forms and
printing stay with the entry points."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, AsyncContextManager, Awaitable, Callable, Protocol, Sequence

import r2mad
from r2mad.backends.base import ChatBackend
from r2mad.budget import question_refused
from r2mad.engine.runner import Setup, run_methods
from r2mad.evaluation.leakage import check_question_not_in_bank, guarded
from r2mad.grading.judge import judge_for
from r2mad.grading.tasks import format_task
from r2mad.methods import is_debate, needs_bank
from r2mad.settings.config import DebateSettings
from r2mad.steer.fork import ForkSpec
from r2mad.types import Task, Transcript

Record = Callable[[Transcript], None]


@dataclass(frozen=True)
class Fork:
    """The saved run a fork goes on from, and what changes."""
    parent_id: str
    parent: Transcript
    spec: ForkSpec


@dataclass(frozen=True)
class Endpoint:
    """A custom OpenAI-compatible endpoint a visitor typed; its key stays with the resources, never here."""
    base_url: str
    model: str | None = None

    @property
    def name(self) -> str:
        """The backbone a run on it is recorded with."""
        return f"custom:{(self.model or '').strip() or self.base_url.strip()}"


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
    owner: str | None = None  # who may read the runs on a public Space (serving/visitors.py)
    fork: Fork | None = None
    share_round0: bool | None = None  # None: when 2+ debate methods run; True: whenever one does; False: never
    route: str | None = None  # the calls' routing key behind a router (eval: per question and seed)
    moderator: Any = None  # a person's notes and seats between rounds (r2mad/human.py), for every debate
    endpoint: Endpoint | None = None  # a custom endpoint instead of a configured backbone (named endpoint.name)

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
    """Where backends, banks and admission come from: the environment's keys for a command (resources.Local),
    backends a caller made (resources.Given), the app's process-wide cache with a visitor's token and the app's
    line (serving/shared.py VisitorResources). `summaries`: R²-MAD's summary cache the debates share."""
    summaries: Any

    def backends(self, request: RunRequest) -> tuple[ChatBackend, list[ChatBackend]]: ...  # each named as recorded
    def bank(self, folder: str | None, task_kind: str) -> tuple[Any, list[str]]: ...  # slow: off the loop
    def release(self, bank) -> None: ...
    def admitted(self, request: RunRequest) -> AsyncContextManager[Any]: ...  # the line; yields its ticket
    def judge_backend(self, name: str) -> ChatBackend: ...  # a judge named by its backbone (settings.judge)


class Sink(Protocol):
    """Where a request's debates go: the run store (StoreSink) or an eval's rows (evaluate.RowsSink).
    `returns_transcripts`: whether start's Runs keep the transcripts (an eval's thousands are in its rows)."""
    returns_transcripts: bool

    def check(self, request: RunRequest, bank, notices: Sequence[str]) -> None: ...  # refuse; off the loop
    def open(self, request: RunRequest) -> dict[str, str]: ...  # before the first call: saved runs' ids
    def record_for(self, request: RunRequest, run_ids: dict[str, str], column: str) -> Record | None: ...
    def emit_for(self, request: RunRequest, column: str) -> Any: ...
    async def finished(self, run_ids: dict[str, str]) -> None: ...  # after a request's debates end


FINISHED: list[Callable[[Any, list[str]], Awaitable[None]]] = []  # heard with the store and run ids as runs end


class StoreSink:
    """Saved runs: one per method (a fork linked to its parent) with its recorder. `on_open` gets the saved
    runs' ids; `on_update(column, transcript)` sees each transcript as it grows, after it is saved ("round0":
    the round side-by-side debates share, not saved on its own); `emit_for(column)` takes the loop's events."""
    returns_transcripts = True

    def __init__(self, store, *, on_open: Callable[[dict[str, str]], None] | None = None,
                 on_update: Callable[[str, Transcript], None] | None = None,
                 emit_for: Callable[[str], Any] | None = None):
        self.store, self.on_open, self.on_update, self._emit_for = store, on_open, on_update, emit_for

    def check(self, request: RunRequest, bank, notices: Sequence[str]) -> None:
        check_runnable(request, bank)

    def open(self, request: RunRequest) -> dict[str, str]:
        ids = open_runs(request, self.store)
        if self.on_open is not None:
            self.on_open(dict(ids))
        return ids

    def record_for(self, request: RunRequest, run_ids: dict[str, str], column: str) -> Record | None:
        saving = self.store.recorder(run_ids[column]) if column in run_ids else None
        if self.on_update is None:
            return saving
        return lambda t: (saving and saving(t), self.on_update(column, t))

    def emit_for(self, request: RunRequest, column: str) -> Any:
        return self._emit_for(column) if self._emit_for is not None else None

    async def finished(self, run_ids: dict[str, str]) -> None:
        for hook in FINISHED:  # e.g. exports/live.py's trace exporter, which the entry points install
            await hook(self.store, list(run_ids.values()))


class KeptSink:
    """Transcripts only, nothing saved: a recording kept elsewhere (the first screen's example cards)."""
    returns_transcripts = True

    def check(self, request: RunRequest, bank, notices: Sequence[str]) -> None:
        check_runnable(request, bank)

    def open(self, request: RunRequest) -> dict[str, str]:
        return {}

    def record_for(self, request: RunRequest, run_ids: dict[str, str], column: str) -> Record | None:
        return None

    def emit_for(self, request: RunRequest, column: str) -> Any:
        return None

    async def finished(self, run_ids: dict[str, str]) -> None:
        pass


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
        for run_id in ids.values():
            store.link_fork(run_id, request.fork.parent_id, dataclasses.asdict(request.fork.spec))
    return ids


def check_runnable(request: RunRequest, bank) -> None:
    """Refuse, in one sentence and before anything is saved or called, a bank that holds the question (its
    cases would show the debaters the answer), a question over the bound (budget.py: a saved run rerun, a /v1
    call) and a fork that cannot run. Slow: call it off the event loop."""
    refused = question_refused(len(format_task(request.task)), request.settings.max_question_chars)
    if refused:
        raise ValueError(refused)
    if bank is not None:
        check_question_not_in_bank(bank, request.task)
    if request.fork is not None:
        from r2mad.engine.forks import plan_fork

        plan_fork(request.fork.parent, request.fork.spec, request.settings, bank)


def noting_rounds(record: Record | None, ticket: Any) -> Record | None:
    """`record`, also noting on the debate's ticket in the line the rounds it finished so far: a debate slower
    than expected then moves the estimates of those waiting (serving/admission.py `left`)."""
    if record is None or ticket is None:
        return record

    def heard(t: Transcript) -> None:
        ticket.rounds_run = max(ticket.rounds_run, len(t.finished().rounds))
        record(t)
    return heard


async def start(requests: Sequence[RunRequest], resources: Resources, sink: Sink, *,
                concurrency: int = 1) -> list[Runs]:
    """Run every request, `concurrency` at once, and return their Runs in order. First, in order, each request's
    backends are resolved, its bank opened (once per folder for the whole batch) and the sink checks it, so a
    refusal comes before any call; then each waits in the line, the sink opens it (the run store saves the
    runs) and its debates run. After the batch the banks are released. An exception stops the batch; what the
    sink kept so far stays."""
    requests, banks = list(requests), {}

    async def ready(request: RunRequest) -> Setup:
        backend, agents = await asyncio.to_thread(resources.backends, request)
        key = (request.bank, request.task.kind) if any(map(needs_bank, request.methods)) else None
        if key is not None and key not in banks:  # the first opening loads the embedder, may build the index
            banks[key] = await asyncio.to_thread(resources.bank, *key)
        bank, notices = banks.get(key, (None, []))
        await asyncio.to_thread(sink.check, request, bank, notices)
        if bank is not None:  # a question that may be a bank question in another language: without its cases
            bank, withheld = await asyncio.to_thread(guarded, bank, request.task)
            notices = [*notices, *withheld]
        judge = await asyncio.to_thread(judge_for, request.settings.judge, backend,
                                        lambda name: resources.judge_backend(name))
        return Setup(backend, request.settings, tuple(agents), bank, tuple(notices), resources.summaries, judge)

    async def run(request: RunRequest, setup: Setup) -> Runs:
        async with gate, resources.admitted(request) as ticket:
            runs = Runs(sink.open(request))
            runs.transcripts = await run_setup(
                request, setup, lambda c: noting_rounds(sink.record_for(request, runs.run_ids, c), ticket),
                lambda c: sink.emit_for(request, c))
            if ticket is not None:  # what the line measures its pace from
                ticket.measured = all(t.status == "done" for t in runs.transcripts.values())
                ticket.rounds_run = max((len(t.finished().rounds) for t in runs.transcripts.values()), default=0)
        await sink.finished(runs.run_ids)
        if not sink.returns_transcripts:
            runs.transcripts = {}
        return runs

    gate = asyncio.Semaphore(max(1, concurrency))
    try:
        setups = [await ready(r) for r in requests]
        if len(requests) == 1:  # no task group: a refusal reaches the caller as itself
            return [await run(requests[0], setups[0])]
        async with asyncio.TaskGroup() as group:
            jobs = [group.create_task(run(r, s)) for r, s in zip(requests, setups)]
        return [job.result() for job in jobs]
    except BaseExceptionGroup as error:
        raise first_error(error) from None
    finally:
        for bank, _ in banks.values():
            resources.release(bank)


async def run_setup(request: RunRequest, setup: Setup, record_for: Callable[[str], Record | None],
                    emit_for: Callable[[str], Any]) -> dict[str, Transcript]:
    """The request's debate(s) on resolved backends: a fork, or its methods (debates sharing round 0)."""
    if request.fork is None:
        return await run_methods(request.task, request.methods, setup, share_round0=request.share_round0,
                                 record_for=record_for, emit_for=emit_for, route=request.route,
                                 moderator=request.moderator)
    from r2mad.engine.forks import fork_debate

    [m], f = request.methods, request.fork
    return {m: await fork_debate(f.parent, f.spec, setup, record=record_for(m), emit=emit_for(m),
                                 moderator=request.moderator)}


def first_error(error: BaseException) -> BaseException:
    """The first real error inside (nested) task-group exception groups."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


@contextlib.asynccontextmanager
async def no_line(request: RunRequest):
    """Admission for a command: no line, nothing to measure."""
    yield None


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
