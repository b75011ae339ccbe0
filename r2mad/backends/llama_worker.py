"""The embedded model's own process: llama.cpp loads the GGUF once and answers the requests read as JSON
lines on stdin together (continuous batching, llama_batch.py), writing JSON lines on stdout. It runs apart
from the app so that a crash inside llama.cpp ends this process only. Started by r2mad.backends.embedded.

Protocol (one JSON object a line):
  in:  {"id": n, "messages": [...], "temperature": ..., "top_p": ..., "max_tokens": ..., "seed": ...,
        "logprobs": bool, "grammar": GBNF or null}   |   {"cancel": n}
  out: {"ready": model file name, "slots": n} once loaded, or {"fatal": sentence} and exit;
       {"beat": 1} every BEAT_S while alive and not stuck in one decode step for HANG_S (the parent's
       sign of life); {"id": n, "text": text so far} while generating;
       then {"id": n, "done": completion} or {"id": n, "error": sentence}
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

SLOTS = 12  # sequences decoded together, each in a KV stream of one whole window (about 12 KB a cell)
BEAT_S, HANG_S = 0.5, 300.0


def _portable_model_params() -> None:
    """Load weights without llama.cpp's extra buffer types (CPU weight repacking, the AMX kernels):
    a build that enabled them for the CPU it was compiled on faults on CPUs or VMs that lack them."""
    import llama_cpp.llama_cpp as low

    defaults = low.llama_model_default_params

    def params():
        p = defaults()
        p.use_extra_bufts = False
        return p
    low.llama_model_default_params = params


class Worker:
    def __init__(self, model_path: str, n_ctx: int, out, slots: int = SLOTS):
        _portable_model_params()
        from llama_cpp import Llama

        from r2mad.backends.llama_batch import Scheduler
        from r2mad.backends.requantize import batched_weights
        from r2mad.settings.config import cache_dir

        model_path = str(batched_weights(Path(model_path), cache_dir() / "gguf"))

        self.out, self.out_lock = out, threading.Lock()
        # the high-level Llama gives tokenizer and chat template; its own context stays tiny
        self.llm = Llama(model_path=model_path, n_ctx=64, n_batch=64, n_threads=1, logits_all=False,
                         verbose=False, seed=0)
        self.scheduler = Scheduler(self.llm, n_ctx, n_ctx * slots, slots, self.send)

    def send(self, message: dict) -> None:
        with self.out_lock:
            self.out.write(json.dumps(message) + "\n")
            self.out.flush()

    def beat(self) -> None:
        """Tells the parent this process lives: a stopped or frozen one goes quiet, a slow one does not."""
        while True:
            time.sleep(BEAT_S)
            started = self.scheduler.step_started
            if started is None or time.monotonic() - started < HANG_S:
                self.send({"beat": 1})


def _read(worker: Worker) -> None:
    """Requests and cancels go to the scheduler in order. The parent gone (stdin closed) ends us."""
    for line in sys.stdin:
        try:
            worker.scheduler.submit(json.loads(line))
        except ValueError:
            continue
    os._exit(0)


def main() -> None:
    model_path, n_ctx = sys.argv[1], int(sys.argv[2])
    out, sys.stdout = sys.stdout, sys.stderr  # whatever else prints stays off the pipe
    try:
        worker = Worker(model_path, n_ctx, out)
    except Exception as exc:  # noqa: BLE001 - a missing or damaged file: one sentence to the parent
        out.write(json.dumps({"fatal": f"{type(exc).__name__}: {exc}"}) + "\n")
        out.flush()
        sys.exit(1)
    worker.send({"ready": os.path.basename(model_path), "slots": len(worker.scheduler.slots)})
    threading.Thread(target=_read, args=(worker,), daemon=True).start()
    threading.Thread(target=worker.beat, daemon=True).start()
    worker.scheduler.run()


if __name__ == "__main__":
    main()
