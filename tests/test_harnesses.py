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
from testing.scripted_server import FakeServer, ok
from tests.helpers import SYSTEMS, harness_venv, scripted_config, serve_on_loopback

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


def scripted(body):
    """Each question's scripted answers (see MCQ and MATH): wrong on some, split on one."""
    text = json.dumps(body["messages"])
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


def test_inspect_ai_scores_and_usage_equal_our_runs(served):
    url, services, tmp = served
    python = harness_venv("inspect", "inspect-ai==0.3.285", "openai==3.57.0")
    (tmp / "tasks.py").write_text(TASKS % {"mcq": MCQ, "math": MATH})
    model = "openai-api/debate/mad@fake"
    env = {**os.environ, "DEBATE_BASE_URL": url, "DEBATE_API_KEY": "unused-on-loopback", "INSPECT_LOG_DIR": "",
           "INSPECT_DISPLAY": "none", "HOME": str(tmp)}
    done = subprocess.run([str(python), "-m", "inspect_ai", "eval", "tasks.py", "--model", model,
                           "--log-dir", str(tmp / "logs"), "--log-format", "json", "--max-connections", "4",
                           "--max-retries", "0", "--display", "none"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    logs = {log["eval"]["task"]: log for log in
            (json.loads(path.read_text()) for path in sorted((tmp / "logs").glob("*.json")))}
    assert set(logs) == {"planets", "sums"} and all(log["status"] == "success" for log in logs.values())
    seen, golds = [], {q: g for q, _, g, _ in MCQ} | {q: g for q, g, _ in MATH}
    for name, log in logs.items():
        scorer = "choice" if name == "planets" else "match"
        for sample in log["samples"]:
            run_id = sample["output"]["response_id"].removeprefix("chatcmpl-")  # our reply's id names the run
            question = sample["input"]
            correct, tokens_in, tokens_out = ours(services, run_id, golds[question])
            assert question in services.store.get_run(run_id).transcript.task.question
            assert (sample["scores"][scorer]["value"] == "C") == correct, (name, question)
            usage = sample["model_usage"][model]
            assert (usage["input_tokens"], usage["output_tokens"]) == (tokens_in, tokens_out) != (0, 0)
            seen.append(run_id)
        accuracy = log["results"]["scores"][0]["metrics"]["accuracy"]["value"]
        assert accuracy == pytest.approx(2 / 3 if name == "sums" else 1 / 3)
    served_runs = [r.id for r in services.store.list_runs(limit=200) if r.source == "serve"]
    assert sorted(seen) == sorted(served_runs) and len(seen) == 6  # every request is a saved run, and no other


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


def test_lm_eval_local_chat_completions_scores_equal_our_runs(served):
    url, services, tmp = served
    python = harness_venv("lmeval", "lm-eval[api]==0.4.13")
    folder = tmp / "lm-eval"
    folder.mkdir()
    (folder / "sums.jsonl").write_text("".join(json.dumps({"question": q, "answer": g}) + "\n" for q, g, _ in MATH))
    (folder / "tiny_sums.yaml").write_text(LM_EVAL_TASK.format(data=folder / "sums.jsonl"))
    before = {r.id for r in services.store.list_runs(limit=200)}
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HOME": str(tmp)}
    done = subprocess.run([str(python), "-m", "lm_eval", "--model", "local-chat-completions", "--model_args",
                           f"model=mad@fake,base_url={url}/chat/completions,num_concurrent=2,max_retries=1",
                           "--tasks", "tiny_sums", "--include_path", str(folder), "--apply_chat_template",
                           "--output_path", str(folder / "out"), "--log_samples"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    [samples] = list((folder / "out").rglob("samples_tiny_sums_*.jsonl"))
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    new = [r for r in services.store.list_runs(limit=200) if r.id not in before]
    assert len(rows) == len(new) == len(MATH)  # every request a saved run
    for row in rows:
        question = row["doc"]["question"]
        [run] = [r for r in new if question in r.question]
        correct, _, _ = ours(services, run.id, row["doc"]["answer"])
        assert row["exact_match"] == (1.0 if correct else 0.0), question
    [results] = list((folder / "out").rglob("results_*.json"))
    assert json.loads(results.read_text())["results"]["tiny_sums"]["exact_match,extract"] == pytest.approx(2 / 3)
