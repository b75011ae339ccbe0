"""R²-MAD retrieval as the authors' code runs it, on a fixed 6-case bank with hand-made embeddings:
peer confidence over the candidate pool (3K) with the authors' terms, the MMR reward at the case's own
round, and each retrieval policy; the paper text's readings behind their switches."""
import numpy as np
import pytest

from r2mad.backends.embedder import Embedder
from r2mad.memory.bank import MemoryBank
from r2mad.types import Case

# Every text is embedded as the vector of its first word found here (unknown texts: the 4th axis).
TABLE = {
    # agent 0's case states; the query state is (1, 0, 0, 0), so the similarity is the first entry
    "s1": (1.0, 0, 0, 0), "s2": (0.96, 0, 0.28, 0), "s3": (0.8, 0.6, 0, 0),
    "s4": (0.6, 0.8, 0, 0), "s5": (0.28, 0.96, 0, 0), "s6": (0, 0.6, 0.8, 0),
    # responses
    "pa": (1.0, 0, 0, 0), "pb": (0, 1.0, 0, 0), "pc": (0.6, 0.8, 0, 0),
}
QUERY = np.array([1.0, 0, 0, 0], dtype=np.float32)


class TableEmbedder(Embedder):
    id, dim = "table-4", 4

    def encode(self, texts):
        rows = []
        for text in texts:
            word = next((w for w in text.replace(":", " ").split() if w in TABLE), None)
            rows.append(TABLE[word] if word else (0, 0, 0, 1.0))
        return np.asarray(rows, dtype=np.float32)


def case(q: int, agent: int, own_correct: bool, reward: float, previous: str = "pz") -> Case:
    correct = tuple(own_correct if j == agent else False for j in range(3))
    return Case(id=f"q{q}:a{agent}:r1", question_id=f"q{q}", task_kind="mcq", agent=agent, round=1,
                question=f"s{q}", previous_response=previous, summary="", consensus=1 / 3,
                responses=("pz", "pz", "pz"), answers=("A", "B", "C"), gold="A", correct=correct,
                reward=reward)


# agent 0's cases: (own correctness at the case's round, outcome reward at the debate's end)
OWN = {1: (False, 1.0), 2: (True, 0.0), 3: (False, 0.0), 4: (True, 1.0), 5: (True, 1.0), 6: (False, 0.0)}
# peers' responses one round before each of the pool's cases (their own cases' previous responses)
PEER_BEFORE = {1: {1: "pa", 2: "pb"}, 2: {1: "pb", 2: "pb"}, 3: {1: "pc", 2: "pa"},
               4: {1: "pb", 2: "pa"}, 5: {1: "pc", 2: "pb"}, 6: {1: "pa", 2: "pb"}}


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faithful")
    bank = MemoryBank.create(tmp / "bank", task_kind="mcq", split="train", backbone="none",
                             embedder=TableEmbedder(), code_version="test", index_root=tmp / "index")
    cases = [case(q, 0, *OWN[q]) for q in OWN]
    cases += [case(q, j, False, 0.0, previous=text) for q, peers in PEER_BEFORE.items() for j, text in peers.items()]
    bank.add(cases)
    yield bank
    bank.close()


def retrieve(bank, policy="state-aware", k=1, rng=0, peers=None, **terms):
    vectors = {j: np.asarray(v, dtype=np.float32) for j, v in (peers or {}).items()}
    return bank.retrieve_vectors(0, QUERY, vectors, 1 / 3, k, policy, 0.9, rng, **terms)


def ids(found):
    return [case_id.split(":")[0] for case_id, *_ in found.picked]


def test_peer_confidence_over_the_pool_with_the_authors_terms(bank):
    # pool (3K = 3): q1 (sim 1.0, owner wrong), q2 (.96, owner right), q3 (.8, owner wrong).
    found = retrieve(bank, peers={1: TABLE["pc"], 2: TABLE["pb"], 3: (0, 0, 0, 0)})
    assert [c.split(":")[0] for c, *_ in found.candidates] == ["q1", "q2", "q3"]
    # peer 1 now "pc"; one round before the cases it said pa, pb, pc: sims .6, .8, 1.0
    # c = (.6*0 + .8*1 + 1.0*0) / (.6 + .8 + 1.0) = 1/3 -> low
    assert found.confidence[1] == (pytest.approx(1 / 3), "low")
    # peer 2 now "pb"; before: pb, pb, pa -> sims 1, 1, 0: c = (0 + 1) / 2 = .5, the unlabelled band
    assert found.confidence[2] == (pytest.approx(0.5), None)
    # no similarity at all: c = 0, low
    assert found.confidence[3] == (pytest.approx(0.0), "low")


