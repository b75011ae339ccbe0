"""Several scripted OpenAI-compatible servers playing GPU replicas, for the router tests and `bench --prefix /
--scale`; not a model and not a router. Each replica keeps a prefix cache of the prompts it has served and
reports, as vLLM's automatic prefix caching does, the prompt tokens of a request that an earlier prompt on
that replica already holds (usage.prompt_tokens_details.cached_tokens); it takes `prefill_s` per prompt token
it must compute (cached ones are free) and `per_token_s` per generated token, decodes at most `slots`
sequences at once (more wait in line, as a server's scheduler queues them), and names itself in the
x-served-by header. Tokens here are the words of the messages, with a role marker opening each message (the
markers take part in matching but are not counted, so prompt_tokens stays the words, as the scripted server
counts them). The cache holds every prompt with the answer given to it, as vLLM keeps a finished
request's blocks (no eviction) and matches token by token (vLLM matches whole
16-token blocks and never counts a prompt's last token: see `cached` for the last; blocks are not played).

    with Replicas(3, responder=reply) as fleet:
        fleet.urls            # one base url (without /v1) per replica, for a router's --worker-urls
        fleet.log             # every request: (replica, routing key, prompt tokens, cached tokens)
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from r2mad.bench.scripted.behaviours import Behaviour, Ok, ok
from r2mad.bench.scripted.server import FakeServer

ROUTING_HEADER = "x-session-id"  # the key our backend sends (affinity.py); logged to check affinity


def prompt_tokens(messages: Sequence[dict]) -> list[str]:
    """A chat prompt as the replicas tokenise it: per message a role marker, then its words."""
    tokens: list[str] = []
    for m in messages:
        tokens.append(f"\x00{m.get('role')}")
        tokens += str(m.get("content") or "").split()
    return tokens


class PrefixCache:
    """The prefixes of every prompt seen, kept as chained hashes: looking a prompt up and adding it take
    time in its length, whatever the number of prompts held. Thread-safe."""

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def cached(self, tokens: Sequence[str]) -> int:
        """The counted tokens (words, not markers) of the longest prefix of `tokens` an earlier prompt shares,
        at most all but the last word (a server recomputes the last token to start decoding); then
        remembers `tokens`."""
        with self._lock:
            chained, words, hit, matched = 0, 0, True, 0
            for token in tokens:
                chained = hash((chained, token))
                if not token.startswith("\x00"):
                    words += 1
                if hit and chained in self._seen:
                    matched = words
                else:
                    hit = False
                    self._seen.add(chained)
            return min(matched, max(words - 1, 0))


@dataclass(frozen=True)
class Served:
    replica: str
    key: str | None  # the request's routing key, if it carried one
    prompt: int  # prompt tokens (words)
    cached: int  # of those, served by the replica's prefix cache
    at: float  # time.monotonic() of arrival
    shared: int  # of those, a prefix of an earlier call of the same key on any replica: the most a cache can serve


@dataclass
class Replicas:
    count: int
    responder: Callable[[dict], Behaviour] = lambda body: ok("ok")
    per_token_s: float = 0.0  # seconds per generated token (words of the answer)
    prefill_s: float = 0.0  # seconds per prompt token not served from the cache
    slots: int | None = None  # sequences decoded at once per replica; None: no limit
    models: tuple[str, ...] = ("replica-model",)
    log: list[Served] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.servers: list[FakeServer] = []
        self.caches: list[PrefixCache] = []
        self._lock = threading.Lock()
        self._by_key: dict[str | None, PrefixCache] = {}  # every call of one key, wherever it was served

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{s.port}" for s in self.servers]

    def __enter__(self) -> Replicas:
        for i in range(self.count):
            cache, name = PrefixCache(), f"replica-{i}"
            server = FakeServer(models=list(self.models), responder=self._replica(name, cache),
                                max_parallel=self.slots, name=name)
            self.servers.append(server.__enter__())
            self.caches.append(cache)
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.servers:
            if not server.killed:
                server.__exit__()

    def kill(self, index: int) -> None:
        """Replica `index` crashes: its calls in flight get no answer and it refuses new connections."""
        self.servers[index].kill()

    def calls_by_key(self) -> dict[str | None, list[Served]]:
        with self._lock:
            by: dict[str | None, list[Served]] = {}
            for s in self.log:
                by.setdefault(s.key, []).append(s)
            return by

    def _replica(self, name: str, cache: PrefixCache) -> Callable[[dict], Behaviour]:
        def answer(body: dict) -> Behaviour:
            behaviour = self.responder(body)
            if not isinstance(behaviour, Ok):
                return behaviour
            tokens = prompt_tokens(body.get("messages") or [])
            prompt = sum(not t.startswith("\x00") for t in tokens)
            server = next(s for s in self.servers if s.name == name)
            key = server.request_headers().get(ROUTING_HEADER)
            with self._lock:  # both caches see the calls in one order
                ideal = self._by_key.setdefault(key, PrefixCache())
                hit, shared = cache.cached(tokens), ideal.cached(tokens)
                if isinstance(behaviour.text, str):  # a finished request's blocks stay cached, its answer's too
                    answered = [*tokens, "\x00assistant", *behaviour.text.split()]
                    cache.cached(answered)
                    ideal.cached(answered)
                self.log.append(Served(name, key, prompt, hit, time.monotonic(), shared))
            behaviour.cached_tokens = hit
            behaviour.latency_s += self.prefill_s * (prompt - hit)
            behaviour.per_token_latency_s = behaviour.per_token_latency_s or self.per_token_s
            return behaviour
        return answer


class ReplicasProcess:
    """Replicas in a process of their own, so that their HTTP threads do not share the eval driver's
    interpreter lock (a GPU server is another machine): same `urls`, `log`, `calls_by_key` and `kill`.
    `responder` must be a module-level function (it is pickled)."""

    def __init__(self, count: int, **kw) -> None:
        self.count, self.kw = count, kw
        self.urls: list[str] = []
        self._log: list[Served] | None = None

    def __enter__(self) -> ReplicasProcess:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve_replicas, args=(child, self.count, self.kw, os.getpid()),
                                        daemon=True)
        self._process.start()
        deadline = time.monotonic() + START_S
        while not self._conn.poll(0.1):
            if not self._process.is_alive() or time.monotonic() > deadline:
                self._process.kill()
                raise RuntimeError(f"the scripted replicas' process did not start within {START_S:g} s "
                                   f"(exit code {self._process.exitcode})")
        self.urls = self._conn.recv()
        return self

    def _ask(self, *command):
        self._conn.send(command)
        if not self._conn.poll(START_S):
            raise RuntimeError(f"the scripted replicas did not answer {command[0]!r} within {START_S:g} s")
        return self._conn.recv()

    @property
    def log(self) -> list[Served]:
        return self._log if self._log is not None else self._ask("log")

    def calls_by_key(self) -> dict[str | None, list[Served]]:
        by: dict[str | None, list[Served]] = {}
        for s in self.log:
            by.setdefault(s.key, []).append(s)
        return by

    def kill(self, index: int) -> None:
        self._ask("kill", index)

    def __exit__(self, *exc: object) -> None:
        try:
            self._log = self._ask("log")
            self._conn.send(("stop",))
        finally:
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()


START_S = 60.0  # the most seconds to wait for the replicas' process to start or answer


def _serve_replicas(conn, count: int, kw: dict, parent: int | None = None) -> None:
    from r2mad.bench.children import die_with_parent

    die_with_parent(parent)  # a killed benchmark or test leaves no replicas behind
    with Replicas(count, **kw) as fleet:
        conn.send(fleet.urls)
        while True:
            command = conn.recv()
            if command[0] == "log":
                with fleet._lock:
                    conn.send(list(fleet.log))
            elif command[0] == "kill":
                fleet.kill(command[1])
                conn.send(True)
            else:
                return
