"""Evaluation harnesses against `serve` on loopback, offline, debates on a scripted OpenAI-compatible server:
Inspect AI runs a small multiple-choice and a small math data set written here, and its own log must agree with
our runs: the same scores, the same token counts, every request a saved run. Then the same through lm-eval's
`local-chat-completions` model. Each harness lives in its own virtual environment under var/ (their dependencies
would change this project's pins)."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess

import pytest

from r2mad.grading.answers import is_correct
from r2mad.prompts.common import PERSONAS
from testing.scripted_server import FakeServer, ok
from tests.helpers import SYSTEMS, harness_venv, scripted_config, serve_on_loopback, shared_data

pytestmark = pytest.mark.slow  # two harnesses in their own processes

MCQ = [  # question, options, gold, what agents 1, 2, 3 answer in every round
    ("Which planet is largest?", ["Mars", "Jupiter", "Venus"], "B", "BBB"),
    ("Which gas do plants take in?", ["Oxygen", "Carbon dioxide", "Helium"], "B", "AAA"),
    ("Which metal is liquid at room temperature?", ["Iron", "Mercury", "Copper"], "B", "BCC"),
]
MATH = [  # question, gold, what every agent answers
    ("What is 3 plus 4?", "7", "7"),
    ("What is 6 times 7?", "42", "41"),
    ("What is 10 minus 4?", "6", "6"),
]
SOLUTIONS = shared_data("gsm8k-example-model-solutions.jsonl")  # GSM8K's 1,319 test questions, in ../shared/data
needs_gsm8k = pytest.mark.skipif(SOLUTIONS is None, reason="../shared/data/gsm8k-example-model-solutions.jsonl is "
                                                           "not beside the checkout; set R2MAD_SHARED_DATA")
MATH_SYSTEMS = [text for _, text in PERSONAS["math"]]
# what agents 1, 2, 3 answer on GSM8K test question i (every round); unlisted: all three give the gold answer
GSM8K_SAID = {0: ("$18.00",) * 3,  # right, in dollars and cents
              1: ("4",) * 3, 5: ("65",) * 3, 9: ("461",) * 3, 13: ("19",) * 3, 17: ("57,499",) * 3,  # wrong
              2: ("70,000",) * 3,  # right, with a thousands comma
              3: ("540", "541", "542"),  # split three ways: a tie goes to agent 1, right
              4: ("21", "21", "20")}  # split, the majority wrong


def gsm8k_questions(count: int = 20) -> list[dict]:
    """The first `count` GSM8K test questions with their gold answers as GSM8K writes them (after `####`, no
    comma) and GSM8K's `answer` field (the worked solution, then `#### N`), for lm-eval's task."""
    if SOLUTIONS is None:
        return []
    rows = [json.loads(line) for line in SOLUTIONS.read_text(encoding="utf-8").splitlines()[:count]]
    questions = []
    for row in rows:
        work, _, gold = row["ground_truth"].rpartition("\nA: ")
        gold = gold.replace(",", "")
        questions.append({"question": row["question"], "gold": gold, "answer": f"{work}\n#### {gold}"})
    return questions


GSM8K = gsm8k_questions()
TASKS = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import choice, match
from inspect_ai.solver import generate, multiple_choice, prompt_template

MATH_TEMPLATE = """Solve the problem.

{prompt}

The last line of your response should be of the form "ANSWER: $ANSWER" (without quotes) where $ANSWER is the answer."""


@task
def planets():
    return Task(dataset=[Sample(input=q, choices=o, target=g) for q, o, g, _ in %(mcq)r],
                solver=multiple_choice(), scorer=choice())


@task
def sums():
    return Task(dataset=[Sample(input=q, target=g) for q, g, _ in %(math)r],
                solver=[prompt_template(MATH_TEMPLATE), generate()], scorer=match())
'''
GSM8K_TASK = '''

@task
def gsm8k20():  # as inspect_evals' gsm8k scores: the last number, compared as a number
    return Task(dataset=[Sample(input=q, target=g) for q, g in %r],
                solver=[prompt_template(MATH_TEMPLATE), generate()], scorer=match(numeric=True))
'''
MODEL = "openai-api/debate/mad@fake"


def scripted(body):
    """Each question's scripted answers (see MCQ, MATH and GSM8K_SAID): wrong on some, split on one."""
    text = json.dumps(body["messages"])
    said = "\n".join(str(m.get("content")) for m in body["messages"])
    system = str(body["messages"][0].get("content"))
    agent = next((i for i, persona in enumerate(MATH_SYSTEMS) if system.startswith(persona)), None)
    for i, row in enumerate(GSM8K):
        if row["question"] in said and agent is not None:
            answers = GSM8K_SAID.get(i, (row["gold"],) * 3)
            return ok(f"Step by step the total comes to \\boxed{{{answers[agent]}}}.")
    for question, _, _, letters in MCQ:
        if question in text:
            agent = SYSTEMS.index(body["messages"][0]["content"]) if body["messages"][0]["content"] in SYSTEMS else 0
            return ok(f"Thinking it over. (({letters[agent]}))")
    for question, _, said in MATH:
        if question in text:
            return ok(f"Working it out gives \\boxed{{{said}}}.")
    return ok("Two positions remain.")  # a summary or a judge


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("harness")
    with FakeServer(responder=scripted) as backbone:
        with serve_on_loopback(scripted_config(backbone.base_url, tmp / "var", rounds=3)) as (url, services):
            yield url, services, tmp


