"""Answer kinds: extraction, equivalence, grouping, consensus, vote and scoring, with hand-computed values.
Meaning is read from a fixed embedder here (vectors chosen by hand); the real one is in test_kinds_meaning.py."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from r2mad.backends.embedder import Embedder
from r2mad.debate import Debate
from r2mad.grading.answers import consensus_ratio, extract_answer, is_correct, is_unanimous, math_value, plurality_vote
from r2mad.grading.judge import Judge
from r2mad.grading.kinds import KINDS, kind_named, kind_of
from r2mad.grading.kinds.base import Ruling
from r2mad.grading.kinds.meaning import MEANING
from r2mad.grading.kinds.words import normalise
from r2mad.grading.outcome import agreement_line, outcome
from r2mad.grading.tasks import guess_kind, task_from_input
from r2mad.methods import make_method
from r2mad.prompts.common import format_instruction
from r2mad.settings.config import DebateSettings
from r2mad.types import UNPARSED, AgentTurn, Answer, Judged, Task
from tests.scripted import ScriptedBackend


class FixedEmbedder(Embedder):
    """Unit vectors chosen by hand: text -> angle in degrees (cosine of two = cos of the angle between)."""
    id, dim = "fixed", 2

    def __init__(self, angles: dict[str, float]):
        self.angles = angles

    def encode(self, texts):
        return np.array([[np.cos(np.radians(self.angles[t])), np.sin(np.radians(self.angles[t]))] for t in texts],
                        dtype=np.float32)


@pytest.fixture
def meaning():
    """MEANING reads a FixedEmbedder for the test; the default embedder comes back after it."""
    before = MEANING.embedder
    yield lambda angles: MEANING.use(FixedEmbedder(angles))
    MEANING.use(before)


def degrees(cosine: float) -> float:
    return float(np.degrees(np.arccos(cosine)))


def a(value):
    return Answer(value, "answer_colon") if value is not None else UNPARSED


# --- the registry ------------------------------------------------------------------------------------

def test_every_kind_is_registered_once_by_name_and_asked_by_the_prompts():
    assert list(KINDS) == ["math", "mcq", "integer", "yesno", "short", "open"]
    assert all(KINDS[name].name == name for name in KINDS) and kind_of(Task("short", "q")) is KINDS["short"]
    with pytest.raises(ValueError, match="Unknown answer kind 'essay'; choose one of: math, mcq"):
        kind_named("essay")
    for name, kind in KINDS.items():
        assert format_instruction(Task(name, "q", (("A", "x"), ("B", "y")))) == kind.instruction(Task(name, "q"))
        assert kind.label and kind.agree.startswith("Agree = ")


# --- math --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, question, read", [
    ("12 + 30 = 33", "What is 12 + 30?", "33"),  # the right-hand side of a worked equation is the value
    ("2 \\cdot 21 = 42", "", "42"),
    ("x = 5", "", "x = 5"),  # a letter on the left names the value: normalize_math reads it
    ("x^2 + y^2 = 1", "", "x^2 + y^2 = 1"),  # an equation as the answer stays whole
    ("12 + 30", "What is 12 + 30?", None),  # the question restated is no answer
    ("12+30", "What is 12 + 30?", None),
    ("12 + 31", "What is 12 + 30?", "12 + 31"),  # not the question's own expression
    ("None", "", None), ("\\text{None}", "", None), ("n/a", "", None),
    ("42", "What is 12 + 30?", "42"),
])
def test_math_reads_the_value_an_answer_states(value, question, read):
    assert math_value(value, question) == read


def test_math_extraction_applies_the_value_rules_and_a_restatement_splits_no_vote():
    task = Task("math", "What is 12 + 30?", gold="42")
    replies = ["So \\boxed{12 + 30 = 42}", "The answer is 12 + 30.", "\\boxed{None}", "\\boxed{42}"]
    answers = [extract_answer(r, task) for r in replies]
    assert [x.value for x in answers] == ["42", None, None, "42"]
    assert consensus_ratio(answers, "math") == pytest.approx(2 / 4)
    assert plurality_vote(answers, "math").value == "42" and is_correct(answers[0], task) is True


# --- integer -----------------------------------------------------------------------------------------

def test_integer_is_exact_whole_numbers_leading_zeros_aside():
    task = Task("integer", "AIME 2024 I, problem 1", gold="204")
    got = [extract_answer(r, task) for r in ("\\boxed{204}", "\\boxed{0204}", "\\boxed{204.5}", "\\boxed{\\frac{1}{2}}",
                                             "The answer is 33.")]
    assert [x.value for x in got] == ["204", "204", None, None, "33"]
    assert [is_correct(x, task) for x in got] == [True, True, False, False, False]
    assert KINDS["integer"].same("033", "33") and not KINDS["integer"].same("33", "33.5")
    with pytest.raises(ValueError, match="not a whole number"):
        KINDS["integer"].checked("twelve", task)
    with pytest.raises(ValueError, match="not a whole number from 0 to 999"):
        KINDS["integer"].checked("1000", task)  # AIME's answers are 0 to 999
    out = [extract_answer(r, Task("integer", "q", gold="0")) for r in ("\\boxed{1000}", "\\boxed{12345}")]
    assert [x.value for x in out] == ["1000", "12345"]  # read: agents who give it agree with each other
    assert KINDS["integer"].agrees(out[0], out[0])
    assert KINDS["integer"].grade(out[0], Task("integer", "q", gold="0")).how == "different numbers"
    big = Task("integer", "q", gold="100")
    assert is_correct(Answer("100", "boxed"), big) is True and is_correct(Answer("1100", "boxed"), big) is False


# --- yes / no ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, read", [
    ("Final answer: Yes.", "yes"), ("**Final answer:** no", "no"), ("Yes, a hot dog fits the definition.", "yes"),
    ("No. A sandwich needs two slices.", "no"), ("The answer is no because the bread is one piece.", "no"),
    ("No matter how you slice it, it is a taco.", None),  # "No matter" is not a verdict
    ("Final answer: yes or no", None),  # the placeholder copied: no verdict
    ("I think it depends.", None),
])
def test_yesno_reads_the_verdict(reply, read):
    assert extract_answer(reply, Task("yesno", "Is a hot dog a sandwich?")).value == read


def test_yesno_vote_consensus_and_score():
    answers = [a("yes"), a("no"), a("yes"), UNPARSED]
    assert consensus_ratio(answers, "yesno") == 0.5 and plurality_vote(answers, "yesno").value == "yes"
    assert is_correct(a("yes"), Task("yesno", "q", gold="Yes")) is True
    assert is_correct(a("no"), Task("yesno", "q", gold="yes")) is False
    with pytest.raises(ValueError, match="not yes or no"):
        task_from_input("Is a hot dog a sandwich?", None, "maybe")


# --- short: spelling ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, normal", [
    ("The Canberra.", "canberra"), ("an apple", "apple"), ("Zürich!", "zurich"), ("twenty-one", "21"),
    ("Nineteen sixty-nine", "1969"), ("two hundred and five", "205"), ("1,000 km", "1000 km"), ("3.5", "3.5"),
])
def test_short_normalisation(text, normal):
    assert normalise(text) == normal


def test_short_extraction_keeps_the_answer_not_the_restated_question():
    task = Task("short", "What is the capital of Australia?")
    read = [extract_answer(r, task).value for r in (
        "Canberra was chosen as a compromise.\nFinal answer: The capital of Australia is Canberra.",
        "**Answer:** Canberra", "Canberra", "It is Sydney, I believe, or Melbourne, or maybe Perth in the west",
        "Final answer: answer", "Final answer: Canberra is a capital of Australia.",
        "Final answer: just one example of how you can provide a final answer, but it is also another example")]
    # a placeholder, a reply with no answer line, and a sentence of more than ten words are no short answer
    assert read == ["Canberra", "Canberra", "Canberra", None, None, "Canberra", None]


# --- short: the rules (meaning only keeps a pair undecided) ----------------------------------------------

@pytest.mark.parametrize("x, y, same, how", [
    ("The Canberra", "canberra", True, "same after normalising"),
    ("It fell in November 1989.", "1989", True, "the same number"),
    ("8 legs", "eight", True, "the same number"),
    ("AU (from the Latin aurum)", "Au", True, "the same once asides, contrasts and plurals are set apart"),
    ("Saturn is large, but Jupiter is larger.", "Jupiter", True, "one answer holds the other, with no name around it"),
    ("the capital city Canberra", "Canberra", True, "one answer holds the other, with no name around it"),
    ("H (hydrogen)", "hydrogen", True, "the same as the other answer's aside in brackets"),
    ("J. K. Rowling", "JK Rowling", True, "same after normalising"),
    ("July 20, 1969", "1969", True, "the same number"),  # a day beside its month is no other number
    ("USA", "United States of America", True, "initials of the other answer"),
    ("Sydney, not Canberra", "Canberra", False, "one answer rules the other out (“not …”)"),
    ("Sydney, not Canberra", "Sydney", True, "the same once asides, contrasts and plurals are set apart"),
    ("Rome, Italy", "Rome", True, "the same once asides, contrasts and plurals are set apart"),  # a place after a comma
    ("1969", "1970", False, "different numbers"),
    ("Atletico Madrid", "Real Madrid", False, "different names that share a word"),
    ("George H. W. Bush", "George W. Bush", False, "different initials"),
    ("John Adams", "John Quincy Adams", None, "one name inside another"),
    ("Real Madrid", "Madrid", None, "one answer inside a longer name"),
    ("Jupiter", "Jupiter's moon Io", None, "one answer inside a longer name"),  # a possessive after it
    ("O", "O negative", None, "one answer inside a longer name"),  # one letter is too short to find inside
    ("Tchaikovsky", "Tchaikowsky", None, "spelled alike"),
    ("Canberra", "Sydney", False, "different words"),  # cosine 0.70, under DIFFERENT_BELOW
    ("CO2", "carbon dioxide", None, "different words, similar meaning"),  # cosine 0.85
])
def test_short_rules_decide_the_clear_cases_and_leave_the_rest_undecided(meaning, x, y, same, how):
    cos = {"Canberra|Sydney": 0.70, "CO2|carbon dioxide": 0.85}
    meaning({x: 0, y: degrees(cos.get(f"{x}|{y}", 0.2))} if x != y else {x: 0})
    short = KINDS["short"]
    assert short.rule(x, y) == short.rule(y, x) == Ruling(same, how)  # symmetric
    assert short.agrees(a(x), a(y)) is (same is True)  # undecided is not agreement


def test_short_answers_are_scored_against_every_alias_and_undecided_is_neither(meaning):
    meaning({"Canberra": 0, "Canberra, ACT": 0, "Sydney": degrees(0.70), "John Adams": 0, "J. Q. Adams": 0,
             "John Quincy Adams": 0})
    task = Task("short", "What is the capital of Australia?", gold="Canberra | Canberra, ACT")
    assert [is_correct(a(v), task) for v in ("canberra", "It is Canberra.", "Sydney", "Sydney, not Canberra")] == [
        True, True, False, False]
    assert is_correct(UNPARSED, task) is False and is_correct(a("Canberra"), Task("short", "q")) is None
    adams = Task("short", "Who was the sixth president?", gold="John Quincy Adams|J. Q. Adams")
    assert is_correct(a("J. Q. Adams"), adams) is True  # an alias
    assert is_correct(a("John Adams"), adams) is None  # undecided without a judge: neither right nor wrong
    assert KINDS["short"].grade(a("John Adams"), adams).how == "undecided: no judge (one name inside another)"
    judged = (Judged("John Adams", "John Quincy Adams", False, "judge: INCORRECT", "scripted"),)
    assert is_correct(a("John Adams"), adams, judged) is False


def test_open_groups_only_the_same_wording_without_a_judge_and_by_its_verdicts_with_one():
    go, rust, go2 = "Learn Go first", "Learn Rust first", "Start with Go; it is simpler"
    kind = KINDS["open"]
    answers = [a(rust), a(go), a(go2), a("I think, learn Go first!"), UNPARSED]
    assert kind.groups(answers) == [0, 1, 2, 1, None]  # only the same wording ("I think" aside) groups
    judged = (Judged(*sorted((go, go2)), True, "judge: CORRECT both ways", "scripted"),)
    assert kind.groups(answers, judged) == [0, 1, 1, 1, None]
    assert consensus_ratio(answers, "open", judged) == pytest.approx(3 / 5)
    assert plurality_vote(answers, "open", judged).value == go  # the larger group's leader
    assert plurality_vote([a(rust), a(go), UNPARSED], "open").value == rust  # 1-1: the earliest agent's group
    assert plurality_vote([UNPARSED, UNPARSED], "open") is UNPARSED
    turns = [AgentTurn(i, 2, "p", (), "", x) for i, x in enumerate(answers)]
    result = outcome(turns, Task("open", "Should I learn Rust or Go first?"), judged)
    assert result.holders == (1, 2, 3) and result.dissent == (((0,), a(rust)),) and result.consensus == 0.6
    assert is_correct(a(go), Task("open", "q", gold="Go")) is None  # a judge scores open answers


def test_open_takes_the_last_line_without_an_answer_line_and_no_placeholder():
    task = Task("open", "Should I learn Rust or Go first?")
    read = [extract_answer(r, task) for r in (
        "Go is simpler.\nRust is safer.\nFinal answer: Learn Go first, then Rust.",
        "Both are good languages.\nI would start with Go.", "Thinking...\nFinal answer: None", "",
        'Final answer: The answer is "Final answer:', "In short, the answer is helpful to you",
        "Go is simpler. This is a great example of how to use the example of a difficult decision to",  # cut
        "Final answer: I don't know.")]
    assert [(x.value, x.how) for x in read] == [
        ("Learn Go first, then Rust", "answer_colon"), ("I would start with Go", "last_sentence"),
        (None, "unparsed"), (None, "unparsed"),
        (None, "unparsed"),  # the instruction copied
        (None, "unparsed"),  # prose, no position and no sentence end
        (None, "unparsed"),  # a reply cut mid-sentence never came to its position
        (None, "unparsed")]  # a refusal is no position


def test_undecided_answers_are_never_unanimous_so_the_loop_never_stops_early_on_them(meaning):
    meaning({"Canberra": 0, "The capital is Canberra": 0, "Real Madrid": 0, "Madrid": 0, "John Adams": 0,
             "John Quincy Adams": 0})
    assert is_unanimous([a("Canberra"), a("The capital is Canberra")], "short")
    assert not is_unanimous([a("Real Madrid"), a("Madrid")], "short")  # undecided: a name beside it
    assert not is_unanimous([a("John Adams"), a("John Quincy Adams")], "short")


# --- guessing the kind -------------------------------------------------------------------------------

@pytest.mark.parametrize("question, kind", [
    ("Is a hot dog a sandwich?", "yesno"), ("Can penguins fly?", "yesno"),
    ("What is the capital of Australia?", "short"), ("Who wrote Hamlet?", "short"),
    ("In what year did Apollo 11 land?", "short"),
    ("Should I learn Rust or Go first?", "open"), ("Is it better to rent or buy?", "open"),
    ("Why is the sky blue?", "open"), ("What is the best programming language?", "open"),
    ("What is 12 + 30?", "math"), ("How many primes are below 20?", "math"), ("Solve x^2 = 4.", "math"),
    ("What is 17 times 23?", "math"), ("What is the square root of 144?", "math"),
    ("Convert 100 °F to Celsius", "math"), ("How many moons does Mars have?", "short"),  # recalled, not computed
    ("A train leaves at 60 mph and travels for 2.5 hours. How far does it go?", "math"),
    ("Will buys 15 oranges and eats 3. How many are left?", "math"),  # a name, not "will"
    ("Can you tell me the capital of Peru?", "short"), ("Should I tip at a buffet?", "yesno"),
    ("Which is a mammal? (A) shark (B) dolphin", "mcq"),
])
def test_guess_kind(question, kind):
    assert guess_kind(question) == kind


def test_a_typed_question_takes_the_guess_or_the_picked_kind_and_says_what_does_not_fit():
    assert task_from_input("Which is larger?", {"A": "1", "B": "2"}, None).kind == "mcq"
    assert task_from_input("Is a hot dog a sandwich?", None, None).kind == "yesno"
    assert task_from_input("Is a hot dog a sandwich?", None, None, kind="open").kind == "open"
    picked, guessed = (task_from_input("Is a hot dog a sandwich?", None, None, kind=k) for k in ("open", None))
    assert picked.id != guessed.id  # another kind is another task
    with pytest.raises(ValueError, match="needs its options"):
        task_from_input("Which is larger?", None, None, kind="mcq")
    with pytest.raises(ValueError, match="Options were given, but the answer kind is short answer"):
        task_from_input("Which is larger?", {"A": "1", "B": "2"}, None, kind="short")


# --- the loop asks the kind --------------------------------------------------------------------------

def test_a_debate_on_an_open_question_ends_with_the_largest_group_a_judge_found_and_names_the_dissent():
    said = ["Final answer: Learn Go first.", "Final answer: Learn Rust first.",
            "Final answer: Go first, it is simpler."]

    def reply(messages):
        return said[_personas().index(messages[0].content)]

    def grade(messages):  # the judge: the two Go positions entail each other, nothing else does
        pair = messages[-1].content.split("Reference answer:")[1].split("Grade the candidate")[0]
        return "CORRECT" if "Rust" not in pair else "INCORRECT"

    settings = DebateSettings(agents=3, rounds=2, early_stop=False)
    judge = Judge(ScriptedBackend(grade, name="judge"))
    t = asyncio.run(Debate(ScriptedBackend(reply), make_method("mad", settings),
                           judge=judge).run(Task("open", "Should I learn Rust or Go first?")))
    assert t.final.value == "Learn Go first" and t.rounds[-1].consensus == pytest.approx(2 / 3)
    assert t.notices[-1] == "Dissent: agent 2 holds 'Learn Rust first'."
    assert agreement_line(t) == ("2 of 3 agents hold the final answer (0.67); dissent: agent 2 holds "
                                 "'Learn Rust first'")
    assert {(j.a, j.b, j.same) for j in t.judged} == {
        ("Go first, it is simpler", "Learn Go first", True), ("Go first, it is simpler", "Learn Rust first", False),
        ("Learn Go first", "Learn Rust first", False)}
    assert len(judge.backend.calls) == 6  # three pairs, both ways, once for both rounds


def _personas():
    from r2mad.prompts.common import persona
    return [persona("open", i, 3)[1] for i in range(3)]


@pytest.mark.parametrize("question, stem, options", [
    ("Which is a mammal? (A) shark (B) dolphin (C) trout", "Which is a mammal?",
     (("A", "shark"), ("B", "dolphin"), ("C", "trout"))),
    ("Which planet is largest?\nA) Mars\nB) Jupiter\nC) Venus", "Which planet is largest?",
     (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"))),
    ("Who wrote it? A. F. Scott Fitzgerald B. Ernest Hemingway C. J. D. Salinger", "Who wrote it?",
     (("A", "F. Scott Fitzgerald"), ("B", "Ernest Hemingway"), ("C", "J. D. Salinger"))),  # initials are no labels
    ("Pick one. Options: a) 1/6 b) 1/8", "Pick one.", (("A", "1/6"), ("B", "1/8"))),
])
def test_options_typed_into_the_question_become_its_options(question, stem, options):
    task = task_from_input(question, None, "B")
    assert (task.kind, task.question, task.options, task.gold) == ("mcq", stem, options, "B")


@pytest.mark.parametrize("question", [
    "What does the A. in Chester A. Arthur stand for?", "In part (a) of the proof, why can we assume n is even?",
    "Explain the difference between (a) mitosis and (b) meiosis.",
    "My son's homework says: 'A. Circle the nouns. B. Underline the verbs.' How do I help him?",
])
def test_a_letter_that_is_no_option_list_stays_in_the_question(question):
    assert task_from_input(question, None, None).kind != "mcq"
