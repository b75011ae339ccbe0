"""Du et al.'s protocol to the letter (their repository's gen_*/eval_* scripts): their draws of 100 GSM8K and MMLU
questions, reproduced with their own calls (Python's global random after random.seed(0)); their handling of a
question with no parsed answer, by hand; and the eval that applies both under --profile du and says so."""
from __future__ import annotations

import json
import random

from r2mad.cli import main
from r2mad.evaluation.benchmarks.du import authors_correct, gsm8k_draw, mmlu_draw
from r2mad.evaluation.paper_tables import choices_line, plurality_accuracy
from r2mad.grading.answers import plurality_vote
from r2mad.types import AgentTurn, Answer, Round, Task, Transcript

GSM = [Task("math", f"Question {i}: what is {i} + 1?", gold=str(i + 1), id=f"g{i}", source="gsm8k") for i in range(300)]


def test_the_gsm8k_draw_is_the_authors_shuffle_of_the_test_file():
    questions = list(GSM)
    random.seed(0)  # as gen_gsm.py: random.seed(0); random.shuffle(questions); questions[:100]
    random.shuffle(questions)
    assert gsm8k_draw(GSM) == questions[:100] and len({t.id for t in gsm8k_draw(GSM)}) == 100


def test_the_mmlu_draw_is_the_authors_hundred_draws_without_each_files_first_row():
    subjects = {"anatomy": 5, "astronomy": 3, "virology": 4}
    tasks = [Task("mcq", f"{s} q{i}", (("A", "a"), ("B", "b")), "A", f"{s}-{i}", s) for s, n in subjects.items()
             for i in range(n)]
    dfs = [[t for t in tasks if t.source == s][1:] for s in sorted(subjects)]  # pandas took row 0 as the header
    random.seed(0)  # as gen_mmlu.py: 100 x (random.choice(dfs); random.randint(0, len(df) - 1))
    expected = {}
    for _ in range(100):
        df = random.choice(dfs)
        task = df[random.randint(0, len(df) - 1)]
        expected.setdefault(task.id, task)
    drawn = mmlu_draw(tasks)
    assert drawn == list(expected.values())
    assert not {t.id for t in drawn} & {"anatomy-0", "astronomy-0", "virology-0"}  # never a first row
    assert len(drawn) == 9  # 100 draws of 9 drawable questions, each kept once


def debate(task: Task, answers: list[str | None]) -> Transcript:
    turns = tuple(AgentTurn(i, 1, "p", (), "", Answer(v, "boxed") if v else Answer(None))
                  for i, v in enumerate(answers))
    return Transcript(task, "mad", "b", {}, (Round(1, turns, 0.0),), plurality_vote([t.answer for t in turns], task))


def test_a_question_with_no_parsed_answer_as_the_authors_evaluators_score_it():
    gsm, arith = Task("math", "q", gold="18"), Task("math", "q", gold="7")
    mmlu = Task("mcq", "q", (("A", "a"), ("B", "b")), "A")
    assert authors_correct(debate(arith, [None, None, None]), "arithmetic") is None  # dropped
    assert authors_correct(debate(arith, [None, "7", None]), "arithmetic") is True  # the parsed ones voted
    assert authors_correct(debate(gsm, [None, "17", None]), "gsm8k") is True  # the plurality is none: correct
    assert authors_correct(debate(gsm, ["17", None, "17"]), "gsm8k") is False
    assert authors_correct(debate(gsm, ["18", "17", None]), "gsm8k") is True  # a tie: the earliest agent
    assert authors_correct(debate(mmlu, ["B", "B", None]), "mmlu") is True  # the last agent's is none: correct
    assert authors_correct(debate(mmlu, [None, "B", "A"]), "mmlu") is False
    items = [debate(gsm, [None, None, "17"]), debate(gsm, ["18", "18", "17"]), debate(gsm, ["17", "17", "18"])]
    assert plurality_accuracy(items) == [False, True, False]  # ours: no answer is wrong
    assert plurality_accuracy(items, "authors", "gsm8k") == [True, True, False]


def test_an_eval_under_profile_du_draws_the_authors_questions_and_the_report_says_so(config_dir, tmp_path, capsys):
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps({"question": t.question, "answer": f"So #### {t.gold}"}) + "\n" for t in GSM),
                    encoding="utf-8")
    out = tmp_path / "du"
    code = main(["--config-dir", str(config_dir), "eval", "--task", "gsm8k", "--data", str(data), "--profile", "du",
                 "--methods", "cot", "--backbone", "fake", "--limit", "3", "--no-progress", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    run = json.loads((out / "run.json").read_text())
    drawn = [t.question for t in gsm8k_draw(GSM)[:3]]
    asked = [json.loads(line)["transcript"]["task"]["question"] for line in (out / "rows.jsonl").read_text().split("\n")
             if line]
    assert (run["sample"], run["unparsed"]) == ("authors", "authors") and sorted(asked) == sorted(drawn)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert ("- GSM8K: questions: the authors' own draw of 100; a question with no parsed answer: as the authors' "
            "evaluator scores it (dropped from arithmetic, correct in GSM8K and MMLU).") in report
    assert choices_line({"dataset": "gsm8k", "limit": 3}, {}) == ("questions: the first 3 of the split; a question "
                                                                  "with no parsed answer: wrong.")
