"""No train/test leakage (issue 17, item 10): a bank records the dataset, split seed, model and question
ids it was built from, and `eval` refuses a bank holding any of its test questions before any model call."""
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from r2mad.backends.embedder import HashEmbedder
from r2mad.cli import main
from r2mad.evaluation.datasets import load_split, seeded_split
from r2mad.evaluation.leakage import check_no_leakage
from r2mad.memory.bank import MemoryBank
from r2mad.memory.files import read_cases, read_manifest
from r2mad.settings.config import ConfigError
from r2mad.types import Case
from tests.helpers import jsonl_values

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = 12  # economics rows: seeded 3:1 split -> 9 train, 3 test


def economics_file(path: Path) -> Path:
    rows = [{"question_id": 70 + i, "question": f"Which policy lowers inflation, case {i}?",
             "options": ["Raise rates", "Cut taxes", "Print money", "Raise tariffs"], "answer": "A",
             "answer_index": 0, "cot_content": "", "category": "economics", "src": "ori_mmlu-economics"}
            for i in range(QUESTIONS)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def setup(config_dir, server, tmp_path):
    app = yaml.safe_load((config_dir / "app.yaml").read_text())
    (config_dir / "app.yaml").write_text(yaml.safe_dump({**app, "embedder": "hash-64"}))  # no model download
    return config_dir, server, economics_file(tmp_path / "economics.jsonl")


def build(config_dir, data, out, *extra):
    return main(["--config-dir", str(config_dir), "build-memory", "--task", "economics", "--data", str(data),
                 "--memory-backbone", "fake", "--rounds", "2", "--out", str(out), *extra])


def evaluate(config_dir, data, bank, out, seed):
    return main(["--config-dir", str(config_dir), "eval", "--task", "economics", "--data", str(data),
                 "--methods", "r2mad", "--bank", str(bank), "--split-seed", str(seed), "--rounds", "2",
                 "--no-progress", "--out", str(out)])


def hand_built_bank(tmp_path, ids, split_seed=0) -> Path:
    """A bank from seed `split_seed`'s training questions, written without debates (fast)."""
    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="mmlu-pro-economics:train", backbone="fake",
                             embedder=HashEmbedder(64), code_version="test", index_root=tmp_path / "idx",
                             dataset="mmlu-pro-economics", split_seed=split_seed)
    bank.add([Case(f"{q}:a{a}:r1", q, "mcq", a, 1, "Which policy? (A) Raise rates", "((A))", "", 1.0,
                   ("((A))",) * 3, ("A",) * 3, "A", (True,) * 3, 1.0) for q in ids for a in range(3)])
    bank.close()
    return tmp_path / "bank"


def test_eval_refuses_a_bank_holding_test_questions_before_any_call(setup, tmp_path, capsys):
    config_dir, server, data = setup
    train0 = load_split("economics", "train", data_file=data, seed=0)
    test42 = load_split("economics", "test", data_file=data, seed=42)
    shared = len(set(test42.ids) & set(train0.ids))
    assert shared == 3  # by hand: seed 0 tests 71, 79, 78; seed 42 tests 77, 75, 72, all seed-0 training
    bank = hand_built_bank(tmp_path, train0.ids)
    assert evaluate(config_dir, data, bank, tmp_path / "r42", 42) == 2
    err = capsys.readouterr().err.strip()
    assert server.requests == [] and not (tmp_path / "r42").exists()
    assert err.count("\n") == 0 and "holds 3 of the 3 mmlu-pro-economics test questions of split seed 42" in err
    assert "build-memory --split-seed 42" in err and "--split-seed 0" in err


def test_adding_debates_of_another_split_seed_to_a_bank_is_refused(setup, tmp_path, capsys):
    config_dir, server, data = setup
    bank = hand_built_bank(tmp_path, load_split("economics", "train", data_file=data, seed=0).ids[:2])
    assert build(config_dir, data, bank, "--split-seed", "42") == 2
    assert "was built with split_seed 0, not 42; pass --split-seed 0" in capsys.readouterr().err
    assert server.requests == [] and len(yaml.safe_load((bank / "manifest.yaml").read_text())["question_ids"]) == 2


@pytest.mark.slow
def test_build_then_eval_with_another_split_seed_is_refused_and_with_the_same_one_runs(setup, tmp_path, capsys):
    """The whole path a researcher takes, on the scripted server: build-memory, eval refused, eval run."""
    config_dir, server, data = setup
    assert build(config_dir, data, tmp_path / "bank") == 0  # split seed 0, the default
    manifest = yaml.safe_load((tmp_path / "bank" / "manifest.yaml").read_text())
    train, _ = seeded_split([f"mmlu-pro-{70 + i}" for i in range(QUESTIONS)], 0)  # the 9 training ids
    assert (manifest["dataset"], manifest["split"], manifest["split_seed"], manifest["backbone"]) == \
        ("mmlu-pro-economics", "mmlu-pro-economics:train", 0, "fake")
    assert manifest["question_ids"] == sorted(train) and len(train) == 9
    assert server.requests and all(r.body["model"] == "fake-model" for r in server.requests)
    calls = len(server.requests)
    capsys.readouterr()
    assert evaluate(config_dir, data, tmp_path / "bank", tmp_path / "r42", 42) == 2
    assert "holds 3 of the 3" in capsys.readouterr().err and len(server.requests) == calls
    assert evaluate(config_dir, data, tmp_path / "bank", tmp_path / "r0", 0) == 0
    rows = jsonl_values(tmp_path / "r0" / "rows.jsonl")
    assert len(rows) == 3 and len(server.requests) > calls
    recorded = json.loads((tmp_path / "r0" / "run.json").read_text())["bank"]
    assert recorded == {"path": str(tmp_path / "bank"), "dataset": "mmlu-pro-economics",
                        "split": "mmlu-pro-economics:train", "split_seed": 0, "backbone": "fake", "embedder": "hash-64",
                        "questions": 9}


@dataclass
class ShippedBank:
    """A shipped bank's files as `check_no_leakage` reads them (no index, no embedder)."""
    path: Path
    manifest: dict
    question_ids: frozenset
    held: list

    def cases(self) -> list:
        return self.held


@pytest.mark.parametrize("name", ["demo-mcq", "demo-math"])
def test_shipped_banks_from_before_manifests_recorded_their_split_warn_and_are_checked_by_their_cases(name):
    """Their manifests lack dataset, split seed and question ids: unknown, so one warning line, no refusal;
    the ids of their cases are still checked."""
    path = ROOT / "memory" / name
    cases = read_cases(path / "cases.jsonl", None).cases
    bank = ShippedBank(path, read_manifest(path), frozenset(c.question_id for c in cases), cases)
    assert "split_seed" not in bank.manifest and "question_ids" not in bank.manifest
    [notice] = check_no_leakage(bank, load_split(name, "test"))
    assert "does not record its dataset and split seed" in notice and "\n" not in notice
    train = load_split(name, "train")
    assert set(train.ids) == bank.question_ids  # built from the whole training split
    with pytest.raises(ConfigError, match=rf"holds {len(train.ids)} of the {len(train.ids)} {name} train"):
        check_no_leakage(bank, train)
