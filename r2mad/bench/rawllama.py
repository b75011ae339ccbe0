"""The raw llama.cpp reference of `bench --load`: the prompts the app's debates sent, straight to llama-cpp-python in
this process through the same batching (llama_batch.Scheduler: the same weights, slots, window and threads),
with no app, no model process and no debate loop. A figure, not a test."""
from __future__ import annotations

import io
import queue
import threading
import time

from r2mad.types import Transcript


def waves(transcripts: list[Transcript]) -> list[list[dict]]:
    """Round r of every debate as one wave of requests: each agent's exact messages, its temperature and as
    many tokens as it wrote (the next round's prompts need this round's answers, so waves go one after another)."""
    rounds: list[list[dict]] = []
    for t in transcripts:
        temperature = float(t.settings.get("temperature") or 0.0)
        for r in t.rounds:
            while len(rounds) <= r.index:
                rounds.append([])
            rounds[r.index] += [{"messages": [{"role": m.role, "content": m.content} for m in x.prompt],
                                 "temperature": temperature, "top_p": 1.0, "seed": 0,
                                 "max_tokens": max(1, x.tokens_out), "logprobs": False, "grammar": None}
                                for x in r.turns if x.prompt and not x.error and not x.details.get("human")]
    return [w for w in rounds if w]


def raw_rate(transcripts: list[Transcript], n_ctx: int = 3072) -> dict:
    """The waves of `transcripts` decoded by the Scheduler alone: wall s, prompt and generated tokens."""
    from r2mad.backends.embedded import smollm2_path
    from r2mad.backends.llama_worker import Worker

    worker = Worker(str(smollm2_path()), n_ctx, io.StringIO())
    done: queue.Queue = queue.Queue()
    worker.scheduler.send = lambda message: done.put(message) if "text" not in message else None
    threading.Thread(target=worker.scheduler.run, daemon=True).start()  # idles on its inbox when all is done
    prompt = generated = 0
    started = time.monotonic()
    ids = iter(range(1, 1 << 62))
    for wave in waves(transcripts):
        for request in wave:
            worker.scheduler.submit({**request, "id": next(ids)})
        for _ in wave:
            message = done.get(timeout=600)
            if "done" in message:
                prompt += message["done"]["tokens_in"]
                generated += message["done"]["tokens_out"]
    return {"wall": time.monotonic() - started, "prompt": prompt, "generated": generated}
