"""Benchmarks for the memory bank (`python -m r2mad bench` calls these): embedded index stores compared,
and per-round retrieval + confidence latency on synthetic banks. Not a test suite; no LLM involved."""
from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from r2mad.backends.embedder import Embedder, load_embedder
from r2mad.memory.bank import STORES, MemoryBank
from r2mad.types import Case

N_AGENTS, ROUNDS = 3, (1, 2)  # the papers' setting: one case per agent for each of rounds 1 and 2


class RandomEmbedder(Embedder):
    """A random unit vector per distinct text (seeded by the text), standing in for a real model."""

    def __init__(self, dim: int = 384):
        self.id, self.dim = f"random-{dim}", dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = [np.random.default_rng(int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(),
                                                     "big")).standard_normal(self.dim) for t in texts]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def synthetic_cases(count: int, start: int = 0) -> list[Case]:
    """`count` cases from made-up debates (3 agents, rounds 1-2), about half of them positive."""
    rng = np.random.default_rng(start)
    cases = []
    for index in range(start, start + count):
        question, rest = divmod(index, N_AGENTS * len(ROUNDS))
        round_, agent = ROUNDS[rest // N_AGENTS], rest % N_AGENTS
        correct = tuple(bool(x) for x in rng.integers(0, 2, N_AGENTS))
        cases.append(Case(
            id=f"syn{question}-r{round_}-a{agent}", question_id=f"syn{question}", task_kind="math",
            agent=agent, round=round_, question=f"Synthetic question {question}",
            previous_response=f"Agent {agent} before round {round_} of {question}",
            summary=f"Summary of round {round_ - 1} of {question}", consensus=float(rng.choice([1, 2, 3])) / 3,
            responses=tuple(f"Response of agent {j} in round {round_} of {question}" for j in range(N_AGENTS)),
            answers=tuple(str(int(c)) for c in correct), gold="1", correct=correct,
            reward=float(correct[agent])))
    return cases


def _build(folder: Path, size: int, embedder: Embedder, store: str, batch: int) -> tuple[MemoryBank, float]:
    bank = MemoryBank.create(folder / f"bank-{store}-{size}", task_kind="math", split="synthetic",
                             backbone="none", embedder=embedder, code_version="bench",
                             index_root=folder / "index", store=store)
    started = time.perf_counter()
    for start in range(0, size, batch):
        bank.add(synthetic_cases(min(batch, size - start), start))
    return bank, time.perf_counter() - started


def _percentiles(seconds: Sequence[float]) -> tuple[float, float]:
    ms = np.asarray(seconds) * 1000
    return round(float(np.percentile(ms, 50)), 3), round(float(np.percentile(ms, 95)), 3)


def _timed_each(items, work: Callable[[object], object]) -> list[float]:
    times = []
    for item in items:
        started = time.perf_counter()
        work(item)
        times.append(time.perf_counter() - started)
    return times


def bench_stores(sizes: Sequence[int] = (1000, 10000, 50000), dim: int = 384, queries: int = 200,
                 stores: Sequence[str] = STORES, batch: int = 2000) -> list[dict]:
    """Build time, reopen time and top-3 cosine query p50/p95 for one agent, per embedded store."""
    embedder, rows = RandomEmbedder(dim), []
    with tempfile.TemporaryDirectory(prefix="r2mad-bench-") as tmp:
        for size in sizes:
            for store in stores:
                bank, build_s = _build(Path(tmp), size, embedder, store, batch)
                bank.close()
                started = time.perf_counter()
                bank = MemoryBank.open(bank.path, embedder, index_root=Path(tmp) / "index", store=store)
                reopen_s = time.perf_counter() - started
                vectors = embedder.encode([f"query {i}" for i in range(queries)])
                p50, p95 = _percentiles(_timed_each(vectors, lambda v: bank.candidates(1, v, 3)))
                rows.append({"store": store, "cases": size, "build_s": round(build_s, 2),
                             "reopen_s": round(reopen_s, 2), "query_p50_ms": p50, "query_p95_ms": p95})
                bank.close()
    return rows


def _encode_row(repeats: int) -> dict:
    embedder = load_embedder()
    words = "the agents compare their derivations and check each step of the algebra again".split()
    text = lambda n, seed: " ".join(words[(i * 7 + seed) % len(words)] for i in range(n))  # noqa: E731
    texts = [text(250, 0), text(180, 1), text(180, 2)]  # one state, two peer responses
    embedder.encode(texts)  # warm-up
    p50, p95 = _percentiles(_timed_each(range(repeats), lambda _: embedder.encode(texts)))
    return {"what": f"encode 1 state + 2 responses ({embedder.id})", "p50_ms": p50, "p95_ms": p95}


def bench_retrieval(sizes: Sequence[int] = (1000, 10000, 100000), k: int = 1, dim: int = 384,
                    queries: int = 200, store: str = "edge", batch: int = 2000,
                    with_encoder: bool = True) -> list[dict]:
    """p50/p95 of one agent-round of retrieval without text encoding (top-3K candidates, MMR, confidence
    for 2 peers) on synthetic banks, plus one row for encoding the texts with the real MiniLM."""
    embedder, rows = RandomEmbedder(dim), []
    with tempfile.TemporaryDirectory(prefix="r2mad-bench-") as tmp:
        for size in sizes:
            bank, build_s = _build(Path(tmp), size, embedder, store, batch)
            vectors = embedder.encode([f"query {i}" for i in range(3 * queries)]).reshape(queries, 3, dim)
            p50, p95 = _percentiles(_timed_each(enumerate(vectors), lambda item: bank.retrieve_vectors(
                0, item[1][0], {1: item[1][1], 2: item[1][2]}, consensus=(item[0] % 3 + 1) / 3, k=k)))
            rows.append({"what": f"retrieve + confidence, k={k}, {store}", "cases": size,
                         "build_s": round(build_s, 1), "p50_ms": p50, "p95_ms": p95})
            bank.close()
    if with_encoder:
        rows.append(_encode_row(repeats=max(5, queries // 10)))
    return rows


def format_rows(rows: Sequence[dict]) -> str:
    """A plain-text table of benchmark rows (all rows share the first row's columns)."""
    if not rows:
        return "(no rows)"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_rows(bench_stores()))
    print()
    print(format_rows(bench_retrieval(sizes=(1000, 10000))))