def test_paper_terms_weigh_only_the_picked_case_and_give_no_label_without_evidence(bank):
    found = retrieve(bank, peers={1: TABLE["pc"], 3: (0, 0, 0, 0)}, confidence_terms="paper")
    assert ids(found) == ["q2"]
    # the picked case's stored response of peer 1 is "pz" (4th axis): sim 0 -> nothing to weigh
    assert found.confidence[1] == (None, None) and found.confidence[3] == (None, None)


def test_reward_is_the_cases_own_round_correctness(bank):
    # q1's agent was wrong in its round and right at the end: reward 0 (authors), 1 (paper text)
    authors = retrieve(bank)
    assert authors.candidates[0][2] == 0.0 and ids(authors) == ["q2"]  # .7 * .96 * 1 = .672
    assert authors.picked[0][3] == pytest.approx(0.672)
    paper = retrieve(bank, reward="final")
    assert paper.candidates[0][2] == 1.0 and ids(paper) == ["q1"] and paper.picked[0][3] == pytest.approx(0.7)


@pytest.mark.parametrize("policy, k, rng, expected", [
    ("similarity", 2, 0, ["q1", "q2"]),
    # positive-only: correct cases of the whole bank by similarity (q4, q5 lie outside the pool)
    ("positive", 3, 0, ["q2", "q4", "q5"]),
    # diversity, K = 1: seed 0 draws the anchor q3 from the pool of 3 (similarity-only would give q1)
    ("diversity", 1, 0, ["q3"]),
    # K = 2: the pool of 6 is the whole bank; seed 0 draws q6; then -max sim to it: q1 0, q2 -.224,
    # q3 -.36, q4 -.48, q5 -.576 -> q1
    ("diversity", 2, 0, ["q6", "q1"]),
    # random: seed 0 draws its 3K = 3 candidates from the whole bank ordered by similarity, indices
    # 4, 5, 3 (q5, q6, q4), then picks the first of them: q5, not in the similarity pool
    ("random", 1, 0, ["q5"]),
])
def test_each_policy_on_the_six_case_bank(bank, policy, k, rng, expected):
    assert ids(retrieve(bank, policy, k, rng)) == expected


def test_positive_only_has_no_fallback_and_follows_the_reward_switch(bank):
    assert ids(retrieve(bank, "positive", k=6)) == ["q2", "q4", "q5"]
    assert ids(retrieve(bank, "positive", k=6, reward="final")) == ["q1", "q4", "q5"]


def test_random_reaches_the_whole_bank(bank):
    seen = {ids(retrieve(bank, "random", 1, seed))[0] for seed in range(60)}
    assert seen == {f"q{q}" for q in range(1, 7)}


# N1: each policy's own candidates carry the peer confidence (the authors' code). Peer 1 now says "pc",
# peer 2 "pb"; one round before each case of agent 0 they said (PEER_BEFORE), as similarities to now:
#   case:          q1   q2   q3   q4   q5   q6
#   owner right:   no   yes  no   yes  yes  no
#   peer 1 (pc):   .6   .8   1.0  .8   1.0  .6
#   peer 2 (pb):   1    1    0    0    1    1
PEERS_NOW = {1: TABLE["pc"], 2: TABLE["pb"]}


def test_positive_only_confidence_is_over_its_own_top_3k_correct_cases(bank):
    found = retrieve(bank, "positive", peers=PEERS_NOW)
    assert [c.split(":")[0] for c, *_ in found.candidates] == ["q2", "q4", "q5"]
    # every owner right: peer 1 (.8 + .8 + 1) / 2.6 = 1, peer 2 (1 + 0 + 1) / 2 = 1 (the similarity pool
    # q1-q3 gives 1/3 and .5)
    assert found.confidence[1] == (pytest.approx(1.0), "high")
    assert found.confidence[2] == (pytest.approx(1.0), "high")
    # reward "final": correct at the end = q1, q4, q5; peer 1 (0 + .8 + 1) / (.6 + .8 + 1) = .75
    final = retrieve(bank, "positive", peers=PEERS_NOW, reward="final")
    assert [c.split(":")[0] for c, *_ in final.candidates] == ["q1", "q4", "q5"]
    assert final.confidence[1] == (pytest.approx(0.75), "high")


