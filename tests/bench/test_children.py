"""Nothing left behind: the servers a benchmark starts (the vllm-router, the scripted replicas' process, any
`child`) end when the benchmark is killed outright, as a `timeout` on a loaded machine does."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # real processes: a bench, its replicas and the router
GONE_S = 30  # a hang guard: the kernel kills the children at once; a busy machine may be slow to reap them

# What `bench --prefix` runs before its figures: the scripted replicas in their own process and the router in
# front of them; then it prints the children's pids and waits to be killed.
BENCH = """
import os, sys, time
from r2mad.bench.children import child
from r2mad.bench.fleet import replica_reply
from testing.replicas import ReplicasProcess
with ReplicasProcess(1, responder=replica_reply) as fleet:
    pids = [fleet._process.pid, child([sys.executable, "-c", "import time; time.sleep(600)"]).pid]
    if sys.argv[1] == "router":
        from r2mad.bench.router import Router
        router = Router(fleet.urls).__enter__()
        pids.append(router.process.pid)
    print(*pids, flush=True)
    time.sleep(600)
"""


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def run_and_kill(what: str) -> list[int]:
    """Start BENCH, SIGKILL it once its children run; the children's pids."""
    bench = subprocess.Popen([sys.executable, "-c", BENCH, what], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        pids = [int(p) for p in bench.stdout.readline().split()]
        assert pids and all(map(alive, pids)), "the bench's children did not start"
    finally:
        bench.kill()
        bench.wait()
    return pids


def wait_gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + GONE_S
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for pid in left:  # leave nothing behind even when the test fails
        os.kill(pid, signal.SIGKILL)
    return left


LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")


def has_router() -> bool:
    from r2mad.bench.router import router_binary
    from r2mad.settings.config import ConfigError

    try:
        return bool(router_binary())
    except ConfigError:
        return False


@LINUX
def test_a_killed_bench_leaves_no_replicas_and_no_child_behind():
    assert wait_gone(run_and_kill("replicas")) == []


@LINUX
@pytest.mark.skipif(not has_router(), reason="vllm-router is not installed")
def test_a_killed_bench_leaves_no_router_behind():
    assert wait_gone(run_and_kill("router")) == []
