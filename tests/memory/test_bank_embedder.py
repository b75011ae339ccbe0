"""The embedder is chosen per bank (issue 29): `build-memory --embedder NAME` records it in the manifest, a
bank is opened with its own embedder whatever app.yaml names, and eval's run.json and report say which."""
import json

import pytest
import yaml

from r2mad.backends.embedder import DEFAULT_EMBEDDER, HashEmbedder
from r2mad.cli import main
from r2mad.engine.resources import open_bank
from r2mad.memory.bank import MemoryBank, own_embedder
from r2mad.settings.config import load_config
from r2mad.types import Case

ROWS = 8  # economics rows: the seeded 3:1 split gives 6 train and 2 test


@pytest.fixture
def setup(config_dir, server, tmp_path):
    """app.yaml names the hash embedder, so any MiniLM in a bank came from the bank, not the default."""
    app = yaml.safe_load((config_dir / "app.yaml").read_text())
    (config_dir / "app.yaml").write_text(yaml.safe_dump({**app, "embedder": "hash-64"}))
    data = tmp_path / "economics.jsonl"
    data.write_text("".join(json.dumps({
        "question_id": 70 + i, "question": f"Which policy lowers inflation, case {i}?",
        "options": ["Raise rates", "Cut taxes", "Print money", "Raise tariffs"], "answer": "A", "answer_index": 0,
        "cot_content": "", "category": "economics", "src": "ori_mmlu-economics"}) + "\n" for i in range(ROWS)))
    return config_dir, server, data


def build(config_dir, data, out, *extra):
    return main(["--config-dir", str(config_dir), "build-memory", "--task", "economics", "--data", str(data),
                 "--memory-backbone", "fake", "--rounds", "2", "--limit", "1", "--out", str(out), *extra])


def test_build_memory_records_the_chosen_embedder_and_the_bank_opens_with_it(setup, tmp_path, capsys):
    config_dir, server, data = setup
    out = tmp_path / "bank"
    assert build(config_dir, data, out, "--embedder", DEFAULT_EMBEDDER) == 0
    assert f"(embedder {DEFAULT_EMBEDDER})" in capsys.readouterr().out
    manifest = yaml.safe_load((out / "manifest.yaml").read_text())
    assert manifest["embedder"] == {"id": DEFAULT_EMBEDDER, "dim": 384}
    assert manifest["counts"]["cases"] == 3  # 3 agents x 1 round after round 0
    config = load_config(config_dir)
    assert config.app.embedder == "hash-64"
    bank, notices = open_bank(out, config, task_kind="mcq")  # the bank's own embedder, not app.yaml's
    assert bank is not None and bank.embedder.id == DEFAULT_EMBEDDER and not any("Memory off" in n for n in notices)
    bank.close()
    calls = len(server.requests)
    assert build(config_dir, data, out, "--embedder", "hash-64") == 2  # adding with another embedder
    err = capsys.readouterr().err.strip()
    assert f"was built with embedder {DEFAULT_EMBEDDER} (dim 384) but hash-64 is loaded" in err
    assert err.count("\n") == 0 and len(server.requests) == calls
    assert build(config_dir, data, out, "--limit", "2") == 0  # no --embedder: the bank keeps its own
    assert yaml.safe_load((out / "manifest.yaml").read_text())["counts"]["questions"] == 2


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_an_embedder_that_cannot_be_loaded_is_one_sentence_naming_the_fix(setup, tmp_path, capsys):
    config_dir, server, data = setup
    assert build(config_dir, data, tmp_path / "bank", "--embedder", "no-such-org/no-such-model") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: Embedder 'no-such-org/no-such-model' could not be loaded")
    assert f"or the offline default '{DEFAULT_EMBEDDER}'" in err and err.count(". ") == 0 and "\n" not in err
    assert server.requests == [] and not (tmp_path / "bank").exists()  # nothing half-written


def test_own_embedder_is_the_banks_and_the_default_where_no_bank_is(tmp_path):
    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="train", backbone="x",
                             embedder=HashEmbedder(32), code_version="t", index_root=tmp_path / "index")
    bank.close()
    assert own_embedder(tmp_path / "bank", "hash-64").id == "hash-32"
    assert own_embedder(tmp_path / "nothing", "hash-64").id == "hash-64"


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_eval_records_the_banks_embedder_in_run_json_and_the_report(setup, tmp_path):
    config_dir, server, data = setup
    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="mmlu-pro-economics:train",
                             backbone="fake", embedder=HashEmbedder(64), code_version="test",
                             index_root=tmp_path / "idx", dataset="mmlu-pro-economics", split_seed=0)
    bank.add([Case(f"other:a{a}:r1", "other", "mcq", a, 1, "Which policy? (A) Raise rates", "((A))", "", 1.0,
                   ("((A))",) * 3, ("A",) * 3, "A", (True,) * 3, 1.0) for a in range(3)])
    bank.close()
    out = tmp_path / "results"
    assert main(["--config-dir", str(config_dir), "eval", "--task", "economics", "--data", str(data),
                 "--methods", "icl-cot", "--bank", str(tmp_path / "bank"), "--limit", "1", "--no-progress",
                 "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["bank"]["embedder"] == "hash-64"
    report = (out / "report.md").read_text()
    assert (f"Memory bank `{tmp_path / 'bank'}`: 1 question of mmlu-pro-economics (split seed 0), debated by "
            "fake, embedded by hash-64.") in report