def test_random_confidence_is_over_its_own_3k_random_cases(bank):
    found = retrieve(bank, "random", peers=PEERS_NOW)  # seed 0: q5, q6, q4 (see the policy table)
    assert [c.split(":")[0] for c, *_ in found.candidates] == ["q5", "q6", "q4"]
    # peer 1: (1 + 0 + .8) / (1 + .6 + .8) = .75 -> high; peer 2: (1 + 0 + 0) / (1 + 1 + 0) = .5 -> none
    assert found.confidence[1] == (pytest.approx(0.75), "high")
    assert found.confidence[2] == (pytest.approx(0.5), None)
    # K = 2: 3K = 6 draws the whole bank whatever the seed: peer 1 (.8 + .8 + 1) / 4.8 = 13/24,
    # peer 2 (1 + 1) / 4 = .5
    for seed in (0, 1, 2):
        whole = retrieve(bank, "random", k=2, rng=seed, peers=PEERS_NOW)
        assert sorted(c.split(":")[0] for c, *_ in whole.candidates) == [f"q{q}" for q in range(1, 7)]
        assert whole.confidence[1] == (pytest.approx(13 / 24), None)
        assert whole.confidence[2] == (pytest.approx(0.5), None)


def test_the_paper_terms_stay_over_the_k_picked_under_every_policy(bank):
    # q5 picked (random, seed 0); its stored responses are "pz" (4th axis): nothing to weigh -> no label
    found = retrieve(bank, "random", peers=PEERS_NOW, confidence_terms="paper")
    assert ids(found) == ["q5"] and found.confidence[1] == (None, None)


# MMR's redundancy term compares case documents (the authors' code), not states. States are keyed on the
# previous response (t1-t3), documents on the reference solution (d1-d3), which no state text holds.
DOC_TABLE = {"t1": (1.0, 0, 0), "t2": (0.9, 0.43589, 0), "t3": (0.8, 0, 0.6),
             "d1": (1.0, 0, 0), "d2": (0, 1.0, 0), "d3": (1.0, 0, 0)}


class DocEmbedder(TableEmbedder):
    id, dim = "doc-table-3", 3

    def encode(self, texts):
        rows = []
        for text in texts:
            word = next((w for w in text.replace(":", " ").split() if w in DOC_TABLE), None)
            rows.append(DOC_TABLE[word] if word else (0, 0, 1.0))
        return np.asarray(rows, dtype=np.float32)


def test_mmr_redundancy_compares_the_case_documents(tmp_path):
    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="train", backbone="none",
                             embedder=DocEmbedder(), code_version="test", index_root=tmp_path / "index")
    bank.add([Case(id=f"q{q}:a0:r1", question_id=f"q{q}", task_kind="mcq", agent=0, round=1, question="qq",
                   previous_response=f"t{q}", summary="", consensus=1.0, responses=("zz", "zz", "zz"),
                   answers=("A", "A", "A"), gold="A", correct=(True, True, True), reward=1.0, solution=f"d{q}")
              for q in (1, 2, 3)])
    query = np.array([1.0, 0, 0], dtype=np.float32)
    found = bank.retrieve_vectors(0, query, {}, 1.0, 2, "state-aware", 0.9, 0)
    # consensus 1 -> lambda .1; similarities 1, .9, .8, every reward 1. First pick q1 (.1 * 1 = .1).
    # Second, by documents: q2 .09 - .9 * (d2 . d1 = 0) = .09; q3 .08 - .9 * (d3 . d1 = 1) = -.82 -> q2.
    # (By states it would be q3: q2 .09 - .9 * .9 = -.72 < q3 .08 - .9 * .8 = -.64.)
    assert ids(found) == ["q1", "q2"]
    assert [p[3] for p in found.picked] == [pytest.approx(0.1), pytest.approx(0.09, abs=1e-5)]
    bank.close()
