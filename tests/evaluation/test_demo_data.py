"""Checks the shipped demo question sets (data/demo) keep their schema, counts and balance."""
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from tests.helpers import jsonl_values

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def load(name):
    return jsonl_values(DEMO / name)


@pytest.fixture(scope="module")
def mcq():
    return load("mcq.jsonl")


@pytest.fixture(scope="module")
def math():
    return load("math.jsonl")


def test_mcq_schema_and_answers(mcq):
    assert len(mcq) == 84
    assert len({r["id"] for r in mcq}) == 84
    for r in mcq:
        assert set(r) == {"id", "question", "options", "answer", "split", "topic"}, r["id"]
        assert list(r["options"]) == ["A", "B", "C", "D"], r["id"]
        texts = [t.strip() for t in r["options"].values()]
        assert all(texts) and len(set(texts)) == 4, f"{r['id']}: empty or repeated option"
        assert r["answer"] in r["options"], r["id"]
        assert 0 < len(r["question"]) < 200, r["id"]


def test_mcq_gold_letters_balanced(mcq):
    assert Counter(r["answer"] for r in mcq) == {"A": 21, "B": 21, "C": 21, "D": 21}


def test_mcq_splits_interleaved_and_cover_topics(mcq):
    splits = Counter(r["split"] for r in mcq)
    assert splits == {"train": 56, "test": 28}
    assert any(r["split"] == "test" for r in mcq[:10]), "test items should be interleaved"
    for split in ("train", "test"):
        topics = {r["topic"] for r in mcq if r["split"] == split}
        assert topics == {r["topic"] for r in mcq}, f"a topic is missing from {split}"


def test_math_schema_and_numeric_answers(math):
    assert len(math) == 42
    assert len({r["id"] for r in math}) == 42
    for r in math:
        assert set(r) == {"id", "question", "answer", "split", "topic"}, r["id"]
        assert isinstance(r["answer"], str), r["id"]
        Fraction(r["answer"])  # raises ValueError if the answer is not a plain number
    decimals = [r["id"] for r in math if "." in r["answer"]]
    assert len(decimals) == 8


def test_math_splits(math):
    assert Counter(r["split"] for r in math) == {"train": 28, "test": 14}
    assert any(r["split"] == "test" for r in math[:10]), "test items should be interleaved"
