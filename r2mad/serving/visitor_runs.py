"""Starting a saved run for the app's API and Fork tab: a visitor's run request waits its turn in the line for
debates, then the engine (r2mad/engine/service.py) starts it. A fork reads its parent only if the visitor may."""
from __future__ import annotations

from typing import Callable

from r2mad.engine.service import Fork, RunRequest, Runs, StoreSink, start
from r2mad.serving.admission import Ticket
from r2mad.serving.services import Services
from r2mad.serving.visitors import Visitor
from r2mad.steer.fork import ForkSpec
from r2mad.types import Transcript

NOT_YOURS = "No saved run of yours has that id; list your runs with list_runs and use one of their ids."


def readable(store, run_id: str, visitor: Visitor):
    """A saved run this visitor may read; another visitor's run reads as no run at all (KeyError)."""
    try:
        record = store.get_run((run_id or "").strip())
    except KeyError:
        record = None
    if record is None or not visitor.can_read(record.owner):
        raise KeyError(NOT_YOURS)
    return record


async def start_in_line(services: Services, request: RunRequest, line_key: str, *,
                        on_update: Callable[[str, Transcript], None] | None = None,
                        waiting: Callable[[Ticket], None] | None = None,
                        on_open: Callable[[dict[str, str]], None] | None = None) -> Runs:
    """Start `request` through the engine once the line lets it in (Refused when it may not); nothing is saved
    while it waits. `waiting` gets the ticket first, so a caller can show its place; `on_open` the saved runs'
    ids. An anonymous visitor's run on a Hugging Face backbone may spend the owner's allowance, counted to
    `line_key`."""
    [runs] = await start([request], services.in_line(line_key, waiting=waiting),
                         StoreSink(services.store, on_update=on_update, on_open=on_open))
    return runs


async def fork_saved(services: Services, run_id: str, spec: ForkSpec, *, source: str, visitor: Visitor,
                     record: Callable[[Transcript], None] | None = None, line_key: str | None = None,
                     waiting: Callable[[Ticket], None] | None = None) -> tuple[str, str, Transcript]:
    """Run `spec` on the saved run `run_id` (one `visitor` may read), saved as a new run of theirs linked to it:
    (parent id, fork id, the fork's transcript). `record` also receives the fork's transcript as it grows."""
    parent = readable(services.store, run_id, visitor)
    if parent.transcript is None:
        raise ValueError(f"Run {parent.id} has no finished round to replay yet; choose another run.")
    name = spec.backbone or parent.transcript.backbone
    services.config.backbone(name)  # unknown: one sentence listing the backbones
    settings = services.config.settings.replace(**parent.settings)
    if spec.rounds is not None:
        settings = settings.replace(rounds=spec.rounds)
    agents = () if spec.backbone else tuple(parent.transcript.agent_backbones())
    request = RunRequest(parent.task, (spec.method or parent.method,), settings, name, source=source,
                         agent_backbones=agents, bank=parent.bank, owner=visitor.owner,
                         fork=Fork(parent.id, parent.transcript, spec))
    runs = await start_in_line(services, request, line_key or visitor.owner or "anonymous",
                               on_update=(lambda method, t: record(t)) if record else None, waiting=waiting)
    [(method, t)] = runs.transcripts.items()
    return parent.id, runs.run_ids[method], t
