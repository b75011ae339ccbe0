"""Servers a benchmark or a test starts as child processes, which end with it: on Linux the kernel kills a child
(SIGKILL) when the thread that started it ends, however that ends (a finished run, a `timeout` that killed it, an
OOM kill), through prctl(PR_SET_PDEATHSIG); elsewhere only a clean exit's `finally` stops them. Also the free
loopback port they listen on."""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
from typing import Any

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent(parent: int | None = None) -> None:
    """In a child process (a Popen preexec_fn, or the first line of a spawned process's target): ask the kernel
    to kill this process when its parent ends; if `parent` (its pid) already ended, end now."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent is not None and os.getppid() != parent:  # it ended before the line above
        os.kill(os.getpid(), signal.SIGKILL)


def child(command: list[str], **popen: Any) -> subprocess.Popen:
    """subprocess.Popen(command, **popen) for a server that must not outlive this process. Start it from the
    thread that lives as long as it should (the main thread of a benchmark or a test session)."""
    parent = os.getpid()
    return subprocess.Popen(command, preexec_fn=lambda: die_with_parent(parent), **popen)  # noqa: PLW1509
