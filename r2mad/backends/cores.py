"""How many threads the embedded model's decode steps can use now: the cores this process may run on, less
what everything else on them used over the last moment, minus this process's own CPU time. In a container
with a CPU quota (a Space: cgroup v2 cpu.max) that is the quota and what the container used; elsewhere the
CPUs of our affinity and what every process used on them (/proc/stat). llama.cpp's threads spin at every
barrier, so a second thread on a core another process wants costs far more than it wins (seconds a step),
while on an idle core it makes a batched step ~1.8x faster (issue 25)."""
from __future__ import annotations

import os
import time
from pathlib import Path

MOST = 4  # past four threads a 135M model's step is mostly barriers
WINDOW_S = 0.25  # how far back "now" looks; a neighbour that starts spinning is seen within this
# A core counts as free when others used at most a fifth of it (the app and its visitors' clients use about a
# tenth beside a busy model). Beside a neighbour taking 10 / 20 / 25 % of a core in 5 ms bursts, 8 sequences
# generated 232 / 178 / 144 tokens/s on two threads and 148 / 147 / 145 on one (issue 52).
SPARE = 0.8
CGROUP = Path("/sys/fs/cgroup")


def _cpus() -> set[int]:
    return os.sched_getaffinity(0)


def _quota(cgroup: Path = CGROUP) -> float | None:
    """CPUs the container may use (cgroup v2 cpu.max "quota period"), or None where there is no limit."""
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def _container_seconds(cgroup: Path = CGROUP) -> float | None:
    """CPU seconds the container has used (cgroup v2 cpu.stat usage_usec)."""
    try:
        for line in (cgroup / "cpu.stat").read_text().splitlines():
            name, value = line.split()
            if name == "usage_usec":
                return int(value) / 1e6
    except (OSError, ValueError):
        pass
    return None


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

    def __init__(self, most: int = MOST, *, quota=_quota, busy=None, own=_own_seconds, clock=time.monotonic):
        cpus, limit = _cpus(), quota()
        self.cores = min(len(cpus), limit) if limit else len(cpus)
        self.most = max(1, min(most, int(self.cores)))
        if busy is None:
            busy = _container_seconds if limit else (lambda: _busy_seconds(cpus))
        self.busy, self.own, self.clock = busy, own, clock
        self.last = self._sample(self.clock())
        self.current = 1

    def _sample(self, at: float) -> tuple[float, float | None, float]:
        return at, self.busy(), self.own()

    def threads(self) -> int:
        at = self.clock()
        elapsed = at - self.last[0]
        if elapsed < WINDOW_S or self.most == 1:
            return self.current
        now = self._sample(at)
        if now[1] is None or self.last[1] is None:  # nothing to measure by: the safe choice
            self.current = 1
        else:
            others = max(0.0, (now[1] - self.last[1]) - (now[2] - self.last[2])) / elapsed
            spare = self.cores - others
            self.current = max(1, min(self.most, int(spare + 1 - SPARE)))
        self.last = now
        return self.current


class StepCosts:
    """Seconds a step of k single tokens takes on t threads, as measured here (a running average). On one
    thread llama.cpp's kernels for 2-4 tokens cost more than as many steps of 1 (1.7x for 3 tokens) while 8
    together cost less (measured for issue 25); which way this machine goes is read, not assumed."""

    RETRY = 64  # every so many choices the batch is tried again: costs move with the machine's load

    def __init__(self):
        self.seconds: dict[tuple[int, int], float] = {}
        self.choices = 0

    def record(self, threads: int, k: int, seconds: float) -> None:
        old = self.seconds.get((threads, k))
        self.seconds[threads, k] = seconds if old is None else 0.8 * old + 0.2 * seconds

    def split(self, threads: int, k: int) -> bool:
        """Whether k tokens go faster as k steps of one than as one step."""
        if k == 1:
            return False
        self.choices += 1
        together, alone = self.seconds.get((threads, k)), self.seconds.get((threads, 1))
        if together is None or alone is None or self.choices % self.RETRY == 0:
            return False
        return together > k * alone
