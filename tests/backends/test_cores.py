"""Decode threads follow the cores nobody else is using: measured from CPU seconds, not guessed."""
import subprocess
import sys
import time

import pytest

from r2mad.backends import cores
from r2mad.backends.cores import Cores, StepCosts


class Machine:
    """A scripted machine: `tick(others, own)` spends a quarter second with other processes using `others`
    cores and this process `own` cores."""

    def __init__(self):
        self.now = self.busy_s = self.own_s = 0.0

    def tick(self, others: float, own: float = 1.0) -> None:
        self.now += cores.WINDOW_S
        self.busy_s += (others + own) * cores.WINDOW_S
        self.own_s += own * cores.WINDOW_S


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(cores, "_cpus", lambda: {0, 1})
    machine = Machine()
    watch = Cores(quota=lambda: None, busy=lambda: machine.busy_s, own=lambda: machine.own_s,
                  clock=lambda: machine.now)
    return machine, watch


def test_two_threads_only_while_the_other_core_is_free(two_cores):
    machine, watch = two_cores
    assert watch.threads() == 1  # nothing measured yet
    machine.tick(others=0.05, own=2.0)  # our two threads are not "others"
    assert watch.threads() == 2
    machine.tick(others=1.0, own=1.0)  # a neighbour keeps a core busy
    assert watch.threads() == 1
    machine.tick(others=0.3)  # the app itself working a third of a core: still not free
    assert watch.threads() == 1
    machine.tick(others=0.15)  # the app and its visitors' clients beside a busy model: free enough
    assert watch.threads() == 2
    machine.tick(others=0.0)
    assert watch.threads() == 2


def test_the_choice_holds_for_a_window(two_cores):
    machine, watch = two_cores
    machine.tick(others=0.0)
    assert watch.threads() == 2
    machine.busy_s += 5.0  # a burst seen only when the window ends
    machine.now += cores.WINDOW_S / 2
    assert watch.threads() == 2
    machine.now += cores.WINDOW_S / 2
    assert watch.threads() == 1


def test_no_proc_stat_means_one_thread(monkeypatch):
    monkeypatch.setattr(cores, "_cpus", lambda: {0, 1})
    clock = iter(range(100))
    watch = Cores(quota=lambda: None, busy=lambda: None, clock=lambda: next(clock))
    assert [watch.threads() for _ in range(3)] == [1, 1, 1]


def test_a_container_quota_bounds_the_threads_and_its_own_usage_is_what_counts(monkeypatch, tmp_path):
    """A Space: 16 CPUs in our affinity, a quota of 2; other tenants' load on the host is not ours to see."""
    monkeypatch.setattr(cores, "_cpus", lambda: set(range(16)))
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    (tmp_path / "cpu.stat").write_text("usage_usec 5000000\nuser_usec 4000000\n")
    assert cores._quota(tmp_path) == 2.0 and cores._container_seconds(tmp_path) == 5.0
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cores._quota(tmp_path) is None
    machine = Machine()
    watch = Cores(quota=lambda: 2.0, busy=lambda: machine.busy_s, own=lambda: machine.own_s,
                  clock=lambda: machine.now)
    assert (watch.cores, watch.most) == (2.0, 2)
    machine.tick(others=0.0, own=2.0)
    assert watch.threads() == 2
    machine.tick(others=0.5)  # the app in the same container at half a core
    assert watch.threads() == 1


def test_one_core_is_always_one_thread(monkeypatch):
    monkeypatch.setattr(cores, "_cpus", lambda: {3})
    clock = iter(range(100))
    watch = Cores(quota=lambda: None, busy=lambda: 0.0, own=lambda: 0.0, clock=lambda: next(clock))
    assert [watch.threads() for _ in range(3)] == [1, 1, 1]


@pytest.mark.slow
def test_a_real_neighbour_is_seen():
    """On this machine's own /proc/stat: a process spinning on every core we may use leaves one thread."""
    watch = Cores()
    if watch.most == 1:
        pytest.skip("one core: always one thread")
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(int(watch.cores))]
    try:
        time.sleep(cores.WINDOW_S * 2)
        watch.threads()
        time.sleep(cores.WINDOW_S * 2)
        assert watch.threads() == 1
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_tokens_are_decoded_one_by_one_only_where_that_was_measured_faster():
    costs = StepCosts()
    assert not costs.split(1, 3)  # nothing measured: batch, and so measure the batch
    costs.record(1, 3, 0.033)
    assert not costs.split(1, 3)  # a step of one never measured yet
    costs.record(1, 1, 0.0065)
    assert costs.split(1, 3)  # 33 ms together > 3 x 6.5 ms apart (a single thread's 2-4 token kernels)
    costs.record(1, 8, 0.037)
    assert not costs.split(1, 8)  # 37 ms < 8 x 6.5 ms: together
    assert not costs.split(2, 3)  # threads are measured apart
    assert not costs.split(1, 1)
    tries = [costs.split(1, 3) for _ in range(StepCosts.RETRY)]
    assert tries.count(False) == 1  # the batch is tried again now and then, as the load changes
    for _ in range(20):
        costs.record(1, 3, 0.015)  # it got cheaper: the average follows
    assert not costs.split(1, 3)
