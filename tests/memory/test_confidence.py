"""Peer confidence from retrieved cases (Eq. 11), its labels and the prompt annotation."""
import pytest

from r2mad.memory.confidence import annotate, confidence_label, peer_confidence


def test_confidence_weighs_correctness_by_similarity():
    # (0.9*1 + 0.6*0 + 0.3*1) / (0.9 + 0.6 + 0.3) = 1.2 / 1.8 = 0.6667
    c = peer_confidence([0.9, 0.6, 0.3], [True, False, True])
    assert c == pytest.approx(2 / 3)
    assert confidence_label(c) == "high"


def test_negative_similarity_counts_as_no_evidence():
    # -0.5 is clipped to 0: (0.8*0 + 0*1) / 0.8 = 0 -> low
    c = peer_confidence([0.8, -0.5], [False, True])
    assert c == 0.0
    assert confidence_label(c) == "low"


def test_no_cases_or_no_positive_similarity_gives_no_confidence():
    assert peer_confidence([], []) is None
    assert peer_confidence([-0.2, 0.0], [True, True]) is None


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="one of each per retrieved case"):
        peer_confidence([0.5], [True, False])


@pytest.mark.parametrize("c, label", [(0.56, "high"), (0.55, None), (0.5, None), (0.45, None),
                                      (0.44, "low"), (None, None)])
def test_labels_use_strict_thresholds(c, label):
    assert confidence_label(c) == label


def test_annotation_follows_the_response():
    high = annotate("Answer: \\boxed{4}", "high")
    assert high.startswith("Answer: \\boxed{4}\n<confidence>High:")
    assert high.endswith("usually correct.</confidence>")
    low = annotate("Answer: \\boxed{5}", "low")
    assert "<confidence>Low:" in low and "usually wrong" in low
    assert annotate("Answer: \\boxed{4}", None) == "Answer: \\boxed{4}"
