"""A public Space's visitors (SPACE_ID set): each reads and reruns only their own runs, annotators from
the allow-list read all and label as their login, a signed-in visitor's debates run on their own token,
and the owner's token serves nobody unless the config says so."""
import asyncio
import os
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
import yaml

from app import serve
from r2mad.runs.records import NOTE_LIMIT
from r2mad.settings.config import load_config
from r2mad.ui.views import VIEW_NAMES
from testing.scripted_server import FakeServer
from tests.helpers import free_port
from tests.ui_client import UIClient as Client  # the UI events are undocumented

pytestmark = pytest.mark.slow  # a real app and test server

ROOT = Path(__file__).resolve().parents[2]
OWNER_TOKEN = "hf_" + "OwnerSecretToken" + "3" * 16  # token-shaped, built
LOGIN_TOKEN = "hf_oauth_VisitorLoginToken0123456789"


def space_config(tmp: Path, base_url: str, **app_changes):
    configs = tmp / "configs"
    configs.mkdir(exist_ok=True)
    for name in ("methods.yaml", "annotation.yaml"):
        (configs / name).write_text((ROOT / "configs" / name).read_text())
    (configs / "backbones.yaml").write_text(yaml.safe_dump({"backbones": {
        "fake": {"base_url": base_url, "model": "m", "timeout_s": 10},
        "hf-router": {"base_url": base_url, "model": "m", "timeout_s": 10, "api_key_env": "HF_TOKEN",
                      "api_key_required": True, "visitor_token": True}}}))
    app_cfg = yaml.safe_load((ROOT / "configs" / "app.yaml").read_text())
    (configs / "app.yaml").write_text(yaml.safe_dump({**app_cfg, "default_bank": None, **app_changes}))
    return load_config(configs, env={**os.environ, "SPACE_ID": "someone/r2mad-studio", "HF_TOKEN": OWNER_TOKEN,
                                     "R2MAD_DATA_DIR": str(tmp / "var"), "R2MAD_ANNOTATORS": "ann, ann2, some-org"})


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("visitors")
    with FakeServer(models=["m"]) as srv:
        config = space_config(tmp, srv.base_url)
        port = free_port()
        demo = serve(config, port=port, block=False, warm=False)
        yield demo, f"http://127.0.0.1:{port}", srv
        demo.close()


ARGS = dict(backbone="fake", methods=["mad"], bank="", agents=2, rounds=1, max_tokens=32, seed=0)
A_ID, B_ID = "a" * 32, "b" * 32


def test_each_visitor_reads_and_reruns_only_their_own_runs(space):
    demo, base, _ = space
    a, b, bare = (Client(base, verbose=False) for _ in range(3))
    a.predict(**ARGS, question="PRIVATE: my employer's unreleased Q3 revenue is 4 or 5?", visitor_id=A_ID,
              api_name="/debate")
    b.predict(**ARGS, question="What is 2+2?", visitor_id=B_ID, api_name="/debate")
    listing = dict(method="any", backbone="any", bank="any", outcome="any", flags=[], status="any",
                   api_name="/inspect_list_runs")
    a_rows = a.predict(**listing, visitor_id=A_ID)["data"]
    b_rows = b.predict(**listing, visitor_id=B_ID)["data"]
    assert any("PRIVATE" in str(row) for row in a_rows) and len(a_rows) == 1
    assert len(b_rows) == 1 and not any("PRIVATE" in str(row) for row in b_rows)
    assert not any("PRIVATE" in str(row) or "2+2" in str(row) for row in bare.predict(**listing)["data"])
    a_run = demo.r2mad_services.store.list_runs(owner=f"browser:{A_ID}")[0].id
    for endpoint, extra in (("/open_run", {}), ("/rerun", {})):
        with pytest.raises(Exception, match="No saved run of yours has that id"):
            b.predict(run_id=a_run, visitor_id=B_ID, api_name=endpoint, **extra)
    header, _, _, _ = a.predict(run_id=a_run, visitor_id=A_ID, api_name="/open_run")  # header, chat, final, notes
    assert "PRIVATE" in header or a_run[:8] in header
    with pytest.raises(Exception, match="annotators"):  # a visitor does not label, not even their own run
        b.predict(run_id=a_run, labels=["other"], note="", annotator="ann", visitor_id=B_ID, api_name="/annotate")
    assert demo.r2mad_services.store.get_run(a_run).annotations == ()


def request(session="s1"):
    return SimpleNamespace(session_hash=session)


def profile(username):
    return gr.OAuthProfile({"name": username, "preferred_username": username, "profile": "", "picture": ""})


