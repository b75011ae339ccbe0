"""Start and stop a real router (vllm-router, from PyPI) in front of OpenAI-compatible replicas on loopback,
for the router tests and `bench --prefix / --scale`. Not a router of our own: it only runs the binary with
the flags docs/several-gpus.md gives a lab, and waits (bounded) for it to answer."""
from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from r2mad.settings.config import ConfigError

AFFINITY = "consistent_hash"  # the policy that keeps one X-Session-ID on one worker (vllm-router's README)
START_S = 30.0  # the most seconds to wait for the router to answer /health


def router_binary() -> str:
    """The vllm-router executable next to this Python, or on PATH."""
    here = Path(sys.executable).parent / "vllm-router"
    found = str(here) if here.exists() else shutil.which("vllm-router")
    if not found:
        raise ConfigError("vllm-router is not installed; run `pip install vllm-router==0.1.17` "
                          "(it is in requirements.txt).")
    return found


ROUTE_LINE = re.compile(r"key='header:x-session-id:([^']*)' -> worker='([^']*)'")


def routes_in_log(text: str) -> dict[str, list[str]]:
    """Where vllm-router (at log level info) sent each request, per routing key: the router's own word on
    which worker served a call, for servers that do not name themselves (llama.cpp's, vLLM's)."""
    routes: dict[str, list[str]] = {}
    for key, worker in ROUTE_LINE.findall(re.sub(r"\x1b\[[0-9;]*m", "", text)):
        routes.setdefault(key, []).append(worker)
    return routes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Router:
    """`with Router(worker_urls) as r:` point a backbone's base_url at r.base_url."""
    worker_urls: list[str]
    policy: str = AFFINITY
    port: int = 0
    retries: int = 3  # the router's own retries of a failed worker call (it then picks again)
    extra: list[str] = field(default_factory=list)
    log_file: str | None = None  # where the router's log goes (default: discarded)
    log_level: str = "warning"  # "info" logs where each request's key went (routes_in_log reads it)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [router_binary(), "--host", "127.0.0.1", "--port", str(self.port), "--policy", self.policy,
                "--worker-urls", *self.worker_urls, "--log-level", self.log_level,
                "--retry-max-retries", str(self.retries), "--retry-initial-backoff-ms", "50",
                "--health-check-interval-secs", "1", "--health-failure-threshold", "1",
                "--cb-failure-threshold", "1", "--prometheus-port", str(free_port()), *self.extra]

    def __enter__(self) -> Router:
        self.port = self.port or free_port()
        sink = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL  # noqa: SIM115 - closed in stop
        self._sink = sink
        self.process = subprocess.Popen(self.command(), stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.__exit__()
                raise ConfigError(f"vllm-router exited with code {self.process.returncode} at start; run "
                                  f"`{' '.join(self.command())}` to see why.")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        raise ConfigError(f"vllm-router did not answer on port {self.port} within {START_S:g} s; "
                          "check that its workers answer /health.")

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self._sink is not subprocess.DEVNULL:
            self._sink.close()
