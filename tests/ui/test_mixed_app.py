"""Mixed-model debates in the app, against scripted OpenAI-compatible servers on loopback: through the
Debate tab's event (gradio_client) each server receives exactly its agents' calls, the run is saved with
the mix and Rerun fills the per-agent form with it; the public `run_debate` endpoint takes
`agent_backbones`; a pasted token reaches only the Hugging Face backbone; and in headless Chromium the
Mixed-models controls at 1440×900 and 390×844, and a mixed run that shows each agent's model."""
from __future__ import annotations

import dataclasses
import os
import shutil

import pytest
import yaml

pytest.importorskip("gradio_client")

from r2mad.prompts.common import PERSONAS  # noqa: E402
from r2mad.settings.config import load_config  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.debate_form import MAX_AGENTS  # noqa: E402
from testing.scripted_server import FakeServer, ok  # noqa: E402
from tests.helpers import ROOT  # noqa: E402
from tests.ui_client import PatientClient as Client  # noqa: E402
from tests.ui_client import UIClient, debate_outputs, rerun_values  # noqa: E402

pytestmark = pytest.mark.slow  # loopback servers, the app, a browser
SYSTEMS = [text for _, text in PERSONAS["mcq"]]
QUESTION = dict(question="Largest planet?", option_a="Mars", option_b="Jupiter", option_c="Venus", gold="B")
FORM = dict(methods=["mad"], bank="", agents=3, rounds=3, max_tokens=64, seed=0, **QUESTION)


def stubborn(body):
    """Agent i always answers option "ABC"[i], so a debate never stops early; anything else says B."""
    system = body["messages"][0]["content"]
    letter = "ABC"[SYSTEMS.index(system)] if system in SYSTEMS[:3] else "B"
    return ok(f"I keep my answer. (({letter}))", prompt_tokens=50, completion_tokens=5, latency_s=0.4)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from tests.browser import launch

    tmp = tmp_path_factory.mktemp("mixed")
    with FakeServer(responder=stubborn) as left, FakeServer(responder=stubborn) as right, \
            FakeServer(responder=stubborn) as hf:
        configs = tmp / "configs"
        shutil.copytree(ROOT / "configs", configs)
        backbones = yaml.safe_load((configs / "backbones.yaml").read_text())
        server = {"model": "m", "timeout_s": 10, "max_retries": 0}
        backbones["backbones"].update({
            "left": {**server, "label": "Left test server", "base_url": left.base_url, "price_input_per_m": 2.0,
                     "price_output_per_m": 4.0},
            "right": {**server, "label": "Right test server", "base_url": right.base_url},
            "hf": {**server, "label": "HF-keyed test server", "base_url": hf.base_url, "api_key_env": "HF_TOKEN",
                   "api_key_required": True, "visitor_token": True}})
        backbones["default"] = "left"
        (configs / "backbones.yaml").write_text(yaml.safe_dump(backbones))
        env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"}
        config = load_config(configs, env={**env, "R2MAD_DATA_DIR": str(tmp / "var")})
        config = dataclasses.replace(config, app=dataclasses.replace(config.app, default_bank=None,
                                                                     embedder="hash-64"))
        demo = build_app(config)
        url = launch(demo)
        yield url, demo.r2mad_services, {"left": left, "right": right, "hf": hf}
        demo.close()


@pytest.fixture
def servers(served):
    for srv in served[2].values():
        srv.hits = 0
        srv.requests.clear()
    return served[2]


def debate(url, **kw) -> dict:
    return debate_outputs(UIClient(url, verbose=False).predict(**{**FORM, **kw}, api_name="/debate"))


def value(output):
    if isinstance(output, dict) and output.get("__type__") == "update":
        return output.get("value", "(skipped)")
    return output


