"""Short and open answers compared by meaning with the real embedder (all-MiniLM-L6-v2): paraphrases that must
match and answers that must not, at the thresholds docs/kinds.md states, and one embedder load per process."""
from __future__ import annotations

import pytest

from r2mad.backends import embedder
from r2mad.grading.kinds import KINDS
from r2mad.grading.kinds.meaning import MEANING
from r2mad.types import Answer

pytestmark = pytest.mark.slow  # the real embedder

SHORT_SAME = [("Canberra", "The city of Canberra"), ("Mount Everest", "Everest"), ("Neil Armstrong", "Armstrong"),
              ("William Shakespeare", "Shakespeare"), ("Barack Obama", "Obama"),
              ("1969", "nineteen sixty-nine"), ("The Beatles", "beatles")]  # the last two by spelling alone
SHORT_DIFFERENT = [("Canberra", "Sydney"), ("Canberra", "Melbourne"), ("Neil Armstrong", "Buzz Aldrin"),
                   ("Paris", "Lyon"), ("Jupiter", "Saturn"), ("Mount Everest", "K2"), ("1969", "1970")]
OPEN_SAME = [("Start with Go: it is simpler and you will be productive sooner.",
              "Begin with Go since it is easier to learn.")]
OPEN_DIFFERENT = [("Learn Rust first for its memory safety.", "Go first, because it is easier."),
                  ("Rust first.", "It depends on your goals."),
                  ("It depends on what you want to build.", "It depends on your goals.")]


@pytest.fixture(scope="module", autouse=True)
def real_embedder():
    MEANING.use(embedder.DEFAULT_EMBEDDER)


@pytest.mark.parametrize("a, b", SHORT_SAME)
def test_short_paraphrases_match(a, b):
    assert KINDS["short"].same(a, b) and KINDS["short"].same(b, a)


@pytest.mark.parametrize("a, b", SHORT_DIFFERENT)
def test_short_different_answers_do_not_match(a, b):
    assert not KINDS["short"].same(a, b)


@pytest.mark.parametrize("a, b", OPEN_SAME)
def test_open_paraphrases_are_one_position(a, b):
    assert KINDS["open"].same(a, b)


@pytest.mark.parametrize("a, b", OPEN_DIFFERENT)
def test_open_different_positions_are_two_groups(a, b):
    assert not KINDS["open"].same(a, b)


def test_a_round_of_real_answers_groups_as_a_reader_would():
    answers = [Answer(v, "answer_colon") for v in ("Sydney", "Canberra", "the city of Canberra")]
    assert KINDS["short"].groups(answers) == [0, 1, 1] and KINDS["short"].vote(answers).value == "Canberra"


def test_the_embedder_loads_once_per_process(monkeypatch):
    MEANING.embed(["the first answer loads the embedder"])
    loads, load = [], embedder._load
    monkeypatch.setattr(embedder, "_load", lambda model_id: loads.append(model_id) or load(model_id))
    for i in range(3):
        MEANING.embed([f"a new answer number {i}"])
    assert loads == []  # new answers, no new load
    MEANING.use(embedder.DEFAULT_EMBEDDER)  # the vectors are dropped, the model is not
    MEANING.embed(["one more answer"])
    assert loads == []
