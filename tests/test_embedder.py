"""The MiniLM embedder: ONNX Runtime gives torch's vectors, its exported graph is cached and rebuilt
when damaged, and anything it cannot reproduce stays on torch."""
import numpy as np

from r2mad.embedder import load_embedder, onnx_runner

TEXTS = ["Consensus of the previous round: 0.33", "Which river flows through the capital of Egypt?",
         "Jupiter is the largest planet. " * 80]  # the last one is truncated at 256 word pieces


def test_minilm_runs_on_onnxruntime_with_torchs_vectors():
    minilm = load_embedder()
    assert minilm.runtime == "onnxruntime"
    reference = minilm._model.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True)
    vectors = minilm.encode(TEXTS)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.abs(vectors - reference).max() < 1e-5


def test_exported_graph_is_reused_and_a_damaged_one_exported_again(tmp_path, monkeypatch):
    monkeypatch.setenv("R2MAD_CACHE_DIR", str(tmp_path))
    model = load_embedder()._model
    assert onnx_runner(model) is not None
    [graph] = (tmp_path / "onnx").glob("*.onnx")
    exported_at = graph.stat().st_mtime_ns
    assert onnx_runner(model) is not None and graph.stat().st_mtime_ns == exported_at  # reused
    graph.write_bytes(b"not a graph")
    run = onnx_runner(model)
    assert run is not None and graph.stat().st_size > 1_000_000
    reference = model.encode(TEXTS[:2], convert_to_numpy=True, normalize_embeddings=True)
    got = run(TEXTS[:2])
    assert np.allclose(got / np.linalg.norm(got, axis=1, keepdims=True), reference, atol=1e-5)


def test_pipelines_other_than_mean_pooling_stay_on_torch():
    class Transformer: ...

    class Pooling:
        def get_config_dict(self):
            return {"pooling_mode": "cls"}

    assert onnx_runner([Transformer(), Pooling()]) is None