def test_a_mixed_debate_sends_each_agents_calls_to_its_server_and_rerun_fills_the_form(served, servers):
    url, services, _ = served
    out = debate(url, mixed_models=True, agent_1="left", agent_2="right", agent_3="left")
    t = out["json"]["mad"]
    assert t["status"] == "done" and len(t["rounds"]) == 3  # nobody agrees: all 3 rounds
    assert (servers["left"].hits, servers["right"].hits) == (6, 3)
    assert {r.body["messages"][0]["content"] for r in servers["right"].requests} == {SYSTEMS[1]}
    assert [[x["backbone"] for x in r["turns"]] for r in t["rounds"]] == [["left", "right", "left"]] * 3
    # left: 6 calls × (50 × $2 + 5 × $4) per M = 6 × $0.00012; right has no price, so the total is unknown
    assert "mad on left (agents 1, 3), right (agent 2)" in out["status"]
    assert "495 tokens (cost unknown: no price for right)" in out["status"]
    assert ("By model: left 6 calls · 330 tokens ($0.000720); right 3 calls · 165 tokens (price unknown)"
            in out["status"])
    assert value(out["scoreboard"]).count("agent-model'") == 3
    titles = [m["metadata"].get("title") or "" for m in value(out["chat"])]
    assert sum("Agent 2 · " in x and " · on right —" in x for x in titles) == 3
    [saved] = services.store.list_runs(limit=1)
    assert saved.backbone == "left,right,left" and saved.source == "app"

    filled = UIClient(url, verbose=False).predict(saved.id, api_name="/rerun")
    mix = {name: value(v) for name, v in rerun_values(filled).items()}
    assert mix["mixed_models"] is True and mix["aux_backbone"] == ""
    assert [mix[f"agent_{i}"] for i in (1, 2, 3)] == ["left", "right", "left"]

    servers["left"].hits = servers["right"].hits = 0  # side by side: the mix applies to the debate only
    out = debate(url, methods=["mad", "cot"], agents=2, mixed_models=True, agent_1="right", agent_2="left",
                 aux_backbone="left")
    assert out["json"]["mad"]["status"] == out["json"]["cot"]["status"] == "done"
    assert (servers["right"].hits, servers["left"].hits) == (3 + 1, 3)  # cot runs on agent 1's backbone
    assert {r.backbone for r in services.store.list_runs(limit=2)} == {"right,left", "right"}


def test_mixed_models_refuse_bad_input_in_one_sentence_and_run_nothing(served, servers):
    url = served[0]
    for kw, sentence in (({"agent_2": "hf"}, "Backbone 'hf' needs an API token: set HF_TOKEN or paste a token"),
                         ({"base_url": servers["right"].base_url},
                          "Mixed models use the listed backbones; clear the custom endpoint")):
        out = debate(url, mixed_models=True, **{"agent_1": "left", "agent_2": "right", "agent_3": "left", **kw})
        assert out["status"].startswith("Not started: ") and sentence in out["status"], out["status"]
    assert sum(s.hits for s in servers.values()) == 0


def test_a_pasted_token_reaches_only_the_hugging_face_backbone(served, servers):
    url, services, _ = served
    token = "hf_" + "Q" * 24
    out = debate(url, mixed_models=True, agent_1="left", agent_2="hf", agent_3="left", token=token)
    assert out["json"]["mad"]["status"] == "done" and servers["hf"].hits == 3
    assert {r.authorization for r in servers["hf"].requests} == {f"Bearer {token}"}
    assert all(token not in (r.authorization or "") for r in servers["left"].requests) and servers["left"].hits == 6
    assert token not in str(out)
    stored = b"".join(p.read_bytes() for p in services.store_path.parent.glob("runs.sqlite*"))
    assert token.encode() not in stored


