"""One eval of a researcher's own data started from the app: the mapped split, methods and backbone in, a
results folder with its report out, and how far it has got (rows done of all, an estimate of the time left)
while it runs. One at a time per process, one question at a time, each waiting its turn in the app's line
with the visitors' debates; no Gradio here (ui/data_tab.py is the tab)."""
from __future__ import annotations

import asyncio
import html
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from r2mad.engine.evaluate import run_eval
from r2mad.engine.service import Resources
from r2mad.evaluation.rows import ROWS, EvalRun

MAX_UPLOAD_BYTES = 50 * 2**20  # a bigger file is refused before it is read
POLL_S = 0.5  # how often the tab redraws the bar while rows arrive
TRACK = "height:14px;border-radius:7px;background:#e2e8f0;overflow:hidden;"
BAR = "height:100%;background:#4f46e5;"


def results_folder(data_dir: str | Path, name: str) -> Path:
    """A new folder under DATA_DIR/evals named after the time and the file."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(name).stem)[:40] or "data"
    return Path(data_dir) / "evals" / f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{stem}"


def eta_seconds(done: int, total: int, elapsed: float, under_way: float = 0.0,
                typical: float | None = None) -> float | None:
    """Seconds left, recomputed at every tick from the rows done and the pace measured so far: `elapsed` seconds
    since the eval began, `under_way` of them spent on the row not done yet (in line or running). The rows after it
    take the measured pace (seconds per row done; before the first row, `typical`: the line's measured mean); the
    row under way takes the rest of that pace or, once it has run past half of it, as long again as it has run (a
    wait seen at a random moment has, in median, as long to go), so the figure moves even while nothing ends.
    None with nothing measured yet."""
    if total <= 0 or done >= total:
        return 0.0 if total > 0 else None
    pace = ((elapsed - under_way) / done if done > 0 else 0.0) or typical  # a resumed eval's rows took no time here
    if pace is None:
        return None
    return max(pace - under_way, under_way) + pace * (total - done - 1)


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


def progress_html(done: int, total: int, elapsed: float, finished: bool = False, waiting: str = "",
                  under_way: float = 0.0, typical: float | None = None) -> str:
    """A progress bar with "k of N rows · about m:ss left" (eta_seconds; or the time it took, once finished), and
    `waiting`: where its next question stands in the app's line, while it waits there."""
    share = 0 if total <= 0 else min(1.0, done / total)
    if finished:
        line = f"{done} of {total} rows in {clock(elapsed)}"
    else:
        left = eta_seconds(done, total, elapsed, under_way, typical)
        line = f"{done} of {total} rows · " + ("estimating the time left…" if left is None else
                                               f"about {clock(left)} left")
    return (f'<div class="data-progress" role="progressbar" aria-valuemin="0" aria-valuemax="{total}" '
            f'aria-valuenow="{done}" style="{TRACK}"><div class="data-progress-bar" '
            f'style="{BAR}width:{100 * share:.1f}%"></div></div>'
            f'<p class="data-progress-line" style="margin:6px 0 0 0">{html.escape(line)}</p>'
            + (f'<p class="data-progress-waiting" style="margin:4px 0 0 0">{html.escape(waiting)}</p>'
               if waiting and not finished else ""))


def rows_done(out: Path) -> int:
    path = out / ROWS
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.endswith(b"\n"))


@dataclass
class EvalJob:
    """An eval running in the background: its folder, its size, when it started, what its next question
    waits for (`waiting()`: a sentence, "" when it waits for nothing) and `typical()`: the line's measured seconds
    per row (None before any debate there ended), for the estimate before the first row."""
    out: Path
    total: int
    started: float = field(default_factory=time.monotonic)
    task: asyncio.Task | None = None
    waiting: Callable[[], str] = lambda: ""
    typical: Callable[[], float | None] = lambda: None
    done: int = 0  # rows done at the last tick
    row_began: float | None = None  # when the row under way began: the last row's end, or the start

    def progress(self) -> str:
        """The bar at this tick, its estimate recomputed from the rows done so far."""
        now, done = time.monotonic(), rows_done(self.out)
        if self.row_began is None or done != self.done:
            self.done, self.row_began = done, (self.started if self.row_began is None else now)
        return progress_html(done, self.total, now - self.started, self.task is not None and self.task.done(),
                             self.waiting(), now - self.row_began, self.typical())


_RUNNING: set[asyncio.Task] = set()  # the eval this process runs now (at most one)


def busy() -> bool:
    return any(not t.done() for t in _RUNNING)


def start(run: EvalRun, resources: Resources, out: Path, *, waiting: Callable[[], str] = lambda: "",
          secrets: Sequence[str] = (), typical: Callable[[], float | None] = lambda: None) -> EvalJob:
    """Start `run` in the background on the running loop (busy() must be False). Its questions go one by one
    through `resources` (the app's line for the visitor who asked), so an eval never holds more than one of
    the line's places and visitors' debates take their turns beside it. Its rows are scrubbed of `secrets`."""
    if busy():
        raise RuntimeError("One eval runs at a time in this app; wait for the running one to end.")
    job = EvalJob(out, len(run.split.tasks) * len(run.methods) * len(run.seed_values), waiting=waiting,
                  typical=typical)
    job.task = asyncio.get_running_loop().create_task(run_eval(run, resources, out, concurrency=1, secrets=secrets))
    _RUNNING.clear()
    _RUNNING.add(job.task)
    return job


async def follow(job: EvalJob):
    """Yield the bar each POLL_S until the eval ends (its exception, if any, is raised after the last bar)."""
    while not job.task.done():
        await asyncio.wait({job.task}, timeout=POLL_S)
        yield job.progress()
    job.task.result()
