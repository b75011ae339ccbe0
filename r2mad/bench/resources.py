"""`python -m r2mad bench --memory` and `--parse`: what the default path costs a machine and what a
visitor reads. Resident memory of the app with its model process (after start, after a first debate,
the peak of a first R²-MAD debate that builds a bank index cold), a cold index build on its own, and
the share of UNPARSED round answers on the demo test questions with and without the answer guard.
Figures, not tests; the app runs as a real process driven through gradio_client."""
from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from r2mad.bench.appproc import AppProcess, Peak, tree_rss_mb
from r2mad.bench.children import child
from r2mad.settings.config import ROOT, DebateSettings

DEMO_BANK = "memory/demo-mcq"


def app_memory(**defaults) -> list[tuple[str, str]]:
    """The app as `make run` starts it (without warming the bank, to see the cold build), driven through its
    public API by a client. `defaults` override the debate defaults (the quick form: fewer tokens)."""
    from gradio_client import Client

    from r2mad.evaluation.datasets import load_split
    from r2mad.methods import FULL, PLAIN

    rows = []
    with AppProcess(warm=False, **defaults) as app:
        rows.append(("app RSS after start (MB)", f"{tree_rss_mb(app.pid):.0f}"))
        client = Client(app.url, verbose=False)
        task = load_split("demo-mcq", "test").tasks[0]
        ask = dict(question=task.question, options=dict(task.options), gold=task.gold, backbone="smollm2-135m",
                   api_name="/run_debate")
        with Peak(app.pid) as first:
            client.predict(method=PLAIN, bank="", **ask)
        rows.append(("app + model process after a first MAD debate (MB)", f"{tree_rss_mb(app.pid):.0f}"))
        rows.append(("peak during that debate (MB)", f"{first.mb:.0f}"))
        started = time.monotonic()
        with Peak(app.pid) as cold:
            client.predict(method=FULL, bank=DEMO_BANK, **ask)
        rows.append((f"peak during a first R²-MAD debate, {DEMO_BANK} index built cold (MB)", f"{cold.mb:.0f}"))
        rows.append(("that debate's wall time, index build included (s)", f"{time.monotonic() - started:.1f}"))
    return rows


INDEX_ONLY = """
import sys, tempfile, time
from r2mad.memory.bank import MemoryBank
from r2mad.backends.embedder import load_embedder
started = time.monotonic()
embedder = load_embedder()
loaded = time.monotonic()
MemoryBank.open(sys.argv[1], embedder, index_root=tempfile.mkdtemp()).close()
print(f"{loaded - started:.1f} {time.monotonic() - loaded:.1f}")
"""


def index_memory(bank: str = DEMO_BANK) -> list[tuple[str, str]]:
    """A cold index build in a fresh process (what build-memory and a first visitor pay)."""
    proc = child([sys.executable, "-c", INDEX_ONLY, str(ROOT / bank)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    with Peak(proc.pid) as peak:
        out, _ = proc.communicate()
    load_s, build_s = out.split()
    n = sum(1 for line in (ROOT / bank / "cases.jsonl").open() if line.strip())
    return [(f"cold index build of {bank} ({n} cases): embedder load / build (s)", f"{load_s} / {build_s}"),
            ("peak of that process (MB)", f"{peak.mb:.0f}")]


def parse_rates(limit: int | None = None, **overrides) -> list[tuple[str, str]]:
    """UNPARSED share of round answers in MAD debates on the embedded model, demo test questions:
    before the guard (what extraction found) and after it (what the debate used). `overrides` change the
    debate settings (the quick form: fewer agents, rounds and tokens)."""
    from r2mad.backends.embedded import EmbeddedBackend
    from r2mad.debate import Debate
    from r2mad.evaluation.datasets import load_split
    from r2mad.methods import PLAIN, make_method

    backend, rows = EmbeddedBackend(), []
    settings = DebateSettings(answer_guard="on", seed=0).replace(**overrides)
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
