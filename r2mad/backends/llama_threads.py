"""How many threads the embedded model decodes with: the choice that is fastest right now, measured while it
runs (two threads win on quiet cores; one wins when another process keeps a core busy, since llama.cpp's
threads spin at every barrier). Pure bookkeeping: the scheduler applies the number it picks."""
from __future__ import annotations

import os
import statistics
from collections import deque


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def bucket(n_tokens: int) -> int:
    """Steps are compared with steps of a similar size: exact up to 16 tokens, then by power of two."""
    return n_tokens if n_tokens <= 16 else 1 << (n_tokens - 1).bit_length()


class ThreadTuner:
    """Uses `threads` for most steps; every `every` steps it tries the other choice for `probe` steps
    and keeps whichever had the lower median time for steps of that size (10% in favour of staying)."""

    def __init__(self, cores: int | None = None, *, every: int = 40, probe: int = 4, keep: int = 6):
        cores = cores or usable_cores()
        self.choices = sorted({1, max(1, min(cores, 4))})
        self.threads = self.choices[-1]
        self.every, self.probe, self.keep = every, probe, keep
        self.times: dict[tuple[int, int], deque] = {}
        self.steps, self.probing = 0, 0

    def other(self) -> int:
        return next((c for c in self.choices if c != self.threads), self.threads)

    def pick(self, n_tokens: int) -> int:
        """The thread count for the next step of `n_tokens` tokens."""
        if len(self.choices) == 1:
            return self.threads
        self.steps += 1
        if self.probing == 0 and self.steps % self.every == 0:
            self.probing = self.probe
        if self.probing:
            self.probing -= 1
            return self.other()
        return self.threads

    def record(self, threads: int, n_tokens: int, seconds: float) -> None:
        key = (threads, bucket(n_tokens))
        self.times.setdefault(key, deque(maxlen=self.keep)).append(seconds)
        if threads != self.threads and self.probing == 0:
            self._decide(bucket(n_tokens))

    def _decide(self, size: int) -> None:
        mine, theirs = self.times.get((self.threads, size)), self.times.get((self.other(), size))
        if mine and theirs and statistics.median(theirs) < 0.9 * statistics.median(mine):
            self.threads = self.other()
