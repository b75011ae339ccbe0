"""`python -m r2mad bench --load`: what many visitors at once cost the embedded default. The embedded model's
calls alone (quiet, and beside a busy core), with several in flight, and one MAD debate of all its rounds,
through its public `chat`; then the app as `make run` starts it (early stop as configured, unless the plan
turns it off), driven through its public API by distinct gradio_client visitors: how fast it answers a poll
while the default bank warms up, N debates at once, and the peak resident memory of the app with its model
process. Figures, not tests: nothing here asserts a time."""
from __future__ import annotations

import asyncio
import statistics
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from r2mad.bench.appproc import QUICK_DEBATE, AppProcess, Peak, tree_hwm_mb
from r2mad.bench.children import child
from r2mad.methods import PLAIN, SINGLE
from r2mad.types import Message

SEED = 7
PROMPTS = tuple(f"Write a short story about a {animal} who learns to count." for animal in
                ("fox", "heron", "badger", "otter", "crow", "hare", "lynx", "mole"))


@dataclass(frozen=True)
class LoadPlan:
    visitors: int = 8  # concurrent debates, each from its own client (session)
    call_tokens: int = 64  # max_tokens of every embedded-model call measured directly
    debate: tuple[tuple[str, object], ...] = ()  # debate defaults changed in the app's configs (methods.yaml)
    in_flight: tuple[int, ...] = (1, 3, 8)  # sequences in flight for the throughput figure
    repeats: int = 3  # single calls timed, quiet and beside a busy core (the median is printed)


QUICK = LoadPlan(visitors=2, call_tokens=8, in_flight=(1, 3), repeats=1,
                 debate=tuple(QUICK_DEBATE.items()))


