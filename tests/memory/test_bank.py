"""The memory bank on a real on-disk Qdrant index: lifecycle, persistence, safety and concurrency."""
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from r2mad.backends.embedder import HashEmbedder, load_embedder
from r2mad.memory.bank import BankError, MemoryBank
from r2mad.memory.retrieval import render_state
from r2mad.types import to_dict
from tests.helpers import bank_case as case
from tests.helpers import jsonl_values

REPO = Path(__file__).resolve().parents[2]
EMB = HashEmbedder(64)


def new_bank(tmp_path, embedder=EMB, name="demo", store="edge") -> MemoryBank:
    return MemoryBank.create(tmp_path / "memory" / name, task_kind="math", split="train", backbone="smollm2",
                             embedder=embedder, code_version="test", index_root=tmp_path / "index", store=store)


def reopen(tmp_path, embedder=EMB, name="demo", **kw) -> MemoryBank:
    return MemoryBank.open(tmp_path / "memory" / name, embedder, index_root=tmp_path / "index", **kw)


def test_manifest_counts_and_idempotent_add(tmp_path):
    bank = new_bank(tmp_path)
    cases = [case("q1", a, r, reward=float(a == 0)) for a in range(3) for r in (1, 2)] + [case("q2")]
    assert bank.add(cases) == 7
    assert bank.add(cases) == 0  # resume: nothing twice
    assert bank.add(cases[:2] + [case("q3")]) == 1
    assert len(bank) == 8 and bank.has_question("q3") and not bank.has_question("q9")
    manifest = yaml.safe_load((bank.path / "manifest.yaml").read_text())
    # 8 cases: agent 0 has q1 r1, q1 r2, q2, q3 -> 4; agents 1, 2 -> 2 each; positive: 4 of 8
    assert manifest["counts"] == {"questions": 3, "cases": 8, "cases_per_agent": {0: 4, 1: 2, 2: 2},
                                  "positive_share": 0.5}
    assert manifest["embedder"] == {"id": "hash-64", "dim": 64} and manifest["task"] == "math"
    assert len((bank.path / "cases.jsonl").read_text().splitlines()) == 8
    bank.close()


def test_written_in_one_process_read_in_another(tmp_path):
    script = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from pathlib import Path
from r2mad.memory.bank import MemoryBank
from r2mad.backends.embedder import HashEmbedder
from tests.helpers import bank_case as case
bank = MemoryBank.create(Path({str(tmp_path)!r}) / "memory" / "demo", task_kind="math", split="train",
                         backbone="smollm2", embedder=HashEmbedder(64), code_version="test",
                         index_root=Path({str(tmp_path)!r}) / "index")
