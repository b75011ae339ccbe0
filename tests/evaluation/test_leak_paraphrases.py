"""The leak guard by meaning on hand-made paraphrases of the shipped banks' questions (tests/graded/leaks*.jsonl,
labelled by people who did not read the guard; the second set was written after its first tuning): a rewording or a
translation is refused (one that may be a translation runs without its source's cases), a question with one number
changed runs, and so do short English questions and other languages' questions the banks do not hold
(leaks_unrelated*.jsonl, the second written after the translation bar was set). Real embedders, shipped banks."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from r2mad.evaluation.leakage import maybe_translated, same_meaning
from r2mad.evaluation.wording import as_numbers, figures, is_english, one_word_swapped, same_figures
from r2mad.grading.tasks import task_from_input
from r2mad.memory.files import read_cases

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text, english, held", [
    ("A cyclist rides forty-five kilometres in an hour and a half.", True, {"45.0": 1, "1.5": 1}),
    ("A number divided by four gives two and a half.", True, {"/": 1, "4.0": 1, "2.5": 1}),
    ("Solve for x: x/4 = 2.5.", True, {"/": 1, "=": 1, "4.0": 1, "2.5": 1}),
    ("How many millilitres are there in half a litre?", True, {"0.5": 1}),
    ("How many millilitres are there in one litre?", True, {}),  # "one" is as often a pronoun: not counted
    ("Who was the second person to walk on the Moon?", True, {"2nd": 1}),
    ("Um caderno custa 4,75 dólares e uma caneta custa 1,30.", False, {"4.75": 1, "1.3": 1}),
    ("What is 12 - 30? Her speed in km/h.", True, {"-": 1, "12.0": 1, "30.0": 1}),
    ("How many centimetres are there in three point six metres?", True, {"3.6": 1}),
    ("Sara is 3 times as old as her son; Tom is triple his age.", True, {"x3": 2}),
    ("Quanti litri ci sono in 4500 millilitri?", False, {"4500.0": 1}),  # "in" alone does not make it English
    ("Largest planet?", True, {}),  # no common word of any language: its letters say English
    ("Cosa immagazzinano i cammelli nelle loro gobbe?", False, {}),
    ("¿Planeta más pequeño?", False, {}),
])
def test_figures_read_digits_number_words_halves_ordinals_and_operators(text, english, held):
    assert is_english(text) is english
    assert dict(figures(text, english)) == held


def test_one_content_word_swapped_is_another_question_but_another_form_of_a_word_is_not():
    assert one_word_swapped("When you mix red and yellow paint, what colour do you get?",
                            "What colour do you get when you mix blue and yellow paint?")
    assert one_word_swapped("What is the chemical symbol for silver?", "What is the chemical symbol for gold?")
    assert not one_word_swapped("Which person first walked on the Moon?",
                                "Who was the first person to walk on the Moon?")
    assert not one_word_swapped("Priya scored 82 and 90 on two tests. What is her mean score?",
                                "A student scored 82 and 90 on two tests. What is her mean score?")  # renamed


def test_same_figures_counts_each_once_and_leaves_out_equals_and_one():
    assert same_figures(figures("Two numbers that follow each other add up to 57."),
                        figures("The sum of two consecutive numbers is 57. What is the larger of the two?"))
    assert same_figures(figures("A number divided by four gives two and a half."), figures("x/4 = 2.5"))
    assert same_figures(figures("How many ounces in 1 pound?"), figures("How many ounces in one pound?"))
    assert not same_figures(figures("How many ounces in 2 pounds?"), figures("How many ounces in one pound?"))
    assert as_numbers(figures("the third angle, 3 times")) == {"3.0": 2}


@pytest.fixture(scope="module")
def banks():
    from r2mad.backends.embedder import load_embedder

    embedder = load_embedder()
    def bank(name):
        path = ROOT / "memory" / name
        return SimpleNamespace(path=path, embedder=embedder, cases=lambda: read_cases(path / "cases.jsonl", None).cases)
    return {name: bank(name) for name in ("demo-math", "demo-mcq")}


def measured(banks, name: str) -> dict[str, list[bool]]:
    """Per kind of item (leak, one-number, other-question, short-english, other-language), whether the guard kept
    it from the debaters: refused, or run without its source question's cases (a leak); for any other item whether
    it was refused."""
    out: dict[str, list[bool]] = {}
    for line in (ROOT / "tests" / "graded" / name).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        bank = banks[row["bank"]]
        task = task_from_input(row["question"], [tuple(o) for o in row["options"]] or None, None)
        refused = same_meaning(bank, task) is not None
        if row["label"] == "leak" and not refused:  # its source's cases withheld (the option lines not compared)
            refused = row["source"].split("\n")[0] in maybe_translated(bank, task)
        out.setdefault("leak" if row["label"] == "leak" else row["how"], []).append(refused)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["leaks.jsonl", "leaks_heldout.jsonl"])
def test_paraphrases_are_mostly_refused_and_one_number_variants_run(banks, name):
    found = measured(banks, name)
    refused = sum(found["leak"]) / len(found["leak"])
    runs = 1 - sum(found["one-number"]) / len(found["one-number"])
    assert runs >= 0.95  # the bar, met on both sets (86/86 in all)
    assert refused >= 0.95  # the bar: 105/109 and 70/70 kept from the debaters today


@pytest.mark.slow
@pytest.mark.parametrize("name", ["leaks_unrelated.jsonl", "leaks_unrelated_heldout.jsonl"])
def test_short_english_and_other_languages_questions_the_bank_does_not_hold_run(banks, name):
    found = measured(banks, name)
    assert not any(found["short-english"]) and not any(found["other-language"])  # 16/16 and 40/40 today
    assert all(found["leak"])  # "Capital of Canada?", "Legs of a spider?": 5/5


def test_a_question_not_in_english_that_may_be_a_bank_question_names_it_for_withholding(banks):
    task = task_from_input("Qual é o símbolo químico do ferro?", None, None)  # iron, not the bank's gold: 0.88
    assert same_meaning(banks["demo-mcq"], task) is None
    found = maybe_translated(banks["demo-mcq"], task)
    gold = "What is the chemical symbol for gold?"
    assert found[gold] == {c.question_id for c in banks["demo-mcq"].cases() if c.question.startswith(gold)}
    assert maybe_translated(banks["demo-mcq"], task_from_input("Chemical symbol for iron?", None, None)) == {}
