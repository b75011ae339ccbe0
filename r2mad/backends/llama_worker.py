"""The embedded model's own process: llama.cpp loads the GGUF once and answers requests read as JSON
lines on stdin, writing JSON lines on stdout. It runs apart from the app so that a crash inside
llama.cpp ends this process only. Started by r2mad.backends.embedded; not for direct use.

Protocol (one JSON object a line):
  in:  {"id": n, "messages": [...], "temperature": ..., "top_p": ..., "max_tokens": ..., "seed": ...,
        "logprobs": bool, "grammar": GBNF or null}   |   {"cancel": n}
  out: {"ready": model file name} once loaded, or {"fatal": sentence} and exit;
       {"id": n, "text": text so far} while generating (live text, and the parent's sign of life);
       then {"id": n, "done": completion} or {"id": n, "error": sentence}
"""
from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time

import numpy as np


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


def _watch(llm, cancelled: threading.Event, on_text, want_logprobs: bool, every_s: float = 0.15):
    """A logits processor, called with the raw logits before each new token. It forces end-of-text
    once the caller has cancelled (llama.cpp has no cancel), reports the text so far every `every_s`
    seconds, and records each sampled token's log-probability under the full distribution (so no
    logits array for every position is needed). Returns (processor, logprobs so far, tokens seen)."""
    eos, prompt_len, last, logprobs, previous = llm.token_eos(), [], [0.0], [], [None]

    def process(tokens, scores):
        if not prompt_len:
            prompt_len.append(len(tokens))  # the first call sees the prompt alone
        else:
            if previous[0] is not None:
                logprobs.append(float(previous[0][tokens[-1]]))
            if time.monotonic() - last[0] >= every_s:
                last[0] = time.monotonic()
                on_text(llm.detokenize(list(tokens[prompt_len[0]:])).decode("utf-8", errors="ignore"))
        if want_logprobs:
            shifted = scores - scores.max()
            previous[0] = shifted - np.log(np.exp(shifted).sum())
        if cancelled.is_set():
            scores[:] = -float("inf")
            scores[eos] = 0.0
        return scores
    return process, logprobs, previous


def _last_logprob(llm, text: str, seen: int, last_row) -> float | None:
    """The logprob of the final token of an answer cut at max_tokens (no processor call follows it):
    read from the last distribution once re-tokenising the text shows which token it was."""
    if last_row is None:
        return None
    ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
    return float(last_row[ids[-1]]) if len(ids) == seen + 1 else None


class Worker:
    def __init__(self, model_path: str, n_ctx: int, out):
        _portable_model_params()
        from llama_cpp import Llama

        self.llm = Llama(model_path=model_path, n_ctx=n_ctx, logits_all=False, verbose=False,
                         n_threads=max(1, min(4, os.cpu_count() or 1)), seed=0)
        self.out, self.grammars = out, {}
        self.out_lock = threading.Lock()
        self.cancelled = threading.Event()
        self.current: int | None = None

    def send(self, message: dict) -> None:
        with self.out_lock:
            self.out.write(json.dumps(message) + "\n")
            self.out.flush()

    def grammar(self, text: str | None):
        if not text:
            return None
        if text not in self.grammars:
            from llama_cpp import LlamaGrammar

            self.grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self.grammars[text]

    def answer(self, req: dict) -> dict:
        from llama_cpp import LogitsProcessorList

        rid = req["id"]
        on_text = lambda text: self.send({"id": rid, "text": text})
        processor, logprobs, last_row = _watch(self.llm, self.cancelled, on_text, bool(req.get("logprobs")))
        started = time.monotonic()
        result = self.llm.create_chat_completion(
            messages=req["messages"], temperature=req["temperature"], top_p=req["top_p"],
            max_tokens=req["max_tokens"], seed=req["seed"], grammar=self.grammar(req.get("grammar")),
            logits_processor=LogitsProcessorList([processor]))
        choice, usage = result["choices"][0], result.get("usage") or {}
        text = choice["message"].get("content") or ""
        tokens_out = int(usage.get("completion_tokens", 0))
        if req.get("logprobs") and len(logprobs) == tokens_out - 1:
            final = _last_logprob(self.llm, text, len(logprobs), last_row[0])
            if final is not None:
                logprobs.append(final)
        return {"text": text, "tokens_in": int(usage.get("prompt_tokens", 0)), "tokens_out": tokens_out,
                "latency_s": round(time.monotonic() - started, 4),
                "logprobs": logprobs if req.get("logprobs") else None,
                "finish_reason": choice.get("finish_reason")}

    def serve(self, requests: queue.Queue) -> None:
        while True:
            req = requests.get()
            self.current = req["id"]
            self.cancelled.clear()
            try:
                reply = {"id": req["id"], "done": self.answer(req)}
            except ValueError as exc:  # llama.cpp raises ValueError when the prompt exceeds n_ctx
                words = str(exc).lower()
                reply = {"id": req["id"], "error": (
                    "The prompt is longer than the embedded model's context window; lower max tokens, "
                    "rounds or retrieved cases." if "context" in words or "exceed" in words
                    else f"The embedded model failed: {exc}")}
            self.current = None
            self.send(reply)


def _read(worker: Worker, requests: queue.Queue) -> None:
    """Requests go to the queue; a cancel takes effect at once. The parent gone (stdin closed) ends us."""
    for line in sys.stdin:
        message = json.loads(line)
        if "cancel" in message:
            if message["cancel"] == worker.current:
                worker.cancelled.set()
        else:
            requests.put(message)
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
    worker.send({"ready": os.path.basename(model_path)})
    requests: queue.Queue = queue.Queue()
    threading.Thread(target=_read, args=(worker, requests), daemon=True).start()
    worker.serve(requests)


if __name__ == "__main__":
    main()
