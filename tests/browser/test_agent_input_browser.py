""""What this agent saw" in real headless Chromium: an annotator opens a failed R²-MAD run (debated on the scripted
server, with a memory bank) in Inspect, unfolds a round-2 turn and reads the messages its agent received — the
same, byte for byte, as the request in the server's own log — and the diff against its previous round; then the
same in the exported HTML file with JavaScript off. Screenshots (1440 and 390 wide) go to screenshots/."""
from __future__ import annotations

import difflib
import shutil

import pytest
import yaml

from r2mad.cli import main
from r2mad.settings.config import load_config
from r2mad.ui import build_app
from testing.scripted_server import FakeServer, ok
from tests.browser import SHOTS, click_until_shown, launch  # skips without Chromium
from tests.helpers import ROOT, make_bank

pytestmark = pytest.mark.slow
QUESTION = ["--question", "Which planet has the most moons?", "--option", "A=Venus", "--option", "B=Saturn",
            "--gold", "B"]
SAW = "details.saw-r2-a1"  # agent 2's turn of round 2


def reply(body):
    if body["messages"][0]["content"].startswith("You describe the state"):
        return ok("The agents agree; nobody moved.")
    said = sum(m["role"] == "assistant" for m in body["messages"])  # the agent's round: peers change each round
    return ok(f"Venus has many moons, I believe (round {said}).\n\nSo ((A))")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("saw")
    with FakeServer(models=["fake-model"], responder=reply) as server:
        configs = tmp / "configs"
        shutil.copytree(ROOT / "configs", configs)
        (configs / "backbones.yaml").write_text(yaml.safe_dump({"default": "fake", "backbones": {
            "fake": {"base_url": server.base_url, "model": "fake-model", "timeout_s": 5, "max_retries": 0}}}))
        app = yaml.safe_load((configs / "app.yaml").read_text())
        app.update(embedder="hash-64", memory_dirs=[str(tmp / "memory")], default_bank=None, data_dir=str(tmp / "var"))
        (configs / "app.yaml").write_text(yaml.safe_dump(app))
        make_bank(tmp / "memory")
        assert main(["--config-dir", str(configs), "debate", "--method", "r2mad", *QUESTION, "--rounds", "3",
                     "--no-early-stop", "--bank", str(tmp / "memory" / "tiny")]) == 0
        config = load_config(configs, env={})
        demo = build_app(config)
        [run] = demo.r2mad_services.store.list_runs()
        assert run.correct is False and run.method == "r2mad"
        out = tmp / "run.html"
        assert main(["--config-dir", str(configs), "export-html", run.id, "--out", str(out)]) == 0
        yield launch(demo), run.id, [r.body["messages"] for r in server.requests], out
        demo.close()


def open_turn(page, chat: str) -> None:
    """Unfold round 2's turn of agent 2 in `chat` (clicked again while a late update of the chat folds it), then
    its "what this agent saw" block."""
    click_until_shown(page.locator(chat).get_by_text("Agent 2 ·").last.click, page.locator(f"{SAW} > summary").first,
                      timeout=30_000)
    page.locator(f"{SAW} > summary").first.click()


def messages_shown(page) -> list[str]:
    """Each message of the open block as the page's text: its parts joined."""
    block = page.locator(SAW).first
    return ["".join(part.text_content() for part in message.locator("pre.saw-part").all())
            for message in block.locator("div.saw-message").all()]


def check_block(page, sent) -> None:
    shown = messages_shown(page)
    contents = [[m["content"] for m in messages] for messages in sent]
    assert shown in contents, "the page's messages match no request the server received"
    assert [m["role"] for m in sent[contents.index(shown)]] == ["system", "user", "assistant", "user", "assistant",
                                                                 "user"]
    assert "Retrieved case 1" in page.locator(SAW).first.inner_text()
    page.locator(f"{SAW} details.saw-diff > summary").first.click()
    told = page.locator(f"{SAW} details.saw-diff").first.inner_text()
    assert "Compared: messages 1–4 as then, 2 added; the new message 6 against message 4 of then." in told
    now = sent[contents.index(shown)]
    [then] = [m for m in sent if m[:4] == now[:4] and len(m) == 4]  # the same agent's round-1 request
    expected = list(difflib.unified_diff(then[3]["content"].split("\n"), now[5]["content"].split("\n"),
                                         lineterm="", n=2))[2:]
    assert "-Venus has many moons, I believe (round 0)." in expected  # the peers' round-1 words left
    assert page.locator(f"{SAW} details.saw-diff pre").first.text_content().split("\n")[-len(expected):] == expected


def test_inspect_shows_the_exact_messages_and_the_diff(world, browser):
    url, run, sent, _ = world
    SHOTS.mkdir(exist_ok=True)
    for width in (1440, 390):
        page = browser.new_page(viewport={"width": width, "height": 1400})
        page.goto(url)
        page.get_by_role("tab", name="Inspect").click()
        page.locator("#run-id textarea, #run-id input").first.fill(run)
        page.get_by_role("button", name="Open", exact=True).click()
        open_turn(page, "#inspect-chat")
        check_block(page, sent)
        page.locator(SAW).first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"saw-inspect-{width}.png"))
        page.close()


def test_the_exported_file_shows_them_with_javascript_off(world, browser):
    _, _, sent, out = world
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1440, "height": 1400})
    page = context.new_page()
    page.goto(out.as_uri())
    page.locator("summary", has_text="Agent 2 ·").nth(2).click()  # round 2's turn of agent 2
    page.locator(f"{SAW} > summary").first.click()
    check_block(page, sent)
    page.locator(SAW).first.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "saw-export-1440.png"))
    context.close()


def test_the_annotate_workbench_shows_them_too(world, browser):
    url, run, sent, _ = world
    page = browser.new_page(viewport={"width": 1440, "height": 1400})
    page.goto(url + f"?run={run}")
    page.wait_for_selector("#ann-panel", state="attached", timeout=60_000)
    open_turn(page, "#ann-chat")  # round 2's turn, a message of its own
    check_block(page, sent)
    page.locator(SAW).first.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "saw-annotate-1440.png"))
    reply = page.locator("#ann-chat").get_by_text("Venus has many moons, I believe (round 2).")
    reply.locator("visible=true").first.click()
    page.locator("#ann-turn").filter(has_text="round 2 · agent 2").wait_for(timeout=60_000)  # a click on the reply
    assert page.locator("#ann-turn").inner_text().count("round 2 · agent 2") == 1  # the reading clicks blamed none
    page.close()
