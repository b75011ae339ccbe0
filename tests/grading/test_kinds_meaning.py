"""Short answers with the real embedder (all-MiniLM-L6-v2): meaning never makes two answers the same; it only
keeps a pair in different words undecided (synonyms, and look-alikes it cannot tell from them) where the rules
would otherwise call it different; and the embedder loads once per process."""
from __future__ import annotations

import pytest

from r2mad.backends import embedder
from r2mad.grading.kinds import KINDS
from r2mad.grading.kinds.meaning import MEANING
from r2mad.types import Answer

pytestmark = pytest.mark.slow  # the real embedder

SAME_BY_RULE = [("Canberra", "The city of Canberra"), ("Mount Everest", "Everest"), ("1969", "nineteen sixty-nine"),
                ("The Beatles", "beatles"), ("USA", "United States of America")]
DIFFERENT = [("Canberra", "Sydney"), ("Canberra", "Melbourne"), ("Paris", "Lyon"), ("Jupiter", "Saturn"),
             ("Au", "gold"), ("Mount Everest", "K2"), ("1969", "1970")]  # cosines 0.17 to 0.72
UNDECIDED = [("CO2", "carbon dioxide"), ("Holland", "the Netherlands"), ("car", "automobile"),  # synonyms
             ("Shanghai", "Beijing"), ("Istanbul", "Ankara")]  # different cities, as close as synonyms (0.82-0.85)


@pytest.fixture(scope="module", autouse=True)
def real_embedder():
    MEANING.use(embedder.DEFAULT_EMBEDDER)


@pytest.mark.parametrize("a, b", SAME_BY_RULE)
def test_the_rules_find_the_same_answer_without_meaning(a, b):
    assert KINDS["short"].rule(a, b).same is True and KINDS["short"].rule(b, a).same is True


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_different_words_far_apart_in_meaning_are_different(a, b):
    assert KINDS["short"].rule(a, b).same is False


@pytest.mark.parametrize("a, b", UNDECIDED)
def test_different_words_close_in_meaning_stay_undecided(a, b):
    assert KINDS["short"].rule(a, b).same is None


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
