"""What several test modules share: the repo path, a free port, hand-made tasks and transcripts, scripted
replies and small builders. Plain functions and data (one fixture, `bank`, imported by name where used);
not a test module, and no test module imports another (tests/project/test_imports.py checks)."""
from __future__ import annotations

import asyncio
import dataclasses
import os
import sqlite3
from pathlib import Path

import pytest

from r2mad.bench.children import child, free_port  # noqa: F401  (child: servers that end with the tests)
from r2mad.prompts.common import PERSONAS
from r2mad.settings.config import DebateSettings, load_config
from r2mad.types import UNPARSED, AgentTurn, Answer, AuxCall, Case, Message, Round, Task, Transcript
from tests.scripted import ScriptedBackend, last_user, persona_of

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = [text for _, text in PERSONAS["mcq"]]  # the three multiple-choice personas, agent i's is SYSTEMS[i]


def shared_data(name: str) -> Path | None:
    """A file of ../shared/data (read there, never copied in): under R2MAD_SHARED_DATA, beside the checkout or in
    /work/shared/data; None when it is in none of them (the test that needs it skips)."""
    folders = [Path(os.environ.get("R2MAD_SHARED_DATA", "")), ROOT.parent / "shared" / "data",
               Path("/work/shared/data")]
    return next((folder / name for folder in folders if (folder / name).is_file()), None)


def jsonl_values(path) -> list:
    """Every value of a JSON Lines file, read by the library's reader (r2mad.jsonl)."""
    from r2mad.jsonl import read_jsonl

    with open(path, "rb") as fh:
        return [value for _, value in read_jsonl(fh, path)]


def debate_cli(config_dir, *args):
    """`r2mad debate ...` on a config folder; returns the exit status."""
    from r2mad.cli import main

    return main(["--config-dir", str(config_dir), "debate", *args])


def make_bank(folder):
    """A three-case multiple-choice bank at folder/tiny (hash embedder: no model)."""
    from r2mad.backends.embedder import load_embedder
    from r2mad.memory.bank import MemoryBank

    cases = [Case(f"case-{i}", f"q{i}", "mcq", agent, 1, question, "prev", "agents split", 0.67,
                  ("((B))", "((A))", "((B))"), ("B", "A", "B"), "B", (True, False, True), 1.0)
             for i, (agent, question) in enumerate([(0, "Which planet is red?"), (1, "Which planet is red?"),
                                                    (0, "What is the capital of Peru?")])]
    bank = MemoryBank.create(folder / "tiny", task_kind="mcq", split="train", backbone="test",
                             embedder=load_embedder("hash-64"), code_version="test",
                             index_root=folder.parent / "build-index")
    bank.add(cases)
    bank.close()


def bank_case(question: str, agent: int = 0, round_: int = 1, reward: float = 1.0,
              correct=(True, False, True), responses=("ans 4", "ans 5", "ans 4"), text: str | None = None) -> Case:
    """A math memory case about `question` (gold 4, two of three agents right)."""
    return Case(id=f"{question}-a{agent}-r{round_}", question_id=question, task_kind="math", agent=agent,
                round=round_, question=text or f"question about {question}", previous_response="I said 4",
                summary="two of three agree", consensus=2 / 3, responses=responses,
                answers=("4", "5", "4"), gold="4", correct=correct, reward=reward)


# --- saved runs (run store, annotation, datasets) ------------------------------------------------------

HF_SECRET = "hf_TESTSECRET123"
STORED_MCQ = Task("mcq", "Which is right?", (("A", "this"), ("B", "that")), gold="A", id="q1",
                  source="demo-mcq")


def make_transcript(task: Task, answers: list[list[str | None]], final: str | None,
                    correct: bool | None, *, status: str = "done", method: str = "mad",
                    settings: dict | None = None, text: str = "") -> Transcript:
    """Rounds of agent answers (None = UNPARSED); every turn costs 10 + 5 tokens, plus one summary
    call of 7 + 3 tokens after round 0."""
    prompt = (Message("user", "q"),)
    rounds = tuple(
        Round(r, tuple(AgentTurn(agent=a, round=r, persona="careful", prompt=prompt,
                                 text=f"{text}I think (({v}))", seconds=0.5, tokens_in=10,
                                 tokens_out=5, answer=Answer(v, "double_paren" if v else
                                                                "unparsed"))
                       for a, v in enumerate(row)),
              consensus=0.0, aux=(AuxCall("summary", r, "split views", 7, 3),) if r == 0 else ())
        for r, row in enumerate(answers))
    return Transcript(task=task, method=method, backbone="smollm2-135m", settings=settings or {},
                      rounds=rounds, final=Answer(final, "double_paren" if final else "unparsed"),
                      correct=correct, status=status, notices=(f"{text}note",), seconds=2.5)


