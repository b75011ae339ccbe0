"""A visitor's own token (pasted, or their Hugging Face login's) reaches only the backbones that declare
`visitor_token` (the Hugging Face router's): on a Space, a debate on any other configured backbone sends it
nowhere, not as a chat call's Bearer and not when the model is looked up on /v1/models."""
import asyncio
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
import yaml

from r2mad.serving.services import Services
from r2mad.settings.config import ConfigError, load_config
from r2mad.ui.handlers import DebateHandlers
from r2mad.ui.views import VIEW_NAMES
from testing.scripted_server import FakeServer, ok

ROOT = Path(__file__).resolve().parents[2]
PASTED = "hf_" + "PastedVisitorToken" + "5" * 12  # token-shaped, built
LOGIN = "hf_oauth_" + "VisitorLoginToken" + "8" * 12


def space_config(tmp: Path, backbones: dict, **env):
    configs = tmp / "configs"
    configs.mkdir(exist_ok=True)
    for name in ("methods.yaml", "annotation.yaml"):
        (configs / name).write_text((ROOT / "configs" / name).read_text())
    (configs / "backbones.yaml").write_text(yaml.safe_dump({"backbones": backbones}))
    app_cfg = yaml.safe_load((ROOT / "configs" / "app.yaml").read_text())
    (configs / "app.yaml").write_text(yaml.safe_dump({**app_cfg, "default_bank": None}))
    return load_config(configs, env={"SPACE_ID": "someone/r2mad-studio", "R2MAD_DATA_DIR": str(tmp / "var"), **env})


def form(backbone: str, token: str = "") -> dict:
    """The Debate tab's inputs by name: MAD, 2 agents, 1 round."""
    return dict(backbone=backbone, token=token, methods=["mad"], bank="", agents=2, rounds=1, k=1, gamma=0.9,
                temperature=0.7, max_tokens=32, seed=0, answer_guard="off", question="What is 1+1?", gold="2")


def debate(services, backbone, token="", login=None, session="s"):
    async def run():
        return [u async for u in DebateHandlers(services).run_debate(
            **form(backbone, token), visitor_id="v" * 32, request=SimpleNamespace(session_hash=session),
            oauth_token=login and gr.OAuthToken(token=login, scope="openid inference-api", expires_at=0))]
    return asyncio.run(run())


def sent_keys(srv: FakeServer) -> set:
    return {r.authorization for r in [*srv.requests, *srv.model_requests]}


@pytest.fixture
def servers():
    with FakeServer(models=["hf-model"], responder=lambda body: ok("It is ((2)).")) as hf, \
            FakeServer(models=["vllm-model"], responder=lambda body: ok("It is ((2)).")) as other:
        yield hf, other


def test_a_visitors_token_never_reaches_a_backbone_that_does_not_name_it(tmp_path, monkeypatch, servers):
    hf, other = servers
    monkeypatch.delenv("OTHER_KEY", raising=False)
    config = space_config(tmp_path, {
        "hf-router": {"base_url": hf.base_url, "model": "hf-model", "api_key_env": "HF_TOKEN",
                      "api_key_required": True, "visitor_token": True, "timeout_s": 10},
        # a local vLLM-like server: its model found on /v1/models, its key (none here) from the environment
        "local-vllm": {"base_url": other.base_url, "model": None, "api_key_env": "OTHER_KEY", "timeout_s": 10}})
    services = Services(config)
    debate(services, "local-vllm", token=PASTED, session="pasted")
    debate(services, "local-vllm", login=LOGIN, session="login")
    debate(services, "local-vllm", token=PASTED, login=LOGIN, session="both")
    assert other.hits == 6 and other.model_hits >= 1  # the debates ran, on the other server
    assert not {k for k in sent_keys(other) if k and (PASTED in k or LOGIN in k)}, sent_keys(other)
    # the Hugging Face backbone does get the visitor's token: a pasted one first, else the login's
    debate(services, "hf-router", token=PASTED, login=LOGIN, session="hf-pasted")
    debate(services, "hf-router", login=LOGIN, session="hf-login")
    assert [r.authorization for r in hf.requests] == [f"Bearer {PASTED}"] * 2 + [f"Bearer {LOGIN}"] * 2


def test_a_paid_backbone_on_a_space_refuses_a_pasted_token_and_calls_nothing(tmp_path, servers):
    hf, other = servers
    config = space_config(tmp_path, {
        "paid": {"base_url": other.base_url, "model": "vllm-model", "api_key_env": "PAID_KEY",
                 "api_key_required": True}}, PAID_KEY="sk-owner-" + "1" * 20)
    updates = debate(Services(config), "paid", token=PASTED, login=LOGIN)
    status = str(dict(zip(VIEW_NAMES, updates[-1]))["status"])
    assert "Backbone 'paid' needs the owner's PAID_KEY, which visitors may not use here" in status, status
    assert other.hits == other.model_hits == 0 and PASTED not in repr(updates)


def test_the_token_field_shows_only_for_backbones_that_take_a_visitors_token():
    from r2mad.ui.debate_form import needs_token

    config = load_config(env={})
    assert {n for n in config.backbones if needs_token(config, n)} == {
        "qwen2.5-7b", "qwen3-8b", "gemma-3-4b", "llama-3.3-70b"}  # the HF router's, not OpenAI's or vLLM's


def test_visitor_token_without_a_key_variable_is_refused_in_one_sentence(tmp_path):
    with pytest.raises(ConfigError) as caught:
        space_config(tmp_path, {"odd": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "visitor_token": True}})
    assert "odd.visitor_token is true but the backbone names no api_key_env" in str(caught.value)
    assert str(caught.value).count(". ") == 0
