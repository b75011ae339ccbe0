"""How `serve` reads a chat request (model names, the question, its options, the answer form asked for) and writes
a finished debate back as a reply, on hand-made prompts and transcripts. Pure functions: no server."""
from __future__ import annotations

import pytest

from r2mad.methods import METHODS
from r2mad.serving.chat_prompt import Asked, answer_line, rationale, read_prompt, reply_content, round_text, task_for
from r2mad.serving.model_names import ModelChoice, model_ids, parse_model
from r2mad.settings.config import ConfigError, load_config
from tests.helpers import grid_debate

INSPECT_MCQ = ("Answer the following multiple choice question. The entire content of your response should be of the "
               "following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of A,B,C,D.\n\n"
               "Which planet is largest?\n\nA) Mars\nB) Jupiter\nC) Venus\nD) Earth")


@pytest.mark.parametrize("text, asked", [
    (INSPECT_MCQ, Asked("Which planet is largest?", (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"),
                                                     ("D", "Earth")), "answer-line")),
    ("Pick one.\n(A) red\n\n(B) blue", Asked("Pick one.", (("A", "red"), ("B", "blue")))),
    ("What is 2 + 2? Put your final answer within \\boxed{}.", Asked("What is 2 + 2?", (), "boxed")),
    ("Solve x + 1 = 3.\nEnd with #### and the number.", Asked("Solve x + 1 = 3.", (), "hashes")),
    ("What is 6 times 7? Reply as ANSWER: $ANSWER", Asked("What is 6 times 7?", (), "answer-line")),
    ("A. lone line that is not an option\nWhat now?", Asked("A. lone line that is not an option\nWhat now?")),
    ("Which?\nA) one\nC) skipped a letter", Asked("Which?\nA) one\nC) skipped a letter")),
])
def test_the_question_its_options_and_the_answer_form(text, asked):
    assert read_prompt(text) == asked


def test_a_kind_is_passed_on_and_checked():
    mcq = read_prompt("Which?\nA) x\nB) y")
    assert task_for(mcq, None, 4000)[0].kind == "mcq"
    assert task_for(Asked("What is 2+2?"), "math", 4000)[0].kind == "math"
    with pytest.raises(ValueError, match="kind is mcq but no options were found"):
        task_for(Asked("What is 2+2?"), "mcq", 4000)
    with pytest.raises(ConfigError, match="Unknown answer kind 'poem'"):
        task_for(Asked("Write one."), "poem", 4000)


def test_model_names():
    config = load_config()
    assert parse_model("r2mad@smollm2-135m?bank=memory/demo-mcq&rounds=2", config) == ModelChoice(
        "r2mad", "smollm2-135m", "memory/demo-mcq", 2)
    assert parse_model("cot", config) == ModelChoice("cot", config.default_backbone)
    assert len(model_ids(config)) == len(METHODS) * len(config.backbones)
    for name, problem in (("mad@x", "Unknown backbone 'x'"), ("bogus@smollm2-135m", "Unknown method 'bogus'"),
                          ("mad?rounds=two", "rounds='two'; give rounds counting round 0"),
                          ("", "The model name is empty")):
        with pytest.raises(ConfigError, match=problem):
            parse_model(name, config)


def test_the_reply_is_the_answer_line_alone_and_the_rationale_is_reasoning():
    t = grid_debate([["A", "B", "B"], ["B", "B", "A"]], texts={(1, 0): "Jupiter is biggest. Answer: ((B))"})
    assert rationale(t) == ("mad on b, 2 rounds: 2 of 3 agents chose B in round 1. "
                            "Agent 1: Jupiter is biggest. answer - B")
    assert reply_content(t, "answer-line") == "ANSWER: B" and reply_content(t, "plain") == "The answer is (B)."
    assert round_text(t.rounds[0]).split("\n") == ["Round 0 (consensus 0.00)", "Agent 1 -> A: r0a0 A",
                                                    "Agent 2 -> B: r0a1 B", "Agent 3 -> B: r0a2 B", "", ""]


@pytest.mark.parametrize("value, kind, form, line", [
    ("$18.00", "math", "plain", "The answer is 18."),  # GSM8K's regex wants a bare number; 18.00 is not 18 there
    ("1,450,000", "math", "hashes", "#### 1450000"),
    ("$1,200.50", "integer", "answer-line", "ANSWER: 1200.5"),
    ("\\frac{1}{2}", "math", "boxed", "The answer is \\boxed{\\frac{1}{2}}."),  # not a plain number: as said
    ("50%", "math", "plain", "The answer is 50%."),
    ("$18.00", "short", "plain", "The answer is $18.00."),  # a short answer is written as the agents wrote it
])
def test_a_math_answer_line_writes_the_number_plain(value, kind, form, line):
    assert answer_line(value, kind, form) == line


@pytest.mark.parametrize("asked, named, default, kind, assumed", [
    (Asked("Natalia sold 48 clips in April and half as many in May. How many in all?"), None, "math", "math", True),
    (Asked("Is the sky blue?"), None, "yesno", "yesno", True),  # `serve --kind yesno`
    (Asked("Which?", (("A", "x"), ("B", "y"))), None, "math", "mcq", False),  # options found
    (Asked("Who wrote Hamlet?"), "short", "math", "short", False),  # named by the body or the model name
])
def test_the_kind_named_wins_then_options_then_the_served_default(asked, named, default, kind, assumed):
    task, changes = task_for(asked, named, 4000, default)
    assert task.kind == kind
    assert changes == ([f"No answer kind was named, so the question was debated as {kind} (the server's default); "
                        "name one with \"kind\" in the body or ?kind= in the model name."] if assumed else [])


def test_options_under_another_named_kind_stay_in_the_question():
    task, _ = task_for(Asked("Which is larger?", (("A", "3"), ("B", "5"))), "math", 4000)
    assert (task.kind, task.question, task.options) == ("math", "Which is larger?\nA) 3\nB) 5", ())