def test_the_run_debate_endpoint_takes_agent_backbones(served, servers):
    client = Client(served[0], verbose=False)
    data = client.predict(question="Largest planet?", options={"A": "Mars", "B": "Jupiter", "C": "Venus"},
                          gold="B", method="mad", agent_backbones=["right", "left", "right"], api_name="/run_debate")
    assert [x["backbone"] for x in data["rounds"][0]["turns"]] == ["right", "left", "right"]
    assert data["backbone"] == "right"  # summaries, judges and advice: agent 1's by default
    assert data["usage_by_model"]["left"]["calls"] == servers["left"].hits == len(data["rounds"])
    hits = servers["left"].hits
    for names, sentence in ((["left", "right"], "2 agent backbones were given for 3 agents"),
                            (["left", "nope", "left"], "Unknown backbone 'nope'"),
                            (["left", "", "left"], "Agent 2 has no backbone")):
        with pytest.raises(Exception, match=sentence):
            client.predict(question="Largest planet?", method="mad", agent_backbones=names, api_name="/run_debate")
    assert servers["left"].hits == hits and servers["right"].hits == 2 * len(data["rounds"])


# --- headless Chromium ---------------------------------------------------------------------------

def open_mixed(browser, url, viewport):
    page = browser.new_page(viewport=viewport)
    page.goto(url)
    page.wait_for_selector("#question textarea", timeout=60_000)
    page.locator("#advanced").get_by_text("Advanced", exact=False).first.click()
    page.locator("#mixed-models input[type=checkbox]").check()
    page.locator("#agent-backbone-3").wait_for(timeout=60_000)
    return page


SEEN_RUNNING_WITH_MODELS = """() => {
  window.seenRunningWithModels = false;
  new MutationObserver(() => {
    const final = document.querySelector('#final');
    if (final && final.innerText.includes('running')
        && document.querySelectorAll('#scoreboard .agent-model').length === 3) window.seenRunningWithModels = true;
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_the_mixed_models_controls_and_a_mixed_run_in_chromium(browser, served, servers):
    from tests.browser import SHOTS

    SHOTS.mkdir(exist_ok=True)
    url = served[0]
    for viewport, name in (({"width": 1440, "height": 900}, "desktop"), ({"width": 390, "height": 844}, "phone")):
        page = open_mixed(browser, url, viewport)
        visible = [page.locator(f"#agent-backbone-{i + 1}").is_visible() for i in range(MAX_AGENTS)]
        assert visible == [True, True, True] + [False] * (MAX_AGENTS - 3)  # one per agent (Agents = 3)
        box = page.locator("#agent-backbone-1").bounding_box()
        assert 0 <= box["x"] and box["x"] + box["width"] <= viewport["width"]  # on screen, no sideways scroll
        page.locator("#agent-backbone-2").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"mixed-controls-{name}.png"))
        if name == "phone":
            page.close()
            continue
        page.locator("#agent-backbone-2 input").click()
        page.get_by_role("option", name="Right test server").click()
        page.fill("#question textarea", "Which planet is the largest?")
        page.get_by_text("Multiple-choice options", exact=False).click()
        for letter, text in (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus")):
            page.fill(f"#option-{letter} textarea, #option-{letter} input", text)
        page.fill("#gold textarea, #gold input", "B")
        page.evaluate(SEEN_RUNNING_WITH_MODELS)  # watches every change, however fast a busy machine shows them
        page.click("#run")
        page.locator("#final").get_by_text("Final answer: A — wrong (gold B)", exact=False).wait_for(timeout=60_000)
        assert page.evaluate("window.seenRunningWithModels")  # the models showed while the debate still ran
        final = page.locator("#final").inner_text()
        assert "on left (agents 1, 3), right (agent 2)" in final and "right 3 calls" in final
        models = page.locator("#scoreboard .agent-model").all_inner_texts()
        assert [m.strip("· ") for m in models] == ["left", "right", "left"]
        assert servers["right"].hits == 3 and servers["left"].hits == 6
        page.screenshot(path=str(SHOTS / "mixed-run-desktop.png"), full_page=True)
        page.close()
