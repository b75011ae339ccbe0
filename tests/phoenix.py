"""A real Arize Phoenix on a free loopback port for the trace tests. Phoenix's pins clash with ours, so it lives in
its own virtual environment under var/ (made once, then reused), and its client is used from there too: `query`
runs a short script in that environment and returns its JSON. Skips, with the reason, when PyPI is out of reach."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import ROOT, free_port

PHOENIX = "arize-phoenix==20.26.1"
CLIENT = "arize-phoenix-client==3.5.0"
VENV = ROOT / "var" / "phoenix-venv"
PYTHON = VENV / "bin" / "python"


def phoenix_python() -> Path:
    """The environment's Python, installing Phoenix into it the first time (minutes)."""
    ready = VENV / ".ready"
    if ready.exists() and PYTHON.exists():
        return PYTHON
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
    done = subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", PHOENIX, CLIENT], capture_output=True,
                          text=True, timeout=1800)
    if done.returncode != 0:
        if any(w in done.stderr for w in ("NewConnectionError", "Temporary failure", "Network is unreachable",
                                          "Max retries exceeded", "ConnectTimeout", "Name or service not known")):
            pytest.skip(f"PyPI is out of reach, so Phoenix could not be installed: {done.stderr.strip()[-300:]}")
        raise RuntimeError(f"pip could not install {PHOENIX}: {done.stderr.strip()[-600:]}")
    ready.write_text(PHOENIX + "\n")
    return PYTHON


@contextmanager
def phoenix_server(workdir: Path, wait_s: float = 180.0):
    """Phoenix serving on 127.0.0.1 (HTTP and gRPC on free ports, its database under `workdir`); yields its URL."""
    python = phoenix_python()
    port, grpc = free_port(), free_port()
    env = {**os.environ, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc),
           "PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = open(workdir / "phoenix.log", "w")
    proc = subprocess.Popen([str(python), "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + wait_s
        while True:
            if proc.poll() is not None:
                told = (workdir / "phoenix.log").read_text()[-800:]
                raise RuntimeError(f"Phoenix exited with {proc.returncode}: {told}")
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Phoenix did not answer on {url} within {wait_s:g} s")
            time.sleep(0.5)  # polling the server's health, not waiting a fixed time
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def query(script: str, *args: str, timeout_s: float = 120.0):
    """Run `script` with Phoenix's own environment (its client) and return the JSON it prints."""
    done = subprocess.run([str(phoenix_python()), "-c", script, *args], capture_output=True, text=True,
                          timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-1500:])
    return json.loads(done.stdout)
