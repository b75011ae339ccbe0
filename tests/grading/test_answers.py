"""Answer extraction, equivalence, consensus and voting, with hand-computed expectations."""
import pytest

from r2mad.grading.answers import (
    consensus_ratio,
    extract_answer,
    extract_choice,
    extract_math,
    is_correct,
    is_unanimous,
    plurality_vote,
    same_answer,
    strip_think,
)
from r2mad.grading.mathcheck import math_equivalent, normalize_math
from r2mad.types import OPTION_LETTERS, UNPARSED, Answer, Task

TEN = OPTION_LETTERS


@pytest.mark.parametrize("text, value, how", [
    (r"So the result is \boxed{\frac{1}{2}}.", r"\frac{1}{2}", "boxed"),
    (r"First \boxed{3}, then on reflection \boxed{4}.", "4", "boxed"),
    (r"I got \boxed{7} but wrote \boxed{} at the end", "7", "boxed"),
    (r"The set is \boxed{\{1,2\}}", r"\{1,2\}", "boxed"),
    (r"\boxed{x^{2}+1}", "x^{2}+1", "boxed"),
    (r"\fbox{12}", "12", "boxed"),
    (r"hence \boxed 5.", "5", "boxed"),
    ("Adding them up, the final answer is 42.", "42", "answer_is"),
    ("The answer is $\\frac{3}{4}$. I hope it is correct.", r"\frac{3}{4}", "answer_is"),
    ("the answer is 12 cm because the sides match", "12", "answer_is"),
    ("I am not sure what the answer is yet.", None, "unparsed"),
    (r"\boxed{}", None, "unparsed"),
    (r"unfinished \boxed{3", None, "unparsed"),
    ("no answer here at all", None, "unparsed"),
])
def test_extract_math(text, value, how):
    assert extract_math(text) == Answer(value, how)


@pytest.mark.parametrize("text, letters, value, how", [
    ("I think ((B))", "ABCD", "B", "double_paren"),
    ("I believe ((B)) but ((D)) is final", "ABCD", "D", "double_paren"),
    ("I think the answer is right, I am sure.", TEN, None, "unparsed"),
    ("I would say I is plausible and A is too.", TEN, None, "unparsed"),
    ("（（Ｂ））", "ABCD", "B", "double_paren"),
    ("so ((b))", "ABCD", "B", "double_paren"),
    ("The answer is (C).", "ABCD", "C", "answer_is"),
    ("The correct answer is D", "ABCD", "D", "answer_is"),
    ("The answer is: b.", "ABCD", "B", "answer_is"),
    ("The answer is B because the rest are wrong", "ABCD", "B", "answer_is"),
    ("the answer is I think B", TEN, None, "unparsed"),
    ("the answer is Paris", "ABCD", None, "unparsed"),
    ("Reasoning...\nAnswer: D", "ABCD", "D", "answer_colon"),
    ("**Final answer:** (A)", "ABCD", "A", "answer_colon"),
    ("Answer: I think it is hard", TEN, None, "unparsed"),
    ("The answer is ((X)).", "ABCD", None, "unparsed"),
    ("The answer is (X).", "ABCD", None, "unparsed"),
    ("((E))", "ABCD", None, "unparsed"),
    ("((E))", TEN, "E", "double_paren"),
    ("Answer: C but I prefer ((A))", "ABCD", "A", "double_paren"),
    ("nothing to see", "ABCD", None, "unparsed"),
])
def test_extract_choice(text, letters, value, how):
    assert extract_choice(text, letters) == Answer(value, how)


@pytest.mark.parametrize("text, expected", [
    ("<think>((A))</think> ((B))", "((B))"),
    ("reasoning with no opening tag ((A))</think>((C))", "((C))"),
    ("((D)) <think>never closed ((A))", "((D))"),
    ("plain ((B))", "plain ((B))"),
])
def test_strip_think(text, expected):
    assert strip_think(text) == expected


def test_extract_answer_uses_task_kind_and_options():
    mcq = Task("mcq", "q?", options=(("A", "x"), ("B", "y"), ("C", "z")), gold="B")
    assert extract_answer("<think>((A))</think> ((B))", mcq) == Answer("B", "double_paren")
    assert extract_answer("((D))", mcq) == UNPARSED  # D is not one of this task's options
    math_task = Task("math", "1/2?", gold="0.5")
    assert extract_answer(r"<think>\boxed{9}</think> \boxed{\frac12}", math_task) == Answer(r"\frac12", "boxed")


