"""Meaning: cosine similarity of two answers with the bank's embedder (all-MiniLM-L6-v2 offline), the
embedder loaded once per process and each answer embedded once (kept in a bounded cache). `embed` is
the slow part: callers on the event loop run it in a worker thread first (offloop.settle), so the
similarity read afterwards returns at once. Not the embedder itself (backends/embedder.py)."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Sequence

import numpy as np

from r2mad.backends.embedder import DEFAULT_EMBEDDER, Embedder, load_embedder


class Meaning:
    """Embeddings of answer texts by one embedder, at most `keep` kept (least recently used go first)."""

    def __init__(self, embedder: str | Embedder = DEFAULT_EMBEDDER, keep: int = 4096):
        self.embedder, self.keep = embedder, keep
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.encoded = 0  # texts embedded so far (each once while it stays cached)

    def use(self, embedder: str | Embedder) -> None:
        """Switch embedder (a model id, or an Embedder a test makes); the old one's vectors are dropped."""
        with self._lock:
            self.embedder = embedder
            self._vectors.clear()

    def embed(self, texts: Sequence[str]) -> None:
        """Embed the texts not cached yet, in one batch (slow: a worker thread's job)."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if not missing:
            return
        model = load_embedder(self.embedder) if isinstance(self.embedder, str) else self.embedder
        rows = model.encode(missing)
        with self._lock:
            for text, row in zip(missing, rows):
                self._vectors[text] = row
            self.encoded += len(missing)
            while len(self._vectors) > self.keep:
                self._vectors.popitem(last=False)

    def _vector(self, text: str) -> np.ndarray:
        with self._lock:
            row = self._vectors.get(text)
            if row is not None:
                self._vectors.move_to_end(text)
                return row
        self.embed([text])  # not settled first: a sync caller off the loop (eval, a test) pays here
        with self._lock:
            return self._vectors[text]

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of the two texts' unit embeddings."""
        return 1.0 if a == b else float(np.dot(self._vector(a), self._vector(b)))


MEANING = Meaning()  # the process's one: every kind that asks how close two answers are in meaning reads it
