"""What a visitor names and what they are told: banks by name, never a server folder (page, API); a file in
another encoding read, not a codec error; a run the full disk did not take said on the API; a refusal before
the start said once, on the outcome line. Scripted server, a tiny bank on disk (hash embedder), the handlers."""
import asyncio
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from r2mad.serving.services import Services
from r2mad.settings.config import ROOT, load_config
from r2mad.ui import handlers
from r2mad.ui.api import NOT_SAVED, Api
from r2mad.ui.asks import DebateAsk
from testing.scripted_server import FakeServer, ok
from tests import helpers
from tests.helpers import make_bank

ASKED = dict(question="Which planet is red?", options={"A": "Mars", "B": "Venus"}, gold="A")


@pytest.fixture
def full_disk(monkeypatch):
    yield helpers.full_disk(monkeypatch)  # every store write fails while .full is set
    helpers.FullDisk.full = False


@pytest.fixture
def server():
    with FakeServer(models=["m"], responder=lambda body: ok("Mars is red. ((A))")) as srv:
        yield srv


def services_with(tmp: Path, base_url: str, memory=None) -> Services:
    config = load_config(ROOT / "configs", env={"R2MAD_DATA_DIR": str(tmp / "var")})
    fake = dataclasses.replace(config.backbone(config.default_backbone), name="fake", kind="openai",
                               base_url=base_url, model="m", timeout_s=10, max_retries=0)
    app = dataclasses.replace(config.app, embedder="hash-64", default_bank=None,
                              memory_dirs=config.app.memory_dirs if memory is None else (str(memory),))
    return Services(dataclasses.replace(config, backbones={"fake": fake}, default_backbone="fake", app=app))


def no_progress(*args, **kwargs):
    return None


def api_debate(services, **kw):
    ask = DebateAsk(**{**ASKED, "backbone": "fake", "agents": 2, "rounds": 2, **kw})
    return asyncio.run(Api(services).run_debate(ask, request=SimpleNamespace(session_hash="s"), progress=no_progress))


@pytest.mark.parametrize("bank", ["/etc", "../../etc", "/proc/self", str(ROOT / "memory" / "demo-mcq")])
def test_a_bank_given_as_a_server_path_is_refused_in_one_sentence_that_names_no_path(tmp_path, server, bank):
    services = services_with(tmp_path, server.base_url)  # the app's own banks: memory/demo-math, memory/demo-mcq
    with pytest.raises(gr.Error) as refused:
        api_debate(services, method="r2mad", bank=bank)
    said = refused.value.message
    assert said == "That bank is not one of this app's; name one of: memory/demo-math, memory/demo-mcq."
    assert server.hits == 0 and services.store.count_runs() == 0  # nothing ran, nothing was saved


def page_debate(services, **form):
    said: list[str] = []
    form = {**dict(backbone="fake", bank="", agents=2, rounds=2, k=1, gamma=0.9, temperature=0.7, max_tokens=32,
                   seed=0, answer_guard="off", question=ASKED["question"], option_a="Mars", option_b="Venus",
                   gold="A"), **form}

    async def run():
        return [u async for u in handlers.DebateHandlers(services).run_debate(
            **form, visitor_id="v" * 32, request=SimpleNamespace(session_hash="s"))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(handlers, "warn", lambda message, secret=None: said.append(message))
        patch.setattr(gr, "Warning", lambda message, *a, **k: said.append(message))
        return asyncio.run(run()), said


def shown_text(updates) -> str:
    return " ".join(str(u) for update in updates for u in update)


def test_a_bank_holding_the_question_is_refused_once_on_the_outcome_line_naming_no_path(tmp_path, server):
    make_bank(tmp_path / "memory")  # holds "Which planet is red?"
    services = services_with(tmp_path, server.base_url, memory=tmp_path / "memory")
    [listed] = services.bank_choices()
    updates, toasts = page_debate(services, methods=["mad", "r2mad"], blind=True, bank=listed)
    outcome = updates[-1][0]
    assert outcome.startswith("Not started: Bank tiny holds this question's text, so its cases would show")
    assert toasts == []  # said once, where the visitor looks
    assert "Not every debate finished" not in shown_text(updates)  # none started
    assert str(tmp_path) not in shown_text(updates) and server.hits == 0


def test_a_run_the_full_disk_did_not_take_says_so_on_the_api_and_never_reads_running(tmp_path, server, full_disk):
    services = services_with(tmp_path, server.base_url)
    recorder = services.store.recorder

    def filling_at_the_end(run_id):  # the disk fills as the debate ends
        save = recorder(run_id)

        def record(t):
            full_disk.full = t.status != "running"
            save(t)
        return record
    services.store.recorder = filling_at_the_end
    result = api_debate(services, method="mad")
    assert result["final"] == "A" and result["saved"] is False
    assert result["notices"][-1] == NOT_SAVED
    kept = Api(services).get_run(result["run_id"], request=SimpleNamespace(session_hash="s"))
    assert kept["status"] == "unsaved" and kept["notices"][-1] == NOT_SAVED
    full_disk.full = False
    services.store.take_notices()


@pytest.mark.parametrize("name, text", [
    ("french.csv", "question,answer\nO\u00f9 est Lima?,P\u00e9rou\n"),
    ("french.jsonl", '{"question": "O\u00f9 est Lima?", "answer": "P\u00e9rou"}\n')])
def test_a_file_in_latin1_is_refused_in_one_sentence_naming_the_file_not_its_folder(tmp_path, name, text):
    from r2mad.evaluation.datasets import DataError
    from r2mad.evaluation.own_data import load_own

    path = tmp_path / "uploads" / name  # where Gradio keeps a visitor's upload: a folder of the server
    path.parent.mkdir()
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(DataError) as refused:
        load_own(str(path), "question=question,answer=answer")
    assert str(refused.value) == (
        f"{name} is not UTF-8 text (byte 0xf9 on line {2 if name.endswith('.csv') else 1} is not UTF-8, as in a "
        'Latin-1 or Windows-1252 file); save it as UTF-8 (a spreadsheet\'s "CSV UTF-8", or '
        f"`iconv -f latin1 -t utf-8 {name} > utf8-{name}`) and pass that file.")


@pytest.mark.parametrize("said, shown", [
    ("Bank /tmp/x/memory/tiny holds this question's text.", "Bank tiny holds this question's text."),
    ("kept in /proc/12345/fd/3.", "kept in a system path."),
    ("the run store /home/user/app/var/runs.sqlite is busy", "the run store runs.sqlite is busy"),
    ("POST /v1/chat/completions at https://x.org/a/b, 1/2 of memory/demo-mcq",  # no folder of this machine
     "POST /v1/chat/completions at https://x.org/a/b, 1/2 of memory/demo-mcq")])
def test_what_a_visitor_is_told_names_no_folder_of_the_server(said, shown):
    from r2mad.text import without_paths

    assert without_paths(said) == shown