@pytest.mark.parametrize("raw, normal", [
    (r"$\dfrac{1}{2}$", r"\frac{1}{2}"),
    (r"\frac12", r"\frac{1}{2}"),
    (r"5\text{ cm}", "5"),
    (r"x = 5", "5"),
    ("1,000", "1000"),
    ("1,2", "1,2"),
    (r"90^\circ", "90"),
    (r"50\%", "50"),
    (r"\left( 1, 2 \right)", "(1,2)"),
    ("7.", "7"),
])
def test_normalize_math(raw, normal):
    assert normalize_math(raw) == normal


@pytest.mark.parametrize("a, b, equal", [
    ("0.5", r"\frac12", True),
    ("2", "2.0", True),
    (r"5\text{ cm}", "5", True),
    ("1,000", "1000", True),
    (r"\frac{\sqrt{3}}{2}", r"\sqrt{3}/2", True),
    ("x+1", "1+x", True),
    (r"2\pi", r"\pi \cdot 2", True),
    (r"\sqrt{8}", r"2\sqrt{2}", True),
    ("(x+1)^2", "x^2+2x+1", True),
    ("-\\frac{1}{3}", "-1/3", True),
    ("3", "4", False),
    ("x+1", "x+2", False),
    (r"\frac{1}{3}", "0.33", False),  # two significant digits: not 1/3
    (r"\frac{1}{3}", "0.333", True),  # the one tolerance: 1/3 rounded to the decimals written
    (r"\frac{2}{3}", "0.667", True), (r"\frac{2}{3}", "0.666", True),  # rounded, or cut
    (r"\frac{2}{3}", "0.668", False), ("0.333", "0.3333", False),  # terminating decimals: exactly
    ("1000000", "999999", False), (r"\boxed{1000000}", "999999", False),  # no relative tolerance
    ("1.50", r"\frac{3}{2}", True),
    ("Evelyn", "Evelny", False),
    ("9^{9^{9}}", "1", False),  # refused quickly rather than evaluated
    ("__import__('os')", "0", False),
    ("", "", False),
])
def test_math_equivalent(a, b, equal):
    assert math_equivalent(a, b) is equal
    assert math_equivalent(b, a) is equal


@pytest.mark.parametrize("a, b, kind, same", [
    (Answer("B", "double_paren"), Answer("b", "answer_is"), "mcq", True),
    (Answer("B"), Answer("C"), "mcq", False),
    (UNPARSED, UNPARSED, "mcq", False),
    (Answer("0.5"), Answer(r"\frac12"), "math", True),
    (Answer("0.5"), UNPARSED, "math", False),
])
def test_same_answer(a, b, kind, same):
    assert same_answer(a, b, kind) is same


def test_is_correct():
    task = Task("math", "q", gold=r"\frac{1}{2}")
    assert is_correct(Answer("0.5", "boxed"), task) is True
    assert is_correct(Answer("0.6", "boxed"), task) is False
    assert is_correct(UNPARSED, task) is False
    assert is_correct(Answer("0.5", "boxed"), Task("math", "q")) is None


A, B, C = Answer("A", "double_paren"), Answer("B", "double_paren"), Answer("C", "double_paren")


@pytest.mark.parametrize("answers, kind, ratio", [
    ([A, A, UNPARSED], "mcq", 2 / 3),
    ([UNPARSED, UNPARSED, UNPARSED], "mcq", 0.0),
    # unparsed answers agree with nothing (DESIGN; Eq. 5 with y over answers): 1/3, where the authors'
    # code groups them (2/3), a departure listed in methods/departures.py
    ([A, UNPARSED, UNPARSED], "mcq", 1 / 3),
    ([A, B, C], "mcq", 1 / 3),
    ([A, A, A], "mcq", 1.0),
    ([], "mcq", 0.0),
    ([Answer("0.5"), Answer(r"\frac12"), Answer("3")], "math", 2 / 3),
])
def test_consensus_ratio(answers, kind, ratio):
    assert consensus_ratio(answers, kind) == pytest.approx(ratio)


@pytest.mark.parametrize("answers, kind, winner", [
    ([B, A, A], "mcq", A),
    ([B, A, C], "mcq", B),  # three-way tie: earliest agent
    ([C, A, A, C], "mcq", C),  # two-way tie: C is held by agent 0
    ([UNPARSED, UNPARSED, A], "mcq", A),  # UNPARSED never wins, even when most frequent
    ([UNPARSED, UNPARSED, UNPARSED], "mcq", UNPARSED),
    ([], "mcq", UNPARSED),
    ([Answer("3", "boxed"), Answer("0.5", "answer_is"), Answer(r"\frac12", "boxed")], "math",
     Answer("0.5", "answer_is")),  # earliest holder's own Answer object
])
def test_plurality_vote(answers, kind, winner):
    assert plurality_vote(answers, kind) == winner