@contextmanager
def busy_core():
    """One process spinning on a core for the block's duration (a neighbour on a shared machine)."""
    spinner = child([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)  # let it get scheduled
        yield
    finally:
        spinner.kill()
        spinner.wait()


async def _calls(backend, k: int, tokens: int) -> tuple[float, int]:
    """k calls of the backend at once (temperature 0, a fixed seed): (wall s, tokens generated in all)."""
    started = time.monotonic()
    outs = await asyncio.gather(*(backend.chat([Message("user", PROMPTS[i % len(PROMPTS)])], temperature=0.0,
                                                seed=SEED, max_tokens=tokens) for i in range(k)))
    return time.monotonic() - started, sum(c.tokens_out for out in outs for c in out)


def model_figures(plan: LoadPlan, backend=None) -> list[dict]:
    """The embedded model's calls timed directly through its `chat` (a process of its own, apart from the app)."""
    if backend is None:
        from r2mad.backends.embedded import EmbeddedBackend
        backend = EmbeddedBackend()
    asyncio.run(_calls(backend, 1, 2))  # starts and loads the model process

    def one_call() -> tuple[float, int]:
        runs = sorted(asyncio.run(_calls(backend, 1, plan.call_tokens)) for _ in range(plan.repeats))
        return runs[len(runs) // 2]

    quiet, tokens = one_call()
    with busy_core():
        busy, _ = one_call()
    rates = {}
    for k in plan.in_flight:
        wall, generated = asyncio.run(_calls(backend, k, plan.call_tokens))
        rates[k] = generated / wall
    low, high = min(plan.in_flight), max(plan.in_flight)
    alone = asyncio.run(_mad_alone(backend, plan))
    return [
        {"figure": f"one embedded-model call ({tokens} tokens), quiet machine / beside a busy core (s)",
         "value": f"{quiet:.2f} / {busy:.2f}"},
        {"figure": "  beside a busy core / quiet", "value": f"{busy / quiet:.2f}"},
        {"figure": "embedded model, generated tokens/s at " + " / ".join(map(str, plan.in_flight)) +
                   " sequences in flight", "value": " / ".join(f"{rates[k]:.1f}" for k in plan.in_flight)},
        {"figure": f"  {high} in flight / {low}", "value": f"{rates[high] / rates[low]:.2f}"},
        {"figure": f"MAD alone, {_shape(alone)}, early stop off: wall s (calls, tokens generated)",
         "value": _one(alone)},
    ]


async def _mad_alone(backend, plan: LoadPlan) -> dict:
    """One MAD debate of all its rounds on the model process, the app's debate settings otherwise."""
    from r2mad.debate import Debate
    from r2mad.methods import make_method
    from r2mad.settings.config import load_config
    from r2mad.types import Task

    settings = load_config().settings.replace(**{**dict(plan.debate), "early_stop": False})
    started = time.monotonic()
    t = await Debate(backend, make_method(PLAIN, settings)).run(Task("math", "What is 17 + 0?", gold="17"))
    usage = t.usage()
    return {"wall": time.monotonic() - started, "calls": usage.calls, "generated": usage.tokens_out,
            "rounds": len(t.rounds), "agents": len(t.rounds[0].turns) if t.rounds else 0}


def warmup_polls(url: str, client) -> list[dict]:
    """How long the page's /gradio_api/info takes while the default bank warms up (its first opening loads the
    embedder and builds the index in a worker thread, as at start-up): polled every 0.2 s from the moment a
    search of that bank, which opens it, is sent until it answers."""
    latencies, failed, done = [], [], threading.Event()

    def poll() -> None:
        while True:  # at least one poll, however fast the warm-up
            started = time.monotonic()
            try:
                urllib.request.urlopen(url + "gradio_api/info", timeout=30).read()
            except OSError:
                failed.append(1)
            latencies.append(time.monotonic() - started)
            if done.wait(0.2):
                return

    poller = threading.Thread(target=poll, daemon=True)
    started = time.monotonic()
    poller.start()
    try:
        client.predict(query="", limit=1, api_name="/search_bank")
    finally:
        done.set()
        poller.join()
    warm_s = time.monotonic() - started
    return [{"figure": f"the app answers a poll while the default bank warms up ({len(latencies)} polls over "
                       f"{warm_s:.1f} s{f', {len(failed)} failed' if failed else ''}): max / p50 (s)",
             "value": f"{max(latencies):.3f} / {statistics.median(latencies):.3f}"}]


def _question(i: int) -> dict:
    """Visitor i's multiple-choice question (the right option is B)."""
    options = {"A": str(16 + i), "B": str(17 + i), "C": str(18 + i), "D": str(27 + i)}
    return dict(question=f"What is 17 + {i}?", options=options, gold="B", method=PLAIN, api_name="/run_debate")


def _debate(client, i: int) -> dict:
    """One MAD debate through the public API: its wall time and what it cost, or why it failed."""
    started = time.monotonic()
    try:
        t = client.predict(**_question(i))
    except Exception as exc:  # a refused or failed visitor is a figure too, not the end of the bench
        return {"wall": time.monotonic() - started, "ended": time.monotonic(), "error": str(exc)[:200]}
    why = next((x["error"] for r in t["rounds"] for x in r["turns"] if x["error"]), None) or " ".join(t["notices"][-1:])
    return {"wall": time.monotonic() - started, "ended": time.monotonic(), "status": t["status"], "why": why,
            "run_id": t["run_id"], "calls": t["usage"]["calls"], "prompt": t["usage"]["tokens_in"],
            "generated": t["usage"]["tokens_out"], "rounds": len(t["rounds"]),
            "agents": len(t["rounds"][0]["turns"]) if t["rounds"] else 0}


def concurrent_debates(url: str, visitors: int) -> tuple[float, list[dict]]:
    """`visitors` debates at once, each from its own client (its own session, so its own visitor):
    (the moment they were all sent, one result per visitor)."""
    from gradio_client import Client

    clients = [Client(url, verbose=False) for _ in range(visitors)]
    results: list[dict] = [{} for _ in clients]
    gate = threading.Barrier(visitors + 1)

    def visit(i: int) -> None:
        gate.wait()
        results[i] = _debate(clients[i], i + 1)

    threads = [threading.Thread(target=visit, args=(i,)) for i in range(visitors)]
    for thread in threads:
        thread.start()
    gate.wait()
    sent = time.monotonic()
    for thread in threads:
        thread.join()
    return sent, results


def app_figures(plan: LoadPlan) -> list[dict]:
    """The app on the embedded defaults (the plan's debate settings changed; the quick plan shortens the
    debates), driven through its public API by distinct gradio_client visitors."""
    import os

    from gradio_client import Client

    from r2mad.bench.rawllama import raw_rate
    from r2mad.runs.store import RunStore
    from r2mad.settings.config import load_config

    limit = load_config().app.concurrency_limit
    with AppProcess(warm=False, **dict(plan.debate)) as app, Peak(app.pid, every_s=0.1) as peak:
        # the default bank is warmed while polled, and the first call starts the model
        client = Client(app.url, verbose=False)
        rows = warmup_polls(app.url, client)
        client.predict(question="What is 2 + 2?", method=SINGLE, api_name="/run_debate")
        sent, results = concurrent_debates(app.url, plan.visitors)
        hwm = tree_hwm_mb(app.pid)
        store = RunStore(load_config(env={**os.environ, "R2MAD_DATA_DIR": str(app.data_dir)}).app.runs_db)
        finished = [r for r in results if r.get("status") == "done"]
        transcripts = [store.get_run(r["run_id"]).transcript for r in finished]
    ends = np.asarray([r["ended"] - sent for r in results])
    rows.append({"figure": f"{plan.visitors} MAD multiple-choice debates at once, distinct visitors (the app runs "
                           f"{limit} at a time): p50 / p95 / last ended (s)",
                 "value": f"{np.percentile(ends, 50):.1f} / {np.percentile(ends, 95):.1f} / {ends.max():.1f}"})
    generated, prompt = sum(r["generated"] for r in finished), sum(r["prompt"] for r in finished)
    app_rate = (prompt + generated) / ends.max()
    rows.append({"figure": "  finished / tokens per second over them all, prompt + generated (generated) / rounds each "
                           "ran", "value": f"{len(finished)} of {plan.visitors} / {app_rate:.1f} "
                                           f"({generated / ends.max():.1f}) / "
                                           + " ".join(str(r.get("rounds", "-")) for r in results)})
    errors = sorted({r["error"] for r in results if "error" in r} |
                    {f"{r['status']}: {r['why'] or 'no reason given'}"[:200] for r in results
                     if r.get("status") not in (None, "done")})
    if errors:
        rows.append({"figure": "  why the others did not finish", "value": "; ".join(errors)})
    if transcripts:
        raw = raw_rate(transcripts)
        raw_rate_s = (raw["prompt"] + raw["generated"]) / raw["wall"]
        rows.append({"figure": "  raw llama.cpp on the agents' same prompts (each round of all the debates at once, "
                               "the same batching and threads, no app): s, tokens/s prompt + generated / the app's "
                               "ratio",
                     "value": f"{raw['wall']:.1f} s, {raw_rate_s:.1f} / {app_rate / raw_rate_s:.2f}"})
    rows.append({"figure": "app + model process peak RSS (MB): sampled every 0.1 s / sum of each one's VmHWM",
                 "value": f"{peak.mb:.0f} / {hwm:.0f}"})
    return rows


def _shape(result: dict) -> str:
    return f"{result['agents']} agents x {result['rounds']} rounds" if "agents" in result else "failed"


def _one(result: dict) -> str:
    if "error" in result:
        return f"failed after {result['wall']:.1f} s: {result['error']}"
    return f"{result['wall']:.1f} ({result['calls']} calls, {result['generated']} tokens)"

