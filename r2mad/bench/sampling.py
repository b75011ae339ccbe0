"""`bench` figures for Self-Consistency's samples on the scripted server: one request per sample against
one request for n samples (native_n). Figures, not timed tests."""
from __future__ import annotations

import asyncio
import time

from r2mad.engine.runner import Setup, run_debate
from r2mad.methods import SAMPLING
from r2mad.settings.config import DebateSettings
from r2mad.types import Task

SAMPLES = 9


async def _sc(server, task: Task, settings: DebateSettings, native_n: bool) -> dict:
    from r2mad.backends.openai_compat import OpenAICompatBackend

    backend = OpenAICompatBackend(base_url=server.base_url, model="bench", api_key=None, native_n=native_n)
    before, started = server.hits, time.monotonic()
    t = await run_debate(task, SAMPLING, Setup(backend, settings))
    usage = t.usage()
    await backend.aclose()
    return {"wall": time.monotonic() - started, "requests": server.hits - before, "prompt": usage.tokens_in,
            "samples": len(t.rounds[0].turns)}


def sampling_figures(server, task: Task, repeats: int = 3, label: str = "") -> list[dict]:
    """Median wall, requests and prompt tokens of one Self-Consistency run, both ways."""
    settings = DebateSettings(samples=SAMPLES, max_tokens=64, seed=1, answer_guard="off")
    rows = []
    for native_n, how in ((False, "separate requests"), (True, f"one request, n = {SAMPLES}")):
        runs = sorted((asyncio.run(_sc(server, task, settings, native_n)) for _ in range(repeats)),
                      key=lambda r: r["wall"])
        mid = runs[len(runs) // 2]
        rows.append({"figure": f"{label}{how}: wall s / requests / prompt tokens",
                     "value": f"{mid['wall']:.2f} / {mid['requests']} / {mid['prompt']}", "target": ""})
    return rows
