"""Runs one debate or a side-by-side comparison for the app and streams it: the debate runs as an
asyncio task, its events arrive through an asyncio.Queue, and after every event the caller gets the
partial transcripts. Every method's run is saved in the run store round by round. No Gradio here."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import r2mad
from r2mad.config import DebateSettings
from r2mad.methods import is_debate, needs_bank
from r2mad.runner import run_debate, run_side_by_side
from r2mad.runs.store import RunStore
from r2mad.types import Event, Task, Transcript
from r2mad.ui.render import finished_rounds, fold_events, with_status

ROUND0_KINDS = ("round_start", "delta", "turn", "round_end")  # what a shared round 0 shows in every column
TYPING_REFRESH_S = 0.25  # live text alone refreshes the page at most this often


@dataclass
class LiveRun:
    """The state of one run in progress: events per method, run ids, and the finished results."""
    task: Task
    methods: list[str]
    backbone: str
    settings: DebateSettings
    bank: str | None
    store: RunStore
    events: dict[str, list[Event]] = field(default_factory=dict)
    run_ids: dict[str, str] = field(default_factory=dict)
    results: dict[str, Transcript] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    shared_round0: bool = False  # set once a shared round 0 starts streaming
    typing: dict[str, dict[tuple[int, int], str]] = field(default_factory=dict)  # text of unfinished turns

    def __post_init__(self):
        settings = dataclasses.asdict(self.settings)
        for m in self.methods:
            self.events[m] = []
            self.typing[m] = {}
            self.run_ids[m] = self.store.start_run(
                method=m, backbone=self.backbone, bank=self.bank if needs_bank(m) else None,
                task=self.task, settings=dict(settings), seed=self.settings.seed,
                code_version=r2mad.__version__, source="app")

    def transcript(self, method: str) -> Transcript:
        if method in self.results:
            return self.results[method]
        t = fold_events(self.task, method, self.backbone, dataclasses.asdict(self.settings),
                        self.events[method], started_at=self.started_at,
                        seconds=time.time() - self.started_at)
        if self.shared_round0 and is_debate(method) and t.rounds and t.rounds[0].index == 0:
            first = dataclasses.replace(t.rounds[0], details={**t.rounds[0].details, "shared": True})
            t = dataclasses.replace(t, rounds=(first, *t.rounds[1:]), shared_round0=True)
        typing = self.typing[method]
        if typing and t.rounds and t.rounds[-1].details.get("running"):
            last = t.rounds[-1]
            shown = {str(a): text for (r, a), text in sorted(typing.items()) if r == last.index}
            t = dataclasses.replace(t, rounds=(*t.rounds[:-1], dataclasses.replace(
                last, details={**last.details, "typing": shown})))
        return t

    def transcripts(self) -> dict[str, Transcript]:
        return {m: self.transcript(m) for m in self.methods}

    def receive(self, column: str, event: Event) -> str:
        """Route one event (the shared round 0 goes to every debate method's column); return its kind."""
        targets = [m for m in self.methods if is_debate(m)] if column == "round0" else [column]
        if column == "round0":
            if event.kind not in ROUND0_KINDS:
                return event.kind
            self.shared_round0 = True
        for m in targets:
            if event.kind == "delta":  # kept aside: live text is shown, never folded or saved
                self.typing[m][(event.round, event.agent)] = str(event.data.get("text", ""))
                continue
            if event.kind == "turn":
                self.typing[m].pop((event.round, event.agent), None)
            self.events[m].append(event)
            if event.kind == "round_end" and m not in self.results:
                self.save(m, self.transcript(m), "running")
        return event.kind

    def save(self, method: str, transcript: Transcript, status: str) -> None:
        partial = finished_rounds(transcript)
        if partial.rounds:
            self.store.save_transcript(self.run_ids[method], with_status(partial, status), status)
        else:
            self.store.set_status(self.run_ids[method], status)

    def finish(self, results: dict[str, Transcript]) -> None:
        for m, t in results.items():
            if m not in self.results:
                self.results[m] = t
                self.save(m, t, t.status)

    def record_for(self, method: str):
        """Keeps a method's transcript once it has ended, so a side-by-side stopped later keeps it."""
        def record(t: Transcript) -> None:
            if t.status in ("done", "failed"):
                self.finish({method: t})
        return record

    def abandon(self, status: str, note: str | None = None) -> dict[str, Transcript]:
        """Save every unfinished method as `status` with the rounds it has; return what is shown."""
        shown = {}
        for m in self.methods:
            t = self.transcript(m)
            if m not in self.results:
                t = with_status(t, status)
                self.save(m, t, status)
                if note and not finished_rounds(t).rounds:
                    self.store.set_status(self.run_ids[m], status, note)
                self.results[m] = t
            shown[m] = t
        return shown


async def stream(live: LiveRun, backend: Any, *, bank: Any = None, bank_notices: tuple[str, ...] = (),
                 stop: asyncio.Event | None = None) -> AsyncIterator[dict[str, Transcript]]:
    """Yield the partial transcripts after every event, then the finished ones. Setting `stop` (or
    cancelling the consumer) cancels the debate and saves it as "cancelled" with the rounds it has;
    after `stop` the cancelled transcripts are yielded last. An exception saves it as "failed"."""
    queue: asyncio.Queue[tuple[str, Event]] = asyncio.Queue()
    stop = stop or asyncio.Event()

    def emit_for(column: str):
        return lambda event: queue.put_nowait((column, event))

    if len(live.methods) == 1:
        [m] = live.methods
        job = asyncio.create_task(run_debate(live.task, m, backend, live.settings, backbone=live.backbone,
                                             bank=bank, emit=emit_for(m), notices=bank_notices,
                                             record=live.record_for(m)))
    else:
        job = asyncio.create_task(run_side_by_side(
            live.task, live.methods, backend, live.settings, backbone=live.backbone, bank=bank,
            bank_notices=bank_notices, emit_for=emit_for, record_for=live.record_for))
    stopper = asyncio.ensure_future(stop.wait())
    shown_at = 0.0
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, job, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                break
            kinds = {live.receive(*getter.result())} | _drain(queue, live)
            if kinds == {"delta"} and time.monotonic() - shown_at < TYPING_REFRESH_S:
                continue
            shown_at = time.monotonic()
            yield live.transcripts()
        if stopper in done and not job.done():
            await _cancel(job)
            _drain(queue, live)
            yield live.abandon("cancelled")
            return
        _drain(queue, live)
        job.result()  # raises what the debate raised; record_for has already kept every result
    except (asyncio.CancelledError, GeneratorExit) as exc:
        job.cancel()
        if isinstance(exc, asyncio.CancelledError):  # a closed generator may not await
            await _cancel(job)
        _drain(queue, live)
        live.abandon("cancelled")
        raise
    except BaseException as exc:
        job.cancel()
        live.abandon("failed", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        stopper.cancel()
    yield live.transcripts()


async def _cancel(job: asyncio.Task) -> None:
    job.cancel()
    with contextlib.suppress(BaseException):
        await job


def _drain(queue: asyncio.Queue, live: LiveRun) -> set[str]:
    """Receive every queued event; return their kinds."""
    kinds = set()
    while not queue.empty():
        kinds.add(live.receive(*queue.get_nowait()))
    return kinds
