"""Named annotation queues: an Inspect filter saved under a name, its runs ordered by most detector
flags first, each run pending or done for a given annotator, N annotators per run, and blind overlap
(others' labels hidden until you submit yours). Stored by the run store (runs/queues.py)."""
from __future__ import annotations

from dataclasses import dataclass

from r2mad.runs.queues import Queue
from r2mad.runs.records import STATUSES, RunSummary
from r2mad.runs.store import RunStore
from r2mad.text import quoted

FILTER_KEYS = ("method", "backbone", "bank", "status", "correct", "shared_misconception", "flip",
               "parse_failures", "detector", "runs")  # runs: a frozen queue's snapshot of run ids


@dataclass(frozen=True)
class QueueItem:
    run: RunSummary
    flags: int  # detector suggestions on the run
    annotators: tuple[str, ...]
    state: str  # done (you labelled it) | pending (needs you) | full (enough others labelled it)


def save_queue(store: RunStore, queue: Queue) -> Queue:
    """Create or replace a queue; a bad name, filter or count raises one sentence saying the fix."""
    name = queue.name.strip()
    if not name or len(name) > 80:
        raise ValueError("A queue needs a name of 1 to 80 characters; type one.")
    unknown = sorted(set(queue.filters) - set(FILTER_KEYS))
    if unknown:
        raise ValueError(f"Unknown queue filter(s) {', '.join(unknown)}; use {', '.join(FILTER_KEYS)}.")
    if queue.filters.get("status") not in (None, *STATUSES):
        raise ValueError(f"Queue status {quoted(queue.filters['status'])} is unknown; use one of "
                         f"{', '.join(STATUSES)}.")
    if not 1 <= int(queue.annotators_per_run) <= 20:
        raise ValueError("Annotators per run must be between 1 and 20; pick a number in that range.")
    runs = queue.filters.get("runs")
    if runs is not None and not (isinstance(runs, list) and all(isinstance(r, str) for r in runs)):
        raise ValueError("A frozen queue's runs must be a list of run ids; freeze a queue from the workbench.")
    filters = {k: v for k, v in queue.filters.items() if v not in (None, "")}
    saved = Queue(name, filters, int(queue.annotators_per_run), bool(queue.blind))
    store.save_queue(saved)
    return saved


def queues(store: RunStore) -> dict[str, Queue]:
    return store.queues()


def get_queue(store: RunStore, name: str) -> Queue:
    found = queues(store).get((name or "").strip())
    if found is None:
        raise KeyError(f"No queue named {quoted(name)}; pick one from the list or create it from a filter.")
    return found


def queue_items(store: RunStore, queue: Queue, annotator: str) -> list[QueueItem]:
    """The queue's runs, most flags first (then oldest first), with their state for `annotator`."""
    filters = {k: v for k, v in queue.filters.items() if k not in ("detector", "runs")}
    if queue.frozen:
        filters["ids"] = list(queue.filters["runs"])
    runs = [r for r in store.list_runs(**filters, limit=100_000) if r.status != "running"]
    flags, people = store.suggestion_counts(), store.annotators_by_run()
    if queue.filters.get("detector"):
        flagged = store.runs_suggested(queue.filters["detector"])
        runs = [r for r in runs if r.id in flagged]
    runs.sort(key=lambda r: (-flags.get(r.id, 0), r.created_at, r.id))
    items = []
    for run in runs:
        who = tuple(people.get(run.id, ()))
        state = "done" if annotator in who else "full" if len(who) >= queue.annotators_per_run else "pending"
        items.append(QueueItem(run, flags.get(run.id, 0), who, state))
    return items


def frozen_copy(store: RunStore, queue: Queue, name: str, annotator: str) -> Queue:
    """A frozen queue named `name`: the runs `queue` holds now, kept whatever runs are saved later."""
    ids = [i.run.id for i in queue_items(store, queue, annotator)]
    return save_queue(store, Queue(name, {**queue.filters, "runs": ids}, queue.annotators_per_run, queue.blind))


def next_pending(items: list[QueueItem], after: str | None = None) -> str | None:
    """The first pending run after run `after` in queue order (wrapping round), else None."""
    ids = [i.run.id for i in items]
    start = ids.index(after) + 1 if after in ids else 0
    for item in items[start:] + items[:start]:
        if item.state == "pending":
            return item.run.id
    return None


def step(items: list[QueueItem], current: str | None, delta: int) -> str | None:
    """The run `delta` places from `current` in queue order (clamped at both ends)."""
    ids = [i.run.id for i in items]
    if not ids:
        return None
    index = ids.index(current) + delta if current in ids else 0
    return ids[max(0, min(len(ids) - 1, index))]


def others_visible(queue: Queue | None, annotator: str, annotators: tuple[str, ...]) -> bool:
    """Blind overlap: another person's labels show only once `annotator` has submitted theirs."""
    return queue is None or not queue.blind or annotator in annotators
