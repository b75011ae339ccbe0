"""One leak check for every entry point that runs a question with a bank (issue 29): a bank holding the
question, by id or by its normalised text (a typed question), is refused in one sentence naming the fix;
eval's split check uses the same rule."""
import pytest

from r2mad.backends.embedder import HashEmbedder
from r2mad.evaluation.datasets import Split
from r2mad.evaluation.leakage import check_no_leakage, check_question_not_in_bank, held_tasks
from r2mad.grading.tasks import task_from_input
from r2mad.memory.bank import MemoryBank
from r2mad.settings.config import ConfigError
from r2mad.types import Task
from tests import helpers
from tests.helpers import OPTIONS, PLANET_TASKS, bank_case

bank = helpers.bank  # the fixture: a bank built from PLANET_TASKS (ids q0 to q3)


def refusal(held, task) -> str:
    with pytest.raises(ConfigError) as caught:
        check_question_not_in_bank(held, task)
    return str(caught.value)


def test_a_question_the_bank_holds_by_id_is_refused_in_one_sentence(bank):
    text = refusal(bank, PLANET_TASKS[2])  # a fork of a row whose question built the bank
    assert text == (f"Bank {bank.path.name} holds question q2, so its cases would show the debaters the answer; "
                    "choose a bank built without this question (another split or split seed), or run without "
                    "a bank.")
    assert text.count(". ") == 0


def test_a_typed_question_is_matched_by_its_normalised_text_whatever_its_options(bank):
    typed = task_from_input("  question NUMBER 1:\n which planet   is largest? ", {"A": "Saturn", "B": "Jupiter"},
                            None)
    assert typed.id.startswith("input-") and typed.id not in bank.question_ids
    assert "holds this question's text" in refusal(bank, typed)


@pytest.mark.parametrize("task", [
    Task("mcq", "Question number 7: which planet is largest?", OPTIONS, "B", "q7"),
    Task("mcq", "Which planet is largest?", OPTIONS, "B", "other"),  # a shorter question is another one
    task_from_input("Question number 1: which planet is smallest?", {"A": "Mercury", "B": "Mars"}, None),
])
def test_questions_the_bank_does_not_hold_pass(bank, task):
    check_question_not_in_bank(bank, task)
    assert held_tasks(bank, [task]) == []


def test_math_cases_are_matched_by_their_whole_text(tmp_path):
    maths = MemoryBank.create(tmp_path / "math", task_kind="math", split="train", backbone="x",
                             embedder=HashEmbedder(64), code_version="t", index_root=tmp_path / "index")
    maths.add([bank_case("m1", text="What is 2 + 3?\n(A) is not an option here")])
    assert "this question's text" in refusal(maths, task_from_input("what is 2 + 3?\n(a) IS not an option here",
                                                                   None, None))
    check_question_not_in_bank(maths, task_from_input("What is 2 - 3?\n(A) is not an option here", None, None))
    maths.close()


def test_eval_refuses_a_split_question_the_bank_holds_under_another_id(bank):
    copy = Task("mcq", PLANET_TASKS[3].question.upper(), OPTIONS, "B", "renamed-3")
    with pytest.raises(ConfigError, match=r"holds 1 of the 2 demo test questions of split seed 0 \(e\.g\. renamed-3"):
        check_no_leakage(bank, Split("test", "demo", (Task("mcq", "Fresh?", OPTIONS, "B", "n1"), copy), 0,
                                     ("n1", "renamed-3")))


def test_a_reworded_training_question_sees_none_of_its_own_cases():
    """The probe: "When you mix blue and yellow paint, what colour do you get" retrieved its own memory case
    (similarity 0.999) since the guard matched text only. The shipped bank's questions and the real embedder."""
    from pathlib import Path
    from types import SimpleNamespace

    from r2mad.backends.embedder import load_embedder
    from r2mad.evaluation.leakage import SAME_MEANING, same_meaning
    from r2mad.memory.files import read_cases

    path = Path(__file__).resolve().parents[2] / "memory" / "demo-mcq"
    shipped = SimpleNamespace(path=path, name=path.name, embedder=load_embedder(), cases=lambda: read_cases(
        path / "cases.jsonl", None).cases, question_ids=frozenset(), manifest={})
    options = {"A": "Orange", "B": "Brown", "C": "Purple", "D": "Green"}
    reworded = task_from_input("When you mix blue and yellow paint, what colour do you get", options, None)
    assert held_tasks(shipped, [reworded]) == []  # the text alone does not match
    held, score = same_meaning(shipped, reworded)
    assert held == "What colour do you get when you mix blue and yellow paint?" and score >= SAME_MEANING
    assert "holds a question that means the same as this one ('What colour do you get when you mix blue and " \
           "yellow paint?', similarity 0.9" in refusal(shipped, reworded)
    for other in ("What colour do you get when you mix red and yellow paint?",  # 0.91: another question
                  "In which year did the Berlin Wall fall?"):
        check_question_not_in_bank(shipped, task_from_input(other, options, None))