def ours(services, run_id: str, gold: str) -> tuple[bool, int, int]:
    """Our score of a saved run against the data set's gold answer, and the run's tokens in and out."""
    t = services.store.get_run(run_id).transcript
    usage = t.usage()
    return bool(is_correct(t.final, dataclasses.replace(t.task, gold=gold))), usage.tokens_in, usage.tokens_out


@pytest.fixture(scope="module")
def inspect_run(served):
    """One Inspect AI run of every task here (its start-up takes most of the time): its logs by task name, and the
    runs served by the time it ended."""
    url, services, tmp = served
    python = harness_venv("inspect", "inspect-ai==0.3.285", "openai==3.57.0")
    tasks = TASKS % {"mcq": MCQ, "math": MATH}
    (tmp / "tasks.py").write_text(tasks + (GSM8K_TASK % [(q["question"], q["gold"]) for q in GSM8K] if GSM8K else ""))
    env = {**os.environ, "DEBATE_BASE_URL": url, "DEBATE_API_KEY": "unused-on-loopback", "INSPECT_LOG_DIR": "",
           "INSPECT_DISPLAY": "none", "HOME": str(tmp)}
    done = subprocess.run([str(python), "-m", "inspect_ai", "eval", "tasks.py", "--model", MODEL,
                           "--log-dir", str(tmp / "logs"), "--log-format", "json", "--max-connections", "8",
                           "--max-retries", "0", "--display", "none"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    logs = {log["eval"]["task"]: log for log in
            (json.loads(path.read_text()) for path in sorted((tmp / "logs").glob("*.json")))}
    assert all(log["status"] == "success" for log in logs.values())
    return logs, [r.id for r in services.store.list_runs(limit=500) if r.source == "serve"]


def run_of(sample: dict) -> str:
    return sample["output"]["response_id"].removeprefix("chatcmpl-")  # our reply's id names the run


def test_inspect_ai_scores_and_usage_equal_our_runs(served, inspect_run):
    _, services, _ = served
    logs, served_runs = inspect_run
    assert {"planets", "sums"} <= set(logs)
    golds = {q: g for q, _, g, _ in MCQ} | {q: g for q, g, _ in MATH}
    for name in ("planets", "sums"):
        log, scorer = logs[name], "choice" if name == "planets" else "match"
        for sample in log["samples"]:
            question = sample["input"]
            correct, tokens_in, tokens_out = ours(services, run_of(sample), golds[question])
            assert question in services.store.get_run(run_of(sample)).transcript.task.question
            assert (sample["scores"][scorer]["value"] == "C") == correct, (name, question)
            usage = sample["model_usage"][MODEL]
            assert (usage["input_tokens"], usage["output_tokens"]) == (tokens_in, tokens_out) != (0, 0)
        accuracy = log["results"]["scores"][0]["metrics"]["accuracy"]["value"]
        assert accuracy == pytest.approx(2 / 3 if name == "sums" else 1 / 3)
    seen = [run_of(sample) for log in logs.values() for sample in log["samples"]]
    assert sorted(seen) == sorted(served_runs)  # every request is a saved run, and no other
    assert len(seen) == 6 + len(GSM8K)


@needs_gsm8k
def test_inspect_ai_scores_20_gsm8k_test_questions_as_our_runs_do(served, inspect_run):
    _, services, _ = served
    log = inspect_run[0]["gsm8k20"]
    golds = {row["question"]: row["gold"] for row in GSM8K}
    scored = {}  # question: Inspect's score and our verdict on the same saved run
    for sample in log["samples"]:
        assert sample["input"] in services.store.get_run(run_of(sample)).transcript.task.question
        scored[sample["input"]] = (sample["scores"]["match"]["value"] == "C",
                                   ours(services, run_of(sample), golds[sample["input"]])[0])
    assert len(scored) == 20 and [q for q, (theirs, our) in scored.items() if theirs != our] == []
    # 5 scripted wrong and one split whose majority is wrong; a three-way tie goes to agent 1 (540, the gold)
    assert sum(theirs for theirs, _ in scored.values()) == 14


LM_EVAL_TASK = """task: tiny_sums
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}\\n\\nGive the final answer on the last line as \\"ANSWER: $ANSWER\\"."
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: []
  max_gen_toks: 64
filter_list:
  - name: extract
    filter:
      - function: regex
        regex_pattern: "ANSWER: (\\\\S+)"
      - function: take_first
metric_list:
  - metric: exact_match
"""


# lm-eval's own evaluator, as `lm_eval run --model local-chat-completions --apply_chat_template --log_samples`
# does, but given only the tasks of this folder: indexing lm-eval's thousands of tasks takes half a minute
LM_EVAL_RUN = """
import json, sys
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
folder, model_args, tasks, out = sys.argv[1:]
done = simple_evaluate(model="local-chat-completions", model_args=model_args, tasks=tasks.split(","),
                       task_manager=TaskManager(include_path=folder, include_defaults=False),
                       apply_chat_template=True, log_samples=True)
json.dump({"results": done["results"], "samples": done["samples"]}, open(out, "w"), default=str)
"""


@pytest.fixture(scope="module")
def lm_eval_run(served):
    """One lm-eval run (local-chat-completions) of tiny_sums and of lm-eval's own gsm8k_cot_zeroshot (its prompt,
    filters and metric) with only its data read from a local file of the same 20 GSM8K questions: its results and
    logged samples, and the runs it saved."""
    url, services, tmp = served
    python = harness_venv("lmeval", "lm-eval[api]==0.4.13")
    folder = tmp / "lm-eval"
    folder.mkdir()
    (folder / "sums.jsonl").write_text("".join(json.dumps({"question": q, "answer": g}) + "\n" for q, g, _ in MATH))
    (folder / "tiny_sums.yaml").write_text(LM_EVAL_TASK.format(data=folder / "sums.jsonl"))
    tasks = ["tiny_sums"]
    if GSM8K:
        [cot] = python.parent.parent.glob("lib/python*/site-packages/lm_eval/tasks/gsm8k/gsm8k-cot-zeroshot.yaml")
        data = folder / "gsm8k20.jsonl"
        data.write_text("".join(json.dumps({k: row[k] for k in ("question", "answer")}) + "\n" for row in GSM8K))
        (folder / "gsm8k20.yaml").write_text(
            f"include: {cot}\ntask: gsm8k20_cot_zeroshot\ntag: []\ndataset_path: json\ndataset_name: null\n"
            f"dataset_kwargs:\n  data_files:\n    test: {data}\ntraining_split: null\nfewshot_split: null\n")
        tasks.append("gsm8k20_cot_zeroshot")
    before = {r.id for r in services.store.list_runs(limit=500)}
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HOME": str(tmp)}
    args = f"model=mad@fake,base_url={url}/chat/completions,num_concurrent=8,max_retries=1"
    done = subprocess.run([str(python), "-c", LM_EVAL_RUN, str(folder), args, ",".join(tasks),
                           str(folder / "out.json")], capture_output=True, text=True, timeout=600, env=env, cwd=tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads((folder / "out.json").read_text())
    return out, [r for r in services.store.list_runs(limit=500) if r.id not in before]


def test_lm_eval_local_chat_completions_scores_equal_our_runs(served, lm_eval_run):
    _, services, _ = served
    out, new = lm_eval_run
    rows = out["samples"]["tiny_sums"]
    assert len(rows) == len(MATH) and len(new) == len(MATH) + len(GSM8K)  # every request a saved run
    for row in rows:
        question = row["doc"]["question"]
        [run] = [r for r in new if question in r.question]
        correct, _, _ = ours(services, run.id, row["doc"]["answer"])
        assert row["exact_match"] == (1.0 if correct else 0.0), question
    assert out["results"]["tiny_sums"]["exact_match,extract"] == pytest.approx(2 / 3)


@needs_gsm8k
def test_lm_eval_gsm8k_cot_zeroshot_scores_20_gsm8k_test_questions_as_our_runs_do(served, lm_eval_run):
    _, services, _ = served
    out, new = lm_eval_run
    golds = {row["question"]: row["gold"] for row in GSM8K}
    scored = {}  # (filter, question): lm-eval's exact match and our verdict on the same saved run
    for row in out["samples"]["gsm8k20_cot_zeroshot"]:
        question = row["doc"]["question"]
        [run] = [r for r in new if question in r.question]
        scored[row["filter"], question] = (row["exact_match"], float(ours(services, run.id, golds[question])[0]))
    assert len(scored) == 40  # both of the task's filters, strict-match and flexible-extract, on every question
    assert [key for key, (theirs, our) in scored.items() if theirs != our] == []
    figures = out["results"]["gsm8k20_cot_zeroshot"]
    assert figures["exact_match,strict-match"] == figures["exact_match,flexible-extract"] == 14 / 20
