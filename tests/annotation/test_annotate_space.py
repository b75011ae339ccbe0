"""On a public Space the Annotate tab is for the allow-listed annotators only, who label as their
Hugging Face login; any other visitor gets one sentence and no run. Locally the typed name (or "local")."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import gradio as gr
import pytest

from r2mad.serving.identity import current_annotator
from r2mad.serving.services import Services
from r2mad.settings.config import load_config
from r2mad.ui.annotate_handlers import SHOWN, AnnotateHandlers
from r2mad.ui.annotate_tab import who_annotates
from tests.helpers import HF_SECRET as SECRET
from tests.helpers import STORED_MCQ as MCQ
from tests.helpers import make_transcript, save_run


def configs(tmp_path):
    local = load_config(env={"R2MAD_DATA_DIR": str(tmp_path / "var")})
    space = dataclasses.replace(local, app=dataclasses.replace(local.app, private_runs="on", annotators=("ann",)))
    return local, space


def test_who_annotates_locally_and_on_a_space(tmp_path):
    local, space = configs(tmp_path)
    req = SimpleNamespace(session_hash="s1")
    assert current_annotator(local, req, "  Ana  B ") == "Ana B"
    assert current_annotator(local, req, "") == "local"
    ann, stranger = SimpleNamespace(username="ann"), SimpleNamespace(username="bo")
    assert current_annotator(space, req, "typed is ignored", profile=ann) == "ann"
    assert current_annotator(space, req, "ann", profile=stranger) is None  # signed in, not on the list
    assert current_annotator(space, req, "ann", browser_id="x" * 32) is None  # not signed in
    # and the tab says so before anyone tries
    assert "Anyone using this app may label debates" in who_annotates(local)
    assert "for the Space's annotators (ann): sign in with Hugging Face" in who_annotates(space)


def test_only_annotators_open_runs_on_a_space(tmp_path):
    _, space = configs(tmp_path)
    services = Services(space)
    run = save_run(services.store, make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False))
    h = AnnotateHandlers(services)
    req = SimpleNamespace(session_hash="s1", query_params={"run": run})
    with pytest.raises(gr.Error, match="sign in with Hugging Face"):
        h.show(None, run, "ann", "x" * 32, req)
    with pytest.raises(gr.Error, match="annotators"):
        h.save_next(None, run, ["other"], "", "", "ann", "x" * 32, req, SimpleNamespace(username="bo"))
    assert services.store.get_run(run).annotations == ()
    with pytest.warns(UserWarning, match="Links to runs and queues open for this Space's annotators"):
        skipped = h.deep_link("", "x" * 32, "", req)  # a link opens nothing for a stranger
    _, *unchanged = skipped  # the typed name, then every other output
    assert all(isinstance(v, dict) and v.get("__type__") == "update" and len(v) == 1 for v in unchanged)
    shown = dict(zip(SHOWN, h.show(None, run, "", "x" * 32, req, SimpleNamespace(username="ann"))))
    assert shown["run_id"] == run and f'title="{run}"' in shown["header"] and f">{run[:8]}</span>" in shown["header"]
    h.save_next(None, run, ["other"], "", "", "typed", "x" * 32, req, SimpleNamespace(username="ann"))
    assert [a.annotator for a in services.store.get_run(run).annotations] == ["ann"]


def test_bad_input_gets_one_sentence_and_keeps_the_screen(tmp_path):
    local, _ = configs(tmp_path)
    services = Services(local)
    run = save_run(services.store, make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False))
    h = AnnotateHandlers(services)
    req = SimpleNamespace(session_hash="s1", query_params={})
    with pytest.warns(UserWarning, match="A queue needs a name of 1 to 80 characters; type one."):
        made = h.create_queue("  ", 1, False, False, "ana", "", req, outcome="wrong")
        assert made == gr.skip()
    with pytest.warns(UserWarning, match="No label; choose from"):
        assert h.save_next(None, run, [], "a note", "", "ana", "", req) == gr.skip()  # ticks and note stay
    assert services.store.get_run(run).annotations == ()
    with pytest.warns(UserWarning, match="No saved run has that id"):
        shown = dict(zip(SHOWN, h.show(None, "nope", "ana", "", req)))
    assert shown["header"] == "*No such run.*"
    with pytest.warns(UserWarning, match="No queue named 'ghost'"):
        h.open_queue("ghost", "ana", "", req)
    made = h.create_queue("wrong ones", 2, True, False, "ana", "", req, outcome="wrong")
    assert made["value"] == "wrong ones"
    shown = dict(zip(SHOWN, h.open_queue("wrong ones", "ana", "", req)))
    assert shown["run_id"] == run and "0 done, 1 pending · 2 annotator(s) per run · **blind**" in shown["progress"]


@pytest.mark.slow  # a local HTTP server
def test_the_push_button_sends_the_dataset_with_the_pasted_token_or_the_login(tmp_path, monkeypatch):
    from tests.hubstandin import HubStandIn
    local, space = configs(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    req = SimpleNamespace(session_hash="s1", query_params={})
    with HubStandIn() as hub:
        h = AnnotateHandlers(Services(local))
        h.hub_endpoint = hub.url
        # 2 detector rows (shared misconception, persuaded by the majority); "I think ((A))" -> "I think
        #   ((B))" is a bare answer change, no longer "the same reasoning"
        save_run(h.store, make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False))
        with pytest.warns(UserWarning, match="No token to push with"):
            assert h.push("me/labels", "", "ana", "", req) == gr.skip()
        assert h.push("me/labels", SECRET, "ana", "", req).startswith("Pushed 1 runs and 2 label rows to")
        assert sorted(hub.repos["me/labels"]) == ["README.md", "labels.parquet", "runs.parquet", "votes.parquet"]
        with pytest.warns(UserWarning, match="needs the form user/name") as caught:
            h.push("labels", SECRET, "ana", "", req)
        assert SECRET not in str(caught[0].message)
        on_space = AnnotateHandlers(Services(dataclasses.replace(space, app=dataclasses.replace(
            space.app, data_dir=str(tmp_path / "space")))))
        on_space.hub_endpoint = hub.url
        login = SimpleNamespace(token="hf_" + "LOGINTOKEN" + "7" * 16)
        assert on_space.push("me/space-labels", "", "", "", req, SimpleNamespace(username="ann"), login)
        assert [a for m, p, a in hub.requests if m == "POST" and "commit" in p][-1] == f"Bearer {login.token}"
        # contribute-repos: a bare name (or none) goes to the signed-in annotator's own namespace
        assert "ann/space-labels" in on_space.push("space-labels", "", "", "", req, SimpleNamespace(username="ann"),
                                                   login)
        assert sorted(hub.repos["ann/space-labels"]) == ["README.md", "labels.parquet", "runs.parquet", "votes.parquet"]
        assert "ann/r2mad-annotations" in on_space.push("", "", "", "", req, SimpleNamespace(username="ann"), login)


def test_a_signed_in_annotator_pushes_a_bare_name_to_their_own_namespace():
    from r2mad.serving.own_repo import own_repo

    ann = SimpleNamespace(username="ann")
    assert own_repo("labels", ann) == "ann/labels" and own_repo("  ", ann) == "ann/r2mad-annotations"
    assert own_repo("org/labels", ann) == "org/labels"  # a full id stays as typed
    assert own_repo("labels", None) == "labels"  # no login: push_dataset asks for user/name
