"""The contract of every method (debate methods, R²-MAD's ablations, baselines, with and without advice)
through every entry point (CLI, app via gradio_client, eval, side by side in the app, the served model at the
app's /v1): what is saved is
the loop's own transcript, and the calls and tokens it counts are exactly what the server served."""
from __future__ import annotations

import dataclasses
import json
import shutil
import threading

import pytest
import yaml

pytest.importorskip("gradio_client")

from r2mad.bench.speed import reply_for  # noqa: E402
from r2mad.cli import main  # noqa: E402
from r2mad.evaluation.rows import ROWS, read_rows  # noqa: E402
from r2mad.methods import METHODS, is_debate  # noqa: E402
from r2mad.runs.store import RunStore  # noqa: E402
from r2mad.serving.openai_server import Served as Model  # noqa: E402
from r2mad.serving.openai_server import mount  # noqa: E402
from r2mad.settings.config import load_config  # noqa: E402
from r2mad.types import Case, Transcript, from_dict, to_dict  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.serving import launch  # noqa: E402
from testing.scripted_server import FakeServer, completion_body  # noqa: E402  # noqa: E402
from tests.helpers import ROOT, free_port  # noqa: E402
from tests.ui_client import UIClient as Client  # noqa: E402  (the UI events are undocumented)
from tests.ui_client import debate_outputs  # noqa: E402

pytestmark = pytest.mark.slow
EVERY = [*METHODS, *(f"{m}+advice" for m in METHODS if is_debate(m) and m != "truemad")]
OPTIONS = {"A": "Mars", "B": "Jupiter", "C": "Venus", "D": "Earth"}
QUESTION = "Which planet is the largest in the solar system?"


class Served:
    """Calls and tokens the scripted server answered (a plausible debate: see bench.reply_for)."""

    def __init__(self):
        self.calls = self.tokens = 0
        self.lock = threading.Lock()

    def __call__(self, body):
        behaviour = reply_for(body)
        usage = completion_body(behaviour, body)["usage"]
        with self.lock:
            self.calls += 1
            self.tokens += usage["prompt_tokens"] + usage["completion_tokens"]
        return behaviour

    def since(self, mark: tuple[int, int]) -> tuple[int, int]:
        return self.calls - mark[0], self.tokens - mark[1]

    @property
    def mark(self) -> tuple[int, int]:
        return self.calls, self.tokens


