"""The MiniLM embedder: ONNX Runtime with the Rust tokenizer gives torch's vectors without torch in the
process, its exported graph is cached and exported again when damaged, and a pipeline it cannot
reproduce stays on torch."""
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from r2mad.backends.embedder import (
    OnnxEmbedder,
    load_embedder,
    offline_model_path,
    onnx_graph,
)

pytestmark = pytest.mark.slow
TEXTS = ["Consensus of the previous round: 0.33", "Which river flows through the capital of Egypt?",
         "Jupiter is the largest planet. " * 80]  # the last one is truncated at 256 word pieces


def torch_vectors(texts):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(offline_model_path()), device="cpu", local_files_only=True)
    return model.encode(texts, convert_to_numpy=True, normalize_embeddings=True)


def test_minilm_runs_on_onnxruntime_with_torchs_vectors():
    minilm = load_embedder()
    assert minilm.runtime == "onnxruntime"
    vectors = minilm.encode(TEXTS)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.abs(vectors - torch_vectors(TEXTS)).max() < 1e-5


def test_the_app_process_never_loads_torch():
    code = ("import sys; from r2mad.backends.embedder import load_embedder; e = load_embedder(); e.encode(['hi']); "
            "print(e.runtime, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["onnxruntime", "False"]


def test_exported_graph_is_reused_and_a_damaged_one_exported_again(tmp_path, monkeypatch):
    monkeypatch.setenv("R2MAD_CACHE_DIR", str(tmp_path))
    folder = offline_model_path()
    graph = onnx_graph(folder)
    assert graph is not None and graph.parent == tmp_path / "onnx"
    exported_at = graph.stat().st_mtime_ns
    assert onnx_graph(folder) == graph and graph.stat().st_mtime_ns == exported_at  # reused
    graph.write_bytes(b"not a graph")
    from r2mad.backends.embedder import _onnx_or_torch

    embedder = _onnx_or_torch("all-MiniLM-L6-v2", folder)
    assert embedder.runtime == "onnxruntime" and graph.stat().st_size > 1_000_000
    assert np.allclose(embedder.encode(TEXTS[:2]), torch_vectors(TEXTS[:2]), atol=1e-5)


def test_a_graph_that_disagrees_with_torch_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("R2MAD_CACHE_DIR", str(tmp_path))
    folder = offline_model_path()
    graph = onnx_graph(folder)
    probe = graph.with_suffix(".probe.json")
    data = json.loads(probe.read_text())
    data["vectors"][0] = [-v for v in data["vectors"][0]]
    probe.write_text(json.dumps(data))
    assert not OnnxEmbedder("all-MiniLM-L6-v2", folder, graph).check()
    from r2mad.backends.embedder import _onnx_or_torch

    assert _onnx_or_torch("all-MiniLM-L6-v2", folder).runtime == "torch"


def test_pipelines_other_than_mean_pooling_stay_on_torch(tmp_path):
    folder = tmp_path / "cls-model"
    shutil.copytree(offline_model_path(), folder)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    assert onnx_graph(folder) is None