def test_allow_listed_annotator_reads_every_run_and_labels_as_their_login(space):
    from r2mad.ui.inspect_tab import InspectHandlers

    demo, base, _ = space
    services = demo.r2mad_services
    Client(base, verbose=False).predict(**ARGS, question="Which is larger, 3 or 5?", visitor_id="c" * 32,
                                        api_name="/debate")
    h = InspectHandlers(services)
    everyone, ids = h.list_runs("any", "any", "any", "any", [], "any", None, request(), profile("ann"))
    assert len(everyone) == len(ids) == services.store.count_runs() >= 2  # every visitor's runs
    assert h.list_runs("any", "any", "any", "any", [], "any", None, request(), profile("not-listed")) == ([], [])
    run = services.store.list_runs(owner="browser:" + "c" * 32)[0]
    h.annotate(run.id, ["other"], "looks wrong", "someone-else", None, request(), profile("ann"))
    saved = services.store.get_run(run.id).annotations
    assert [(x.annotator, x.note) for x in saved] == [("ann", "looks wrong")]  # the login, not the typed name
    # a second annotator adds their own labels; the first one's stay theirs
    h.annotate(run.id, ["wrong_confidence"], "mine", "ann", None, request(), profile("ann2"))
    h.annotate(run.id, ["other"], "edited", "ann", None, request(), profile("ann"))
    saved = {x.annotator: (x.labels, x.note) for x in services.store.get_run(run.id).annotations}
    assert saved == {"ann": (("other",), "edited"), "ann2": (("wrong_confidence",), "mine")}
    with pytest.raises(gr.Error, match="annotators"):
        h.annotate(run.id, ["other"], "", "ann", None, request(), profile("not-listed"))
    # an org on the list makes its members annotators (orgs as the Hub reports them for the login's token)
    from r2mad.serving.visitors import identify
    member = identify(services.config, browser_id=None, session="s", profile=profile("m1"),
                      token=gr.OAuthToken(token=LOGIN_TOKEN, scope="openid", expires_at=0),
                      orgs_of=lambda token: ("some-org",) if token == LOGIN_TOKEN else ())
    assert member.annotator and member.owner == "hf:m1"


def test_a_note_over_4_kb_is_refused_in_one_sentence(space):
    demo, _, _ = space
    store = demo.r2mad_services.store
    run = store.list_runs()[0]
    with pytest.raises(ValueError, match="too long") as info:
        store.annotate(run.id, annotator="ann", labels=["other"], note="x" * (1024 * 1024))
    assert str(info.value).count(". ") == 0 and "4 KB" in str(info.value)
    store.annotate(run.id, annotator="ann", labels=["other"], note="é" * (NOTE_LIMIT // 2))  # 4 KB fits


# the Debate tab's form by name: an HF-router backbone, MAD, 2 agents, 1 round
FORM = dict(backbone="hf-router", token="", base_url="", model="", methods=["mad"], bank="", agents=2, rounds=1, k=1,
            gamma=0.9, temperature=0.7, max_tokens=32, seed=0, answer_guard="off", question="What is 1+1?", gold="2")


async def collect(gen):
    return [update async for update in gen]


def test_a_signed_in_visitor_debates_on_their_own_token_and_never_the_owners(space):
    from r2mad.ui.handlers import DebateHandlers

    demo, _, srv = space
    h = DebateHandlers(demo.r2mad_services)
    form = FORM
    token = gr.OAuthToken(token=LOGIN_TOKEN, scope="openid inference-api", expires_at=0)
    before = len(srv.requests)
    updates = asyncio.run(collect(h.run_debate(**form, visitor_id="d" * 32, request=request("s2"),
                                                  login=profile("visitor"), oauth_token=token)))
    sent = {r.headers.get("authorization") for r in srv.requests[before:]}
    assert sent == {f"Bearer {LOGIN_TOKEN}"}
    shown = repr(updates)
    assert LOGIN_TOKEN not in shown and OWNER_TOKEN not in shown
    # neither signed in nor a pasted token: the owner's HF_TOKEN is not spent on the visitor
    before = len(srv.requests)
    updates = asyncio.run(collect(h.run_debate(**form, visitor_id="e" * 32, request=request("s3"))))
    assert len(srv.requests) == before
    assert "sign in with Hugging Face" in str(dict(zip(VIEW_NAMES, updates[-1]))["status"])
    # the Space stores the run under the login, where only that visitor (and annotators) read it
    assert demo.r2mad_services.store.list_runs(owner="hf:visitor")


def test_the_owner_may_share_their_token_with_visitors(tmp_path, monkeypatch):
    from r2mad.serving.services import Services
    from r2mad.ui.handlers import DebateHandlers

    monkeypatch.setenv("HF_TOKEN", OWNER_TOKEN)  # the Space's secret
    with FakeServer(models=["m"]) as srv:
        services = Services(space_config(tmp_path, srv.base_url, visitors_use_owner_token=True),
                            secrets=[OWNER_TOKEN])
        asyncio.run(collect(DebateHandlers(services).run_debate(**FORM, visitor_id="f" * 32,
                                                                request=request("s4"))))
        assert {r.headers.get("authorization") for r in srv.requests} == {f"Bearer {OWNER_TOKEN}"}
