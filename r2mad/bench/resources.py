"""`python -m r2mad bench --memory` and `--parse`: what the default path costs a machine and what a
visitor reads. Resident memory of the app with its model process (after start, after a first debate,
the peak of a first R²-MAD debate that builds a bank index cold), a cold index build on its own, and
the share of UNPARSED round answers on the demo test questions with and without the answer guard.
Figures, not tests; the app runs as a real process driven through gradio_client."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from r2mad.config import ROOT, DebateSettings

DEMO_BANK = "memory/demo-mcq"


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (the model runs in a child), in MB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        total += int(status.split("VmRSS:")[1].split()[0]) if "VmRSS:" in status else 0
        todo += _children(p)
    return total / 1024


class Peak:
    """Samples a process tree's resident memory every `every_s` seconds while the block runs."""

    def __init__(self, pid: int, every_s: float = 0.05):
        self.pid, self.every_s, self.mb = pid, every_s, 0.0
        self._stop = threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.mb = max(self.mb, tree_rss_mb(self.pid))
            time.sleep(self.every_s)

    def __enter__(self) -> Peak:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, proc: subprocess.Popen, limit_s: float = 180) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited at start-up (exit code {proc.returncode})")
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the app did not answer {url} within {limit_s:g} s")


def app_memory() -> list[tuple[str, str]]:
    """The app as `make run` starts it (without warming the bank, to see the cold build), driven by a client."""
    from gradio_client import Client

    from r2mad.evaluation.datasets import load_split
    from r2mad.methods import FULL, PLAIN

    port, data = _free_port(), tempfile.mkdtemp(prefix="r2mad-bench-")
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "R2MAD_DATA_DIR": data}
    proc = subprocess.Popen([sys.executable, "-c", "import app; from r2mad.config import load_config; "
                             "app.serve(load_config(), warm=False)"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    try:
        url = f"http://127.0.0.1:{port}/"
        _wait_for(url + "gradio_api/info", proc)
        rows.append(("app RSS after start (MB)", f"{tree_rss_mb(proc.pid):.0f}"))
        client = Client(url, verbose=False)
        task = load_split("demo-mcq", "test").tasks[0]
        ask = dict(question=task.question, **{f"option_{x.lower()}": t for x, t in task.options},
                   gold=task.gold, backbone="smollm2-135m", api_name="/debate")
        with Peak(proc.pid) as first:
            client.predict(methods=[PLAIN], bank="", **ask)
        rows.append(("app + model process after a first MAD debate (MB)", f"{tree_rss_mb(proc.pid):.0f}"))
        rows.append(("peak during that debate (MB)", f"{first.mb:.0f}"))
        started = time.monotonic()
        with Peak(proc.pid) as cold:
            client.predict(methods=[FULL], bank=DEMO_BANK, **ask)
        rows.append((f"peak during a first R²-MAD debate, {DEMO_BANK} index built cold (MB)", f"{cold.mb:.0f}"))
        rows.append(("that debate's wall time, index build included (s)", f"{time.monotonic() - started:.1f}"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return rows


INDEX_ONLY = """
import sys, tempfile, time
from r2mad.memory.bank import MemoryBank
from r2mad.memory.embedder import load_embedder
started = time.monotonic()
embedder = load_embedder()
loaded = time.monotonic()
MemoryBank.open(sys.argv[1], embedder, index_root=tempfile.mkdtemp()).close()
print(f"{loaded - started:.1f} {time.monotonic() - loaded:.1f}")
"""


def index_memory(bank: str = DEMO_BANK) -> list[tuple[str, str]]:
    """A cold index build in a fresh process (what build-memory and a first visitor pay)."""
    proc = subprocess.Popen([sys.executable, "-c", INDEX_ONLY, str(ROOT / bank)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    with Peak(proc.pid) as peak:
        out, _ = proc.communicate()
    load_s, build_s = out.split()
    n = sum(1 for line in (ROOT / bank / "cases.jsonl").open() if line.strip())
    return [(f"cold index build of {bank} ({n} cases): embedder load / build (s)", f"{load_s} / {build_s}"),
            ("peak of that process (MB)", f"{peak.mb:.0f}")]


def parse_rates(limit: int | None = None) -> list[tuple[str, str]]:
    """UNPARSED share of round answers in MAD debates on the embedded model, demo test questions:
    before the guard (what extraction found) and after it (what the debate used)."""
    from r2mad.backends.embedded import EmbeddedBackend
    from r2mad.debate import Debate
    from r2mad.evaluation.datasets import load_split
    from r2mad.methods import PLAIN, make_method

    backend, rows = EmbeddedBackend(), []
    settings = DebateSettings(answer_guard="on", seed=0)
    for dataset in ("demo-mcq", "demo-math"):
        raw = guarded = total = 0
        for task in load_split(dataset, "test", limit=limit).tasks:
            t = asyncio.run(Debate(backend, make_method(PLAIN, settings)).run(task))
            turns = [turn for r in t.rounds for turn in r.turns if turn.error is None]
            total += len(turns)
            raw += sum(turn.answer.source != "parsed" for turn in turns)
            guarded += sum(turn.answer.source == "unparsed" for turn in turns)
        rows.append((f"{dataset} test, UNPARSED round answers without / with the guard ({total} answers)",
                     f"{raw / total:.0%} / {guarded / total:.0%}"))
    return rows