@pytest.mark.parametrize("answers, unanimous", [
    ([A, A, A], True),
    ([A, A, B], False),
    ([A, A, UNPARSED], False),
    ([UNPARSED, UNPARSED], False),
    ([], False),
])
def test_is_unanimous(answers, unanimous):
    assert is_unanimous(answers, "mcq") is unanimous


OPTS = (("A", "Green"), ("B", "Brown"), ("C", "Purple"), ("D", "Grey"))


@pytest.mark.parametrize("text, expected", [
    ("(C) Purple", "C"),  # a reply that cites one option whole
    ("**D) Grey**", "D"),
    ("A) Toronto.", None),  # label with another text: not an option citation
    ("(E) Grey", None),  # a letter that is not an option
    ("Options:\nA) Green\nB) Brown\nC) Purple\nD) Grey", None),  # a recited list commits to nothing
    # the options recited with their texts reworded, the last one verbatim: still a recited list
    ("(A) Green is a calm colour\n(B) Brown, like wood\n(C) Purple maybe\n(D) Grey", None),
    ("A: it could be green\nD) Grey", None),
    ("I think (B) Brown is wrong", None),  # prose
])
def test_option_line_citation(text, expected):
    answer = extract_answer(text, Task("mcq", "Which colour?", OPTS, "D"))
    assert answer.value == expected and (expected is None or answer.how == "option_line")


@pytest.mark.parametrize("a, b, equal", [
    ("3r^2", "3R^2", False),  # math-verify alone folds the case of every symbol (issue 29)
    ("x", "X", False),
    (r"\pi r^2", r"\pi R^2", False),
    ("(A, B)", "(a, b)", False),
    (r"\frac{x}{2}", "0.5X", False),
    ("x + X", "2x", False),
    (r"\Delta", r"\delta", False),
    ("3r^2", r"r^2 \cdot 3", True),  # the same case: still compared as math
    (r"\frac{x}{2}", "0.5x", True),
    ("R = 5", "r = 5", True),  # only the value is the answer
    (r"\begin{Bmatrix} 1 \end{Bmatrix}", r"\begin{Bmatrix} 1 \end{Bmatrix}", True),
    ("Yes", "yes", True),  # plain words fold case
    (r"\text{Yes}", "yes", True),
    ("No", "no", True),
    ("Evelyn", "EVELYN", True),
    ("12", "12.0", True),
    ("xy", "yx", True),  # two letters: a word when they match case folded, else still a product
    ("Evelyn", "Evelny", False),
])
def test_math_letters_are_case_sensitive_unless_plain_words(a, b, equal):
    assert math_equivalent(a, b) is equal
    assert math_equivalent(b, a) is equal


@pytest.mark.parametrize("text, task, whole, cut", [
    ("So I multiplied 321 by 23 and got", Task("math", "What is 17 times 23?"), "23", None),  # only the server knows
    ("17 times 23 is 391. Then I multiplied by 23", Task("math", "What is 17 times 23?"), "23", None),
    ("The answer is 391. Then I multiplied by 23", Task("math", "What is 17 times 23?"), "391", "391"),
    ("\\boxed{391} and then", Task("math", "What is 17 times 23?"), "391", "391"),
    ("It is not prime, because 7 divides it", Task("yesno", "Is 91 prime?"), "no", None),
    ("Final answer: yes. Then I", Task("yesno", "Is 91 prime?"), "yes", "yes"),
])
def test_a_reply_cut_at_its_token_limit_concludes_nothing_in_its_closing_words(text, task, whole, cut):
    """A reply the server stopped at max_tokens (finish_reason "length"): explicit commitments count, the last
    number or sentence it happened to reach does not."""
    assert extract_answer(text, task).value == whole and extract_answer(text, task, cut=True).value == cut


@pytest.mark.parametrize("kind", ["math", "integer", "mcq", "yesno", "short", "open"])
@pytest.mark.parametrize("text", ["9" * 100_000, "1 or " * 20_000, "The answer is " * 10_000, "\\boxed{" * 20_000,
                                  "x" * 50_000 + " = " + "1" * 50_000, "Final answer: " + "J. " * 20_000])
def test_hostile_replies_are_read_and_graded_without_an_error(kind, text):
    task = Task(kind, "Which?", (("A", "x"), ("B", "y")) if kind == "mcq" else (),
                {"mcq": "A", "yesno": "no", "integer": "33", "open": None}.get(kind, "42"))
    answer = extract_answer(text, task)
    assert is_correct(answer, task) in (True, False, None)