def counted(t: Transcript) -> tuple[int, int]:
    u = t.usage()
    return u.calls, u.tokens


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A scripted server, a config dir pointing at it, a small bank, and the app on that config."""
    tmp = tmp_path_factory.mktemp("contract")
    served = Served()
    with FakeServer(models=["fake-model"], responder=served) as server:
        configs = tmp / "configs"
        shutil.copytree(ROOT / "configs", configs)
        (configs / "backbones.yaml").write_text(yaml.safe_dump({"default": "fake", "backbones": {
            "fake": {"base_url": server.base_url, "model": "fake-model", "timeout_s": 5, "max_retries": 0}}}))
        app = yaml.safe_load((configs / "app.yaml").read_text())
        app.update(embedder="hash-64", memory_dirs=[str(tmp / "memory")], default_bank=None,
                   data_dir=str(tmp / "var"))
        (configs / "app.yaml").write_text(yaml.safe_dump(app))
        bank = make_bank(tmp / "memory" / "planets")
        config = load_config(configs, env={})
        demo = build_app(config)
        demo.queue(default_concurrency_limit=4)
        port = free_port()
        launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
        mount(demo.app, Model(demo.r2mad_services, key=None, key_required=False))  # as app.py does
        yield dataclasses.make_dataclass("World", ["served", "configs", "bank", "demo", "client", "tmp", "url"])(
            served, configs, bank, demo, Client(f"http://127.0.0.1:{port}/", verbose=False), tmp,
            f"http://127.0.0.1:{port}/v1")
        demo.close()


def make_bank(folder):
    from r2mad.backends.embedder import load_embedder
    from r2mad.memory.bank import MemoryBank

    cases = [Case(f"q{i}:a{agent}:r1", f"q{i}", "mcq", agent, 1, f"Which planet is number {i}?", "prev",
                  "agents split", 0.67, ("((B))", "((A))", "((B))"), ("B", "A", "B"), "B", (True, False, True),
                  float(agent != 1)) for i in range(3) for agent in range(3)]
    bank = MemoryBank.create(folder, task_kind="mcq", split="train", backbone="test",
                             embedder=load_embedder("hash-64"), code_version="test", index_root=folder.parent / "ix")
    bank.add(cases)
    bank.close()
    return folder


def ask_app(world, methods):
    options = {f"option_{k.lower()}": v for k, v in OPTIONS.items()}
    out = world.client.predict(backbone="fake", methods=methods, bank=str(world.bank), agents=3, rounds=2,
                               max_tokens=64, seed=0, question=QUESTION, gold="B", api_name="/debate", **options)
    return debate_outputs(out)["json"]  # the transcripts the page shows, by method


def saved_in_app(world, method) -> Transcript:
    store = world.demo.r2mad_services.store
    return store.get_run(store.list_runs(method=method)[0].id).transcript


@pytest.mark.parametrize("method", EVERY)
def test_cli_saves_the_loops_transcript_with_the_servers_count(world, method, tmp_path, monkeypatch):
    monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / "var"))
    out, mark = tmp_path / "t.json", world.served.mark
    args = ["--config-dir", str(world.configs), "debate", "--backbone", "fake", "--method", method,
            "--question", QUESTION, *(x for k, v in OPTIONS.items() for x in ("--option", f"{k}={v}")),
            "--gold", "B", "--rounds", "2", "--bank", str(world.bank), "--json", str(out)]
    assert main(args) == 0
    loop = Transcript.from_json(out.read_text())
    store = RunStore(tmp_path / "var" / "runs.sqlite")
    [run] = store.list_runs()
    assert to_dict(store.get_run(run.id).transcript) == to_dict(loop)
    assert counted(loop) == world.served.since(mark) and loop.status == "done"


@pytest.mark.parametrize("method", EVERY)
def test_app_saves_the_loops_transcript_with_the_servers_count(world, method):
    mark = world.served.mark
    shown = ask_app(world, [method])[method]
    assert shown["status"] == "done"
    assert to_dict(saved_in_app(world, method)) == shown
    assert counted(from_dict(Transcript, shown)) == world.served.since(mark)


@pytest.mark.parametrize("method", EVERY)
def test_the_served_model_saves_the_loops_transcript_with_the_servers_count(world, method):
    from openai import OpenAI

    mark = world.served.mark
    question = "\n".join([QUESTION, *(f"{k}) {v}" for k, v in OPTIONS.items())])
    raw = OpenAI(base_url=world.url, api_key="unused", max_retries=0).chat.completions.with_raw_response.create(
        model=f"{method}@fake?rounds=2&bank={world.bank}", messages=[{"role": "user", "content": question}])
    t = world.demo.r2mad_services.store.get_run(raw.headers["x-r2mad-run-id"]).transcript
    assert t.status == "done" and t.task.options == tuple(OPTIONS.items())
    assert counted(t) == world.served.since(mark) == (t.usage().calls, raw.parse().usage.total_tokens)


@pytest.mark.parametrize("method", EVERY)
def test_side_by_side_saves_each_loops_transcript_and_counts_round0_once(world, method):
    other = "mad" if method != "mad" else "cot"
    mark = world.served.mark
    shown = ask_app(world, [method, other])
    transcripts = {m: from_dict(Transcript, shown[m]) for m in (method, other)}
    for m, t in transcripts.items():
        assert t.status == "done" and to_dict(saved_in_app(world, m)) == shown[m]
    calls = sum(counted(t)[0] for t in transcripts.values())
    tokens = sum(counted(t)[1] for t in transcripts.values())
    shared = [t for t in transcripts.values() if t.shared_round0]
    if shared:  # computed once, held by every debate method's transcript
        round0 = shared[0].rounds[0].turns
        calls -= (len(shared) - 1) * len(round0)
        tokens -= (len(shared) - 1) * sum(x.tokens_in + x.tokens_out for x in round0)
    assert (calls, tokens) == world.served.since(mark)


@pytest.mark.parametrize("method", EVERY)
def test_eval_rows_hold_the_loops_transcript_with_the_servers_count(world, method, tmp_path, monkeypatch):
    monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / "var"))
    mark = world.served.mark
    assert main(["--config-dir", str(world.configs), "eval", "--task", "demo-mcq", "--split", "test",
                 "--limit", "1", "--backbone", "fake", "--methods", method, "--rounds", "2", "--bank",
                 str(world.bank), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    [row] = read_rows(tmp_path / "out" / ROWS)
    t = from_dict(Transcript, row["transcript"])
    assert row["method"] == method and t.status == "done"
    assert counted(t) == world.served.since(mark)
    assert json.loads((tmp_path / "out" / "run.json").read_text())["settings"]["answer_guard"] == "off"


def test_advice_keeps_every_hook_of_the_method_it_joins(world, tmp_path, monkeypatch):
    """r2mad+advice asks the same prefetched summaries as r2mad (the old wrapper dropped the hook)."""
    counts = {}
    for method in ("r2mad", "r2mad+advice"):
        monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / method))  # both start with no summary cached
        out = tmp_path / f"{method}.json"
        assert main(["--config-dir", str(world.configs), "debate", "--backbone", "fake", "--method", method,
                     "--question", QUESTION, *(x for k, v in OPTIONS.items() for x in ("--option", f"{k}={v}")),
                     "--rounds", "2", "--bank", str(world.bank), "--prefetch-summaries", "--json", str(out)]) == 0
        t = Transcript.from_json(out.read_text())
        counts[method] = sum(1 for r in t.rounds for c in r.aux if c.label == "prefetched")
    assert counts["r2mad"] > 0 and counts["r2mad+advice"] == counts["r2mad"]