bank.add([case("derivative", text="derivative of x squared"), case("capital", text="capital city of France")])
bank.close()
"""
    subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO, timeout=120)
    bank = reopen(tmp_path)
    assert bank.notices == []  # the index written by the other process was reused, not rebuilt
    assert sorted(c.id for c in bank.cases()) == ["capital-a0-r1", "derivative-a0-r1"]
    state = render_state("derivative of x squared", "I said 4", "two of three agree", 2 / 3)
    found = bank.retrieve(0, state, {1: "ans 5"}, consensus=2 / 3, k=1)
    assert found.picked[0][0] == "derivative-a0-r1" and found.picked[0][1] == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(bank.response_vectors("derivative-a0-r1"),
                               EMB.encode(["ans 4", "ans 5", "ans 4"]), atol=1e-6)
    bank.close()


def test_confidence_comes_from_the_picked_case(tmp_path):
    bank = new_bank(tmp_path)
    bank.add([case("q1", correct=(True, True, False), responses=("a zero", "a one", "a two"))])
    found = bank.retrieve(0, "anything", {1: "a one", 2: "a two"}, consensus=1 / 3, k=1, confidence_terms="paper")
    # Eq. 11 as the paper writes it. Peer responses equal the stored ones (sim 1): peer 1 was right
    # (c = 1), peer 2 wrong (c = 0).
    assert found.confidence[1] == (pytest.approx(1.0), "high")
    assert found.confidence[2] == (pytest.approx(0.0), "low")
    assert found.lam == pytest.approx(0.7) and found.seconds > 0
    bank.close()


def test_low_consensus_skips_a_closer_negative_case(tmp_path):
    bank = new_bank(tmp_path)
    state = render_state("add two and two", "I said 4", "two of three agree", 2 / 3)
    bank.add([case("same", reward=0.0, text="add two and two"), case("near", reward=1.0, text="add two and three")])
    aware = bank.retrieve(0, state, {}, consensus=1 / 3, k=1, reward="final")  # the reward at the end
    assert [c for c, *_ in aware.candidates] == ["same-a0-r1", "near-a0-r1"]
    assert aware.picked[0][0] == "near-a0-r1"
    assert bank.retrieve(0, state, {}, 1 / 3, k=1, policy="similarity").picked[0][0] == "same-a0-r1"
    bank.close()


def test_quarantined_cases_are_never_retrieved(tmp_path):
    bank = new_bank(tmp_path)
    bank.add([case(f"q{i}", text=f"question number {i}") for i in range(6)])
    bank.quarantine("q2-a0-r1")
    query = EMB.encode(["question number 2"])[0]
    assert "q2-a0-r1" not in [c.case.id for c in bank.candidates(0, query, limit=6)]
    assert len(bank.candidates(0, query, limit=6)) == 5
    bank.close()
    bank = reopen(tmp_path)  # remembered in quarantine.txt
    assert "q2-a0-r1" not in [c.case.id for c in bank.candidates(0, query, limit=6)]
    assert [c.quarantined for c in bank.search("number 2")] == [True]
    bank.unquarantine("q2-a0-r1")
    assert bank.candidates(0, query, limit=1)[0].case.id == "q2-a0-r1"
    bank.close()


def test_search_filters_for_the_audit_view(tmp_path):
    bank = new_bank(tmp_path)
    bank.add([case("q1", 0, 1, correct=(True, False, True)), case("q1", 1, 1, correct=(True, False, True)),
              case("q2", 1, 2, correct=(True, True, True), text="Prime FACTORS of 91")])
    assert [c.id for c in bank.search("prime factors")] == ["q2-a1-r2"]
    assert [c.id for c in bank.search(None, agent=1, correct=False)] == ["q1-a1-r1"]
    assert [c.id for c in bank.search("", round=2)] == ["q2-a1-r2"]
    bank.close()


def test_clear_errors_for_missing_bank_other_embedder_and_other_task(tmp_path):
    with pytest.raises(BankError, match=r"No memory bank at .*memory/none; build one with `python -m r2mad"):
        reopen(tmp_path, name="none")
    new_bank(tmp_path).close()
    with pytest.raises(BankError, match=r"Bank .*memory/demo was built with embedder hash-64 \(dim 64\) but "
                                        r"hash-32 is loaded; rebuild the bank or choose hash-64\."):
        reopen(tmp_path, HashEmbedder(32))
    with pytest.raises(BankError, match=r"holds math cases but this task is mcq"):
        reopen(tmp_path, expected_task="mcq")


def test_embedder_change_rebuilds_the_index_and_removes_the_old_one(tmp_path):
    bank = new_bank(tmp_path)
    bank.add([case("q1"), case("q2")])
    bank.close()
    (tmp_path / "index" / "unrelated").mkdir()
    old = {p.name for p in (tmp_path / "index").iterdir() if p.is_dir()}
    MemoryBank.set_embedder(tmp_path / "memory" / "demo", HashEmbedder(32))
    bank = reopen(tmp_path, HashEmbedder(32))
    assert any("Built the index" in n for n in bank.log)
    assert not any("Built the index" in n for n in bank.notices)  # the operator's news, not a visitor's
    now = {p.name for p in (tmp_path / "index").iterdir() if p.is_dir()}
    assert "unrelated" in now and len(now) == 2 and not (old - {"unrelated"}) & now
    assert bank.retrieve(0, "question about q1", {}, 0.5).picked[0][0] == "q1-a0-r1"
    bank.close()


def test_hand_edited_cases_file_rebuilds_the_index(tmp_path):
    bank = new_bank(tmp_path)
    bank.add([case("q1"), case("q2"), case("q3")])
    bank.close()
    file = tmp_path / "memory" / "demo" / "cases.jsonl"
    file.write_text("".join(file.read_text().splitlines(keepends=True)[:2]))  # a person deletes q3
    bank = reopen(tmp_path)
    assert len(bank) == 2 and any("Built the index" in n for n in bank.log)
    found = bank.candidates(0, EMB.encode(["question about q3"])[0], 5)
    assert sorted(c.case.id for c in found) == ["q1-a0-r1", "q2-a0-r1"]
    assert len([p for p in (tmp_path / "index").iterdir() if p.is_dir()]) == 1
    bank.close()


def test_corrupt_line_is_reported_with_file_and_line_and_nothing_is_written(tmp_path):
    bank = new_bank(tmp_path)
    bank.add([case("q1"), case("q2"), case("q3")])
    bank.close()
    file = tmp_path / "memory" / "demo" / "cases.jsonl"
    lines = file.read_text().splitlines(keepends=True)
    broken = json.loads(lines[1])
    del broken["gold"]
    file.write_text(lines[0] + json.dumps(broken) + "\n" + lines[2])
    before = file.read_bytes()
    index_before = sorted(p.name for p in (tmp_path / "index").iterdir())
    with pytest.raises(BankError, match=r"memory/demo/cases\.jsonl:2: not a valid case \(missing field 'gold'\)"):
        reopen(tmp_path)
    assert file.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == index_before


def test_partial_last_line_is_ignored_then_replaced_never_duplicated(tmp_path):
    bank = new_bank(tmp_path)
    bank.add([case("q1"), case("q2")])
    bank.close()
    file = tmp_path / "memory" / "demo" / "cases.jsonl"
    long_case = case("q9", text="a long question " * 200)
    with open(file, "a") as handle:  # a writer killed mid-line, longer than the next line we write
        handle.write(json.dumps(to_dict(long_case))[:3000])
    bank = reopen(tmp_path)
    assert len(bank) == 2 and len(bank.notices) == 1  # the index still matches: no rebuild
    assert "cases.jsonl:3: ignored an incomplete last line" in bank.notices[0]
    assert bank.add([case("q3")]) == 1 and bank.add([case("q3")]) == 0
    bank.close()
    rows = [json.loads(line) for line in file.read_text().splitlines()]  # every line parses
    assert [r["id"] for r in rows] == ["q1-a0-r1", "q2-a0-r1", "q3-a0-r1"]
    bank = reopen(tmp_path)
    assert len(bank) == 3 and bank.notices == []
    bank.close()


def test_a_bank_open_twice_is_refused_until_closed(tmp_path):
    bank = new_bank(tmp_path)
    bank.add([case("q1")])
    with pytest.raises(BankError, match=r"memory/demo is already open .*share that MemoryBank or close it"):
        reopen(tmp_path)
    bank.close()
    again = reopen(tmp_path)
    assert len(again) == 1
    again.close()


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_unreachable_qdrant_server_fails_fast(tmp_path):
    new_bank(tmp_path).close()
    with socket.socket() as sock:  # a loopback port that nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    import qdrant_client  # noqa: F401  (import time is not what this test measures)
    started = time.monotonic()
    with pytest.raises(BankError, match=rf"Qdrant server at http://127.0.0.1:{port} is unreachable"):
        reopen(tmp_path, url=f"http://127.0.0.1:{port}")
    # a guard against waiting out client timeouts and retries, not a speed figure (refused at once normally)
    assert time.monotonic() - started < 60


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_eight_threads_adding_and_retrieving_lose_nothing(tmp_path):
    bank = new_bank(tmp_path)
    errors = []

    def work(worker: int):
        try:
            for batch in range(5):  # each thread also re-adds its neighbour's previous batch
                mine = [case(f"w{worker}b{batch}q{i}", agent=i % 3) for i in range(4)]
                theirs = [case(f"w{(worker + 1) % 8}b{batch - 1}q{i}", agent=i % 3) for i in range(4)]
                bank.add(mine + (theirs if batch else []))
                bank.retrieve(worker % 3, f"question about w{worker}", {1: "ans 5", 2: "ans 4"}, 2 / 3, k=2)
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(bank) == 8 * 5 * 4
    bank.close()
    ids = [row["id"] for row in jsonl_values(bank.path / "cases.jsonl")]
    assert len(ids) == len(set(ids)) == 160
    bank = reopen(tmp_path)
    query = EMB.encode(["question"])[0]
    assert bank.notices == [] and sum(len(bank.candidates(a, query, 500)) for a in range(3)) == 160
    bank.close()


@pytest.mark.parametrize("store", ["edge", "qdrant-local"])
def test_both_embedded_stores_answer_the_same(tmp_path, store):
    bank = new_bank(tmp_path, store=store)
    bank.add([case(f"q{i}", text=f"question number {i} about primes") for i in range(5)])
    picked = bank.retrieve(0, "question number 3 about primes", {1: "ans 5"}, 1 / 3, k=2).picked
    assert picked[0][0] == "q3-a0-r1"
    bank.close()


def test_real_minilm_bank_finds_the_semantically_close_case(tmp_path):
    minilm = load_embedder()
    assert minilm is load_embedder() and minilm.id == "all-MiniLM-L6-v2" and minilm.dim == 384
    bank = new_bank(tmp_path, embedder=minilm)
    bank.add([case("calc", text="Differentiate f(x) = x^3 + 2x with respect to x."),
              case("geo", text="Which river flows through the capital of Egypt?"),
              case("prob", text="Two dice are rolled; what is the chance both show six?")])
    state = render_state("Find the derivative of g(x) = 5x^3 - x.", "I said 4", "two of three agree", 2 / 3)
    found = bank.retrieve(0, state, {1: "ans 5", 2: "ans 4"}, consensus=1 / 3, k=1, confidence_terms="paper")
    assert found.picked[0][0] == "calc-a0-r1"
    assert found.confidence[1][0] == pytest.approx(0.0) and found.confidence[2][0] == pytest.approx(1.0)
    bank.close()
    with pytest.raises(BankError, match="built with embedder all-MiniLM-L6-v2 \\(dim 384\\)"):
        reopen(tmp_path, EMB)


@pytest.mark.slow
def test_embedders_give_unit_rows_and_name_the_offline_fallback():
    vectors = load_embedder("hash-64").encode(["two plus two", "two plus two", ""])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 64)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert np.array_equal(vectors[0], vectors[1])
    with pytest.raises(ValueError, match=r"Embedder 'r2mad-test/no-such-embedder' could not be loaded \(.*\); "
                                         r"name a sentence-transformers model .* or the offline default "
                                         r"'all-MiniLM-L6-v2'\."):
        load_embedder("r2mad-test/no-such-embedder")
