"""Export a sentence-transformers folder's transformer to an ONNX graph, with the vectors torch gives for a
few probe sentences beside it (so the process that runs the graph can check it without torch). Run as
`python -m r2mad.backends.onnx_export FOLDER GRAPH` by r2mad.backends.embedder, in its own process: torch is loaded here
once per set of weights, never in the app."""
from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

PROBE = ["A probe sentence to compare runtimes.", "Consensus 0.67; two agents agree, one does not.",
         "Which river flows through the capital of Egypt? " * 40]  # the last is truncated


def probe_path(graph: Path) -> Path:
    return graph.with_suffix(".probe.json")


def export(folder: Path, graph: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    transformer = model[0].auto_model.eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    graph.parent.mkdir(parents=True, exist_ok=True)
    partial = graph.with_suffix(f".{os.getpid()}.part")
    sample = torch.ones((1, 8), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(LastHidden(transformer), (sample, sample, torch.zeros_like(sample)), str(partial),
                          input_names=names, output_names=["hidden"],
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]},
                          opset_version=17, dynamo=False)
    vectors = model.encode(PROBE, convert_to_numpy=True, normalize_embeddings=True)
    probe_partial = probe_path(partial)
    probe_partial.write_text(json.dumps({"texts": PROBE, "vectors": vectors.tolist()}), encoding="utf-8")
    os.replace(probe_partial, probe_path(graph))  # probe first: a graph is only ever there with its probe
    os.replace(partial, graph)


if __name__ == "__main__":
    export(Path(sys.argv[1]), Path(sys.argv[2]))
