"""The shipped demo banks: built by `build-memory` with the embedded model, they open offline with the
real MiniLM embedder, and an R²-MAD debate on the embedded model retrieves from them with scores."""
import asyncio
from pathlib import Path

import pytest
import yaml

from r2mad.backends.embedded import EmbeddedBackend
from r2mad.backends.embedder import load_embedder
from r2mad.debate import Debate
from r2mad.evaluation.datasets import load_split
from r2mad.memory.bank import MemoryBank
from r2mad.methods import make_method
from r2mad.settings.config import DebateSettings

pytestmark = pytest.mark.slow  # real model, server, embedder or browser

ROOT = Path(__file__).resolve().parents[2]
BANKS = {"demo-mcq": 56, "demo-math": 28}  # training questions of data/demo


@pytest.fixture(scope="module")
def index_root(tmp_path_factory):
    return tmp_path_factory.mktemp("index")


@pytest.mark.parametrize("name, questions", BANKS.items())
def test_demo_bank_is_whole_and_auditable(name, questions, index_root):
    manifest = yaml.safe_load((ROOT / "memory" / name / "manifest.yaml").read_text())
    assert manifest["embedder"] == {"id": "all-MiniLM-L6-v2", "dim": 384}
    assert manifest["backbone"] == "smollm2-135m" and manifest["counts"]["questions"] == questions
    bank = MemoryBank.open(ROOT / "memory" / name, load_embedder(), index_root=index_root)
    try:
        cases = bank.cases()
        assert len(cases) == questions * 2 * 3 and {c.round for c in cases} == {1, 2}
        assert 0 < sum(c.reward for c in cases) < len(cases)  # both positive and negative experience
        unparsed = sum(c.answers[c.agent] is None for c in cases) / len(cases)
        assert unparsed <= 0.05  # built with the answer guard: the cases hold answers, not UNPARSED
    finally:
        bank.close()


def test_r2mad_on_the_embedded_model_retrieves_from_the_demo_bank(index_root):
    bank = MemoryBank.open(ROOT / "memory" / "demo-mcq", load_embedder(), index_root=index_root)
    task = load_split("demo-mcq", "test").tasks[0]
    events = []
    settings = DebateSettings(rounds=2, early_stop=False, max_tokens=48, seed=4)
    try:
        t = asyncio.run(Debate(EmbeddedBackend(), make_method("r2mad", settings, bank=bank),
                               emit=events.append).run(task))
    finally:
        bank.close()
    retrievals = [e for e in events if e.kind == "retrieval"]
    assert t.status == "done" and len(retrievals) == 3 and sum(e.kind == "confidence" for e in events) == 3
    for e in retrievals:
        picked = e.data["retrieved"][0]
        assert 0 < picked["similarity"] <= 1 and picked["case_id"] and picked["mmr"] is not None
    assert t.rounds[1].details["summary"] and all("<memory case 1>" in turn.prompt[-1].content
                                                  for turn in t.rounds[1].turns)
