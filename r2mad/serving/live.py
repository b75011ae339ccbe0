"""Runs one debate or a side-by-side comparison for the app and streams it: the engine's `start` runs the request
as an asyncio task (waiting in the line, opening the bank), saves each method's run round by round and hands the
transcripts to the LiveRun; the loop's events (relayed: r2mad/relay.py) only wake the view and carry live text.
No Gradio here."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from typing import AsyncIterator

from r2mad.engine.service import Resources, RunRequest, StoreSink, start
from r2mad.methods import is_debate
from r2mad.relay import relay
from r2mad.runs.store import RunStore
from r2mad.serving.admission import Ticket
from r2mad.types import Answer, Event, Transcript

TYPING_REFRESH_S = 0.25  # live text alone refreshes the page at most this often


@dataclass
class LiveRun:
    """One run request in progress, kept whole: its ticket in the line while it waits, the loop's latest
    transcript per method (handed over by `update`), the live text of turns still being written, the saved
    runs' ids once opened, and the transcripts of methods that ended."""
    request: RunRequest
    store: RunStore
    ticket: Ticket | None = None  # its place in the line, once it entered
    latest: dict[str, Transcript] = field(default_factory=dict)  # per method, and "round0" when shared
    run_ids: dict[str, str] = field(default_factory=dict)
    results: dict[str, Transcript] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    typing: dict[str, dict[tuple[int, int], str]] = field(default_factory=dict)  # text of unfinished turns
    shown_at: float = 0.0  # time.monotonic() when the page was last given the transcripts
    unshown: bool = False  # live text received but not yet shown

    def __post_init__(self):
        self.typing = {m: {} for m in self.methods}

    @property
    def methods(self) -> list[str]:
        return list(self.request.methods)

    def waiting(self, ticket: Ticket) -> None:
        """The request entered the line (the engine's `waiting`)."""
        self.ticket = ticket

    def opened(self, run_ids: dict[str, str]) -> None:
        """The run service saved the runs (once the request was found runnable)."""
        self.run_ids.update(run_ids)

    def transcript(self, method: str) -> Transcript:
        """What the page shows: the loop's transcript (the shared round 0's while that runs), with the
        live text of turns still being written attached to the running round for display."""
        if method in self.results:
            return self.results[method]
        t = self.latest.get(method)
        if t is None and is_debate(method) and "round0" in self.latest:
            shared = self.latest["round0"]
            t = dataclasses.replace(shared, method=method, backbone=self.request.backbone, shared_round0=True,
                                    settings=dataclasses.asdict(self.request.settings))
        if t is None:
            t = Transcript(self.request.task, method, self.request.backbone,
                           dataclasses.asdict(self.request.settings), (),
                           Answer(None, "abstained"), None, "running", (), self.started_at,
                           round(time.time() - self.started_at, 4))
        typing = self.typing[method]
        if typing and t.rounds and t.rounds[-1].details.get("running"):
            last = t.rounds[-1]
            shown = {str(a): text for (r, a), text in sorted(typing.items()) if r == last.index}
            t = dataclasses.replace(t, rounds=(*t.rounds[:-1], dataclasses.replace(
                last, details={**last.details, "typing": shown})))
        return t

    def transcripts(self) -> dict[str, Transcript]:
        return {m: self.transcript(m) for m in self.methods}

    def update(self, column: str, t: Transcript) -> None:
        """A method's transcript (or the shared round 0's) as saved: kept for good once the method has ended."""
        self.latest[column] = t
        if column in self.methods and column not in self.results and t.status != "running":
            self.results[column] = t

    def news(self, batch: list[tuple[str, Event]]) -> dict[str, Transcript] | None:
        """Receive a batch of the loop's (column, event); return what the page shows now: the transcripts, {} for an
        empty batch (nothing new: only a clock may move), or None for live text alone within TYPING_REFRESH_S of
        the last showing (it is shown with the next news or tick)."""
        kinds = {self.receive(column, event) for column, event in batch}
        if kinds == {"delta"} and time.monotonic() - self.shown_at < TYPING_REFRESH_S:
            self.unshown = True
            return None
        if not (kinds or self.unshown):
            return {}
        self.shown_at, self.unshown = time.monotonic(), False
        return self.transcripts()

    def receive(self, column: str, event: Event) -> str:
        """Keep the live text of an event (the shared round 0 goes to every debate method); return its kind."""
        if event.kind in ("delta", "turn"):
            targets = [m for m in self.methods if is_debate(m)] if column == "round0" else [column]
            for m in targets:
                if event.kind == "delta":  # shown while written, never saved
                    self.typing[m][(event.round, event.agent)] = str(event.data.get("text", ""))
                else:
                    self.typing[m].pop((event.round, event.agent), None)
        return event.kind

    def abandon(self, status: str, note: str | None = None) -> dict[str, Transcript]:
        """Save every method that has not ended as `status` with what the loop last handed over; return
        what is shown."""
        for m in self.methods:
            if m not in self.results:
                t = dataclasses.replace(self.transcript(m), status=status)
                if m not in self.run_ids:  # refused or stopped before anything was saved
                    pass
                elif m in self.latest:
                    self.store.save_transcript(self.run_ids[m], t, status)
                else:
                    self.store.set_status(self.run_ids[m], status, note)
                self.results[m] = t
        return self.transcripts()


async def stream(live: LiveRun, resources: Resources, *, stop: asyncio.Event | None = None,
                 tick_s: float | None = None) -> AsyncIterator[dict[str, Transcript]]:
    """Start the live run's request with `resources` (their line's `waiting` should be live.waiting) and yield
    the partial transcripts as the loop's events come (see LiveRun.news), then the finished ones. Setting `stop` (or
    leaving the iteration, or cancelling the consumer) cancels the debate and saves it as "cancelled" with the
    rounds it has; after `stop` the cancelled transcripts are yielded last. An exception saves it as "failed".
    `tick_s`: after that many seconds without an event, an empty dict is yielded (nothing new: a clock
    shown beside the debate may move on)."""
    async def run(emit):
        await start([live.request], resources, StoreSink(live.store, on_open=live.opened, on_update=live.update,
                                                          emit_for=lambda column: lambda e: emit((column, e))))
    try:
        async with contextlib.aclosing(relay(run, tick_s=tick_s, stop=stop)) as batches:
            async for batch in batches:
                if (shown := live.news(batch)) is not None:
                    yield shown
    except (asyncio.CancelledError, GeneratorExit):
        live.abandon("cancelled")
        raise
    except BaseException as exc:
        live.abandon("failed", f"{type(exc).__name__}: {exc}")
        raise
    yield live.abandon("cancelled")  # what had not ended when `stop` was set (nothing after a whole run)
