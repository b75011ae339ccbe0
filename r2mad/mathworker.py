"""Killable child processes that run the slow part of a math check (math-verify, sympy) under a hard
bound on the child's own CPU time (so a busy machine, which stretches the wall clock, never turns a right
answer into a wrong one), with a wall-clock backstop for a check that waits instead of computing;
callable from any thread (no signals in the caller). Not for the cheap checks, which stay in-process.
A child is a fresh `python -m r2mad.grading.mathworker` (POSIX), not a multiprocessing spawn, which would
import the parent's __main__ (the whole app) into every child."""
from __future__ import annotations

import atexit
import importlib
import math
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any, Callable

CHECK_BOUND_S = 3.0  # CPU seconds; past this a check is given up: its child is killed, the pair counts as different
WALL_SLACK_S = 20.0  # the wall-clock backstop is the bound plus this (a loaded machine gives the child little CPU)
START_BOUND_S = 120.0  # a fresh child imports sympy and math-verify first; not counted in CHECK_BOUND_S
MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
PRELOAD = ("sympy", "math_verify")  # imported by a fresh child before it says it is ready (about 1 s)


class Overrun(Exception):
    """A check ran past its bound (or its child could not start or died); the child is gone."""


def _serve(conn) -> None:
    """The child: import PRELOAD, say ready, then run (function, args) requests until the parent closes
    its end. It runs at a lower priority, so a long check never slows the model's decoding; each check may
    use `bound_s` more CPU seconds (whole seconds, rounded up), past which the kernel ends the child (SIGXCPU)."""
    os.nice(10)
    for name in PRELOAD:
        importlib.import_module(name)
    conn.send("ready")
    while True:
        try:
            fn, args, bound_s = conn.recv()
            used = resource.getrusage(resource.RUSAGE_SELF)
            limit = math.ceil(used.ru_utime + used.ru_stime + bound_s)
            resource.setrlimit(resource.RLIMIT_CPU, (limit, resource.getrlimit(resource.RLIMIT_CPU)[1]))
            conn.send((True, fn(*args)))
        except EOFError:
            return
        except Exception as exc:  # a function that raised or could not be imported: the parent decides
            conn.send((False, f"{type(exc).__name__}: {exc}"))


class _Worker:
    """One child and our end of its socket; used by one thread at a time."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        with theirs:  # the child finds this process's modules (and tests) where this process does
            path = os.pathsep.join(p or os.getcwd() for p in sys.path)
            self.process = subprocess.Popen([sys.executable, "-m", "r2mad.grading.mathworker", str(theirs.fileno())],
                                            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                            env={**os.environ, "PYTHONPATH": path})
        self.conn = Connection(ours.detach())
        self.ready = False

    def call(self, fn: Callable, args: tuple, bound_s: float) -> Any:
        try:
            if not self.ready:
                if not self.conn.poll(START_BOUND_S):
                    raise Overrun(f"the math checker did not start within {START_BOUND_S:g} s")
                self.ready = self.conn.recv() == "ready"
            self.conn.send((fn, args, bound_s))
            if not self.conn.poll(bound_s + WALL_SLACK_S):
                raise Overrun(f"the check ran past {bound_s + WALL_SLACK_S:g} s")
            ok, value = self.conn.recv()
        except (EOFError, OSError) as exc:  # the child died (its CPU bound, killed, out of memory)
            if self.process.wait(5) == -signal.SIGXCPU:
                raise Overrun(f"the check used more than {bound_s:g} s of CPU") from exc
            raise Overrun(f"the math checker stopped ({exc or type(exc).__name__})") from exc
        if not ok:
            raise RuntimeError(value)
        return value

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(5)
        self.conn.close()


class _Pool:
    """Idle children handed to one caller at a time; at most MAX_WORKERS exist."""

    def __init__(self) -> None:
        self.idle: list[_Worker] = []
        self.count = 0
        self.changed = threading.Condition()

    def take(self) -> _Worker:
        with self.changed:
            while not self.idle and self.count >= MAX_WORKERS:
                self.changed.wait()
            if self.idle:
                return self.idle.pop()
            self.count += 1
        try:
            return _Worker()
        except Exception:
            self.lost()
            raise

    def spare(self) -> None:
        """Start one more idle child if there is room (never waits)."""
        with self.changed:
            if self.count >= MAX_WORKERS:
                return
            self.count += 1
        try:
            self.give_back(_Worker())
        except Exception:
            self.lost()  # the next check starts one, or says why it could not

    def give_back(self, worker: _Worker) -> None:
        with self.changed:
            self.idle.append(worker)
            self.changed.notify()

    def lost(self) -> None:
        with self.changed:
            self.count -= 1
            self.changed.notify()

    def shut(self) -> None:
        """Stop every idle child (tests; a busy one is stopped by its caller)."""
        with self.changed:
            idle, self.idle = self.idle, []
            self.count -= len(idle)
        for worker in idle:
            worker.kill()


_pool = _Pool()


def bounded(fn: Callable, *args: Any, bound_s: float | None = None) -> Any:
    """`fn(*args)` in a child process, its result back; raises Overrun past `bound_s` CPU seconds
    (CHECK_BOUND_S by default) or `bound_s + WALL_SLACK_S` on the wall clock, after killing the child, and
    RuntimeError when `fn` raised. `fn` must be importable by
    name (a module-level function), and `args` and the result picklable."""
    try:
        worker = _pool.take()
    except OSError as exc:  # no process could be started
        raise Overrun(f"the math checker could not start ({exc})") from exc
    try:
        value = worker.call(fn, args, CHECK_BOUND_S if bound_s is None else bound_s)
    except RuntimeError:  # `fn` raised; its child is fine
        _pool.give_back(worker)
        raise
    except BaseException:  # an overrun, or interrupted mid-call: the child may still answer, so it goes
        worker.kill()
        _pool.lost()
        _pool.spare()  # its successor imports while nobody waits on it
        raise
    _pool.give_back(worker)
    return value


def shut_down() -> None:
    _pool.shut()


atexit.register(shut_down)  # a busy child is killed by its caller; an idle one would wait for EOF anyway

if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))
