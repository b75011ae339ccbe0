"""How many threads the embedded model's decode steps can use now: the cores this process may run on, less
what everything else on them used over the last moment (/proc/stat, minus this process's own CPU time).
llama.cpp's threads spin at every barrier, so a second thread on a core another process wants costs far more
than it wins (seconds a step), while on an idle core it makes a batched step ~1.8x faster (issue 25)."""
from __future__ import annotations

import os
import time

MOST = 4  # past four threads a 135M model's step is mostly barriers
WINDOW_S = 0.25  # how far back "now" looks; a neighbour that starts spinning is seen within this
SPARE = 0.9  # a core counts as free when others used at most a tenth of it


def _cpus() -> set[int]:
    return os.sched_getaffinity(0)


def _busy_seconds(cpus: set[int]) -> float | None:
    """CPU seconds spent busy on `cpus` since boot (every process), or None where /proc/stat is not there."""
    try:
        with open("/proc/stat") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    busy = 0
    for line in lines:
        name, *ticks = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            values = [int(t) for t in ticks[:8]]
            busy += sum(values) - values[3] - values[4]  # all but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    times = os.times()
    return times.user + times.system


class Cores:
    """`threads()`: 1 while any other process keeps a core of ours busy; up to `most` when cores are free."""

    def __init__(self, most: int = MOST, *, busy=_busy_seconds, own=_own_seconds, clock=time.monotonic):
        self.cpus = _cpus()
        self.most = max(1, min(most, len(self.cpus)))
        self.busy, self.own, self.clock = busy, own, clock
        self.last = self._sample()
        self.current = 1

    def _sample(self) -> tuple[float, float | None, float]:
        return self.clock(), self.busy(self.cpus), self.own()

    def threads(self) -> int:
        now = self._sample()
        elapsed = now[0] - self.last[0]
        if elapsed < WINDOW_S or self.most == 1:
            return self.current
        if now[1] is None or self.last[1] is None:  # nothing to measure by: the safe choice
            self.current = 1
        else:
            others = max(0.0, (now[1] - self.last[1]) - (now[2] - self.last[2])) / elapsed
            spare = len(self.cpus) - others
            self.current = max(1, min(self.most, int(spare + 1 - SPARE)))
        self.last = now
        return self.current