def save_run(store, t: Transcript, *, bank: str | None = None) -> str:
    """Start a run in `store` and save `t` as its transcript; returns the run id."""
    run_id = store.start_run(method=t.method, backbone=t.backbone, bank=bank, task=t.task,
                             settings=t.settings, seed=1, code_version="test")
    store.save_transcript(run_id, t, t.status)
    return run_id


# --- the debate loop on a scripted backend ---------------------------------------------------------------

PLANET_MCQ = Task("mcq", "Which planet is largest?", (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus")), "B", "q1")
FORK_SETTINGS = DebateSettings(seed=3, early_stop=False)


def agent_of(messages) -> int:
    return SYSTEMS.index(persona_of(messages))


@dataclasses.dataclass
class HangsAfterRound0(ScriptedBackend):
    """Round 0's calls answer at once; a debate round's calls hang (a slow model) until cancelled, which they
    count. `hanging` is set once `agents` calls hang, `cancelled` once they were all cancelled."""
    agents: int = 2
    hung: int = 0
    stopped: int = 0
    hanging: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    async def chat(self, messages, **kw):
        if len(messages) <= 2:  # round 0: the persona and the question
            return await super().chat(messages, **kw)
        self.hung += 1
        if self.hung == self.agents:
            self.hanging.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.stopped += 1
            if self.stopped == self.agents:
                self.cancelled.set()
            raise
        raise AssertionError("a hanging call was not cancelled")


def fork_replies(m):
    """Agent i answers "BAC"[i]; its text names the agent and how many messages it was shown, so a
    turn given the wrong history answers differently."""
    if m[0].content not in SYSTEMS:  # a judge, an adviser or a summary
        return f"YES, looked at {len(last_user(m))} characters."
    i = agent_of(m)
    return f"I am agent-{i}, seen {len(m)}. ((" + "BAC"[i] + "))"


def parent(method="mad", settings=FORK_SETTINGS):
    """A debate on PLANET_MCQ with fork_replies; returns (transcript, backend)."""
    from r2mad.debate import Debate
    from r2mad.methods import make_method

    backend = ScriptedBackend(fork_replies)
    t = asyncio.run(Debate(backend, make_method(method, settings)).run(PLANET_MCQ))
    return t, backend


def fork(t, spec, settings=FORK_SETTINGS):
    """`t` forked by `spec` with fork_replies; returns (fork, backend)."""
    from r2mad.engine.forks import fork_debate
    from r2mad.engine.runner import Setup

    backend = ScriptedBackend(fork_replies, name="b")
    f = asyncio.run(fork_debate(t, spec, Setup(backend, settings)))
    return f, backend


def herd(body):
    """A loopback server's responder: agent 1 starts on A, the others on B; after round 0 every agent
    answers A if it is shown an A. So agent 1's round-0 answer alone leads the debate to the wrong final A."""
    from testing.scripted_server import ok

    messages = body["messages"]
    system = messages[0]["content"]
    if system not in SYSTEMS:  # a judge
        return ok("YES, fine.")
    agent = SYSTEMS.index(system)
    if len(messages) == 2:
        return ok("Mars. ((A))" if agent == 0 else "Jupiter. ((B))")
    return ok("Going along. ((A))" if "((A))" in messages[-1]["content"] else "Jupiter. ((B))")


# --- R²-MAD's scripted bank ---------------------------------------------------------------------------

OPTIONS = (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"))
PLANET_TASKS = [Task("mcq", f"Question number {i}: which planet is largest?", OPTIONS, "B", f"q{i}")
                for i in range(4)]


def r2mad_reply(messages):
    """Agent 0 always B (right), agent 1 always A, agent 2 C in round 0 then B; summaries are short."""
    text = last_user(messages)
    if "Positions of the agents" in text:
        return "Two positions remain; one agent moved."
    agent = SYSTEMS.index(persona_of(messages))
    debate_round = sum(m.role == "assistant" for m in messages)
    return f"My reasoning. (({['B', 'A', 'C' if debate_round == 0 else 'B'][agent]}))"


@pytest.fixture
def bank(tmp_path):
    """A Qdrant bank on disk built from PLANET_TASKS with r2mad_reply (hash embedder)."""
    from r2mad.backends.embedder import HashEmbedder
    from r2mad.engine.build_memory import build
    from r2mad.memory.bank import MemoryBank

    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="train", backbone="scripted",
                             embedder=HashEmbedder(64), code_version="test", index_root=tmp_path / "index")
    asyncio.run(build(PLANET_TASKS, bank, ScriptedBackend(r2mad_reply), DebateSettings(seed=1)))
    yield bank
    bank.close()


# --- `r2mad eval` on a scripted backend -------------------------------------------------------------------

EVAL_SETTINGS = load_config().settings.replace(samples=3, max_tokens=64)


def answer_from(messages):
    """A deterministic reply: the letter depends only on what the agent was shown."""
    import hashlib
    import json

    digest = hashlib.sha1(json.dumps([m.content for m in messages]).encode()).digest()
    return f"I think so. The answer is (({'ABCD'[digest[0] % 4]}))."


def make_eval_run(methods=("cot", "sc", "mad", "madm2-subjective"), limit=3, settings=EVAL_SETTINGS, share=True):
    from r2mad.evaluation.datasets import load_split
    from r2mad.evaluation.rows import EvalRun

    return EvalRun(load_split("demo-mcq", "test", limit=limit), tuple(methods), "scripted", settings, share)


def evaluate(run, out, backend=None, **kw):
    """Run `r2mad eval` for `run` into `out` (concurrency 2) through the engine with `backend` (and `bank`,
    `agent_backends`, `summaries` when given); returns the backend."""
    from r2mad.engine.evaluate import run_eval
    from r2mad.engine.resources import Given

    backend = backend or ScriptedBackend(reply=answer_from)
    given = Given(backend, [b for _, b in kw.pop("agent_backends", ())], bank=kw.pop("bank", None),
                  notices=kw.pop("bank_notices", ()), summaries=kw.pop("summaries", None))
    asyncio.run(run_eval(run, given, out, concurrency=kw.pop("concurrency", 2), **kw))
    return backend


# --- hand-made transcripts for metrics and detectors ------------------------------------------------

ABSTAIN = "<abstain>"


def metric_answer(value):
    return UNPARSED if value is None else Answer(value, "double_paren")


def metric_turn(agent, rnd, value, tokens_in=10, tokens_out=5):
    if value == ABSTAIN:
        return AgentTurn(agent, rnd, "p", (), "", Answer(None, "abstained"), error="timeout")
    return AgentTurn(agent, rnd, "p", (), f"(({value}))", metric_answer(value), tokens_in, tokens_out, 1.0)


def metric_debate(rounds, final, gold="B", method="mad", qid="q", aux=(), seconds=0.0):
    """rounds: one list of answers per round (None = UNPARSED, ABSTAIN = failed call)."""
    task = Task("mcq", "Which?", (("A", "a"), ("B", "b"), ("C", "c")), gold, qid, "demo-mcq")
    built = tuple(Round(i, tuple(metric_turn(a, i, v) for a, v in enumerate(values)), 0.0,
                        tuple(x for x in aux if x.round == i))
                  for i, values in enumerate(rounds))
    return Transcript(task, method, "scripted", {}, built, metric_answer(final), seconds=seconds)


GRID_MCQ = Task("mcq", "Which?", (("A", "a"), ("B", "b"), ("C", "c")), gold="A", id="q")


def grid_debate(grid, *, task=GRID_MCQ, texts=None, turn_details=None, round_details=None, aux=None,
                correct=None, final=None):
    """grid[r][a] = agent a's answer in round r (None = UNPARSED); texts likewise (default "I pick X")."""
    rounds = []
    for r, row in enumerate(grid):
        turns = tuple(AgentTurn(a, r, "p", (Message("user", "q"),),
                                (texts or {}).get((r, a), f"r{r}a{a} ((" + (v or "?") + "))"),
                                Answer(v, "double_paren") if v else Answer(None))
                      for a, v in enumerate(row))
        turns = tuple(AgentTurn(**{**t.__dict__, "details": (turn_details or {}).get((r, t.agent), {})})
                      for t in turns)
        rounds.append(Round(r, turns, 0.0, tuple((aux or {}).get(r, ())), (round_details or {}).get(r, {})))
    last = grid[-1][0] if final is None else final
    ok = (last == task.gold) if correct is None else correct
    return Transcript(task, "mad", "b", {}, tuple(rounds), Answer(last, "double_paren"), ok)


# --- the served model (`python -m r2mad serve`) on a scripted backbone -----------------------------------

def scripted_config(base_url: str, data_dir, *, memory_dir=None, **settings):
    """The repository's config with one more backbone, "fake", at a scripted server (the default backbone)."""
    import dataclasses

    from r2mad.settings.config import Backbone

    config = load_config(env={"R2MAD_DATA_DIR": str(data_dir)})
    fake = Backbone(name="fake", base_url=base_url, model="fake-model", timeout_s=30, max_retries=0)
    app = dataclasses.replace(config.app, embedder="hash-64", private_runs="off",
                              **({"memory_dirs": (str(memory_dir),), "default_bank": str(memory_dir / "tiny")}
                                 if memory_dir else {}))
    return dataclasses.replace(config, backbones={**config.backbones, "fake": fake}, default_backbone="fake",
                               settings=config.settings.replace(**{"max_tokens": 48, **settings}), app=app)


def two_rounds(body):
    """A scripted server's reply: agent 1 starts on A and the others on B; from round 1 every agent says B (so a
    debate runs 2 rounds). A question without options is answered 7."""
    import json

    from testing.scripted_server import ok

    messages = body["messages"]
    if "(A)" not in json.dumps(messages):
        return ok("Adding them up gives \\boxed{7}.")
    first = messages[0]["content"] == SYSTEMS[0] and len(messages) == 2
    return ok("Mars is red. ((A))" if first else "Jupiter is the giant. ((B))")


def serve_on_loopback(config, *, key=None, key_required=False):
    """`with serve_on_loopback(config) as (url, services):` the served model on a free loopback port."""
    import contextlib

    from r2mad.serving.loopback import ServerThread
    from r2mad.serving.openai_server import Served, create_app
    from r2mad.serving.services import Services

    @contextlib.contextmanager
    def running():
        services = Services(config)
        with ServerThread(create_app(Served(services, key=key, key_required=key_required)), free_port()) as url:
            yield url + "/v1", services
    return running()


def post(url: str, body: bytes, headers: dict | None = None) -> tuple[int, dict, dict]:
    """POST a body to the served model's /chat/completions (url ends /v1): (status, headers, JSON answer), also when
    the server answers (413) before reading it all."""
    import http.client
    import json
    import urllib.parse

    where = urllib.parse.urlsplit(url + "/chat/completions")
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    try:
        conn.putrequest("POST", where.path)
        for name, value in {"content-type": "application/json", "content-length": str(len(body)),
                            **(headers or {})}.items():
            conn.putheader(name, value)
        conn.endheaders()
        try:
            conn.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused the rest of the body; its answer is already on the way
        response = conn.getresponse()
        return response.status, dict(response.headers), json.loads(response.read())
    finally:
        conn.close()


def harness_venv(name: str, *requirements: str):
    """The python of a virtual environment under var/ that holds an evaluation harness whose dependencies would
    change this project's pins (Inspect AI, lm-eval); created on first use with pip (from the package index), then
    reused while its requirements stay the same. Skips the test when it cannot be installed here."""
    import subprocess
    import sys

    folder = ROOT / "var" / f"harness-{name}"
    python, marker = folder / "bin" / "python", folder / "installed.txt"
    wanted = "\n".join(requirements)
    if marker.is_file() and marker.read_text() == wanted and python.is_file():
        return python
    made = subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], capture_output=True, text=True)
    pip = made.returncode == 0 and subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements],
                                                   capture_output=True, text=True, timeout=1800)
    if not pip or pip.returncode != 0:
        pytest.skip(f"{' '.join(requirements)} could not be installed into {folder}: "
                    + ((pip and pip.stderr) or made.stderr).strip()[-300:])
    marker.write_text(wanted)
    return python


class FullDisk(sqlite3.Connection):
    """A connection whose every change fails as on a full disk while `full` is set (see `full_disk`)."""
    full = False

    def execute(self, sql, *args):
        if FullDisk.full and sql.split()[0].upper() in ("INSERT", "UPDATE", "DELETE"):
            raise sqlite3.OperationalError("database or disk is full")
        return super().execute(sql, *args)


def full_disk(monkeypatch) -> type[FullDisk]:
    """Every sqlite3 connection opened from now on is a FullDisk (for a module's `full_disk` fixture)."""
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, factory=FullDisk, **k))
    FullDisk.full = False
    return FullDisk
