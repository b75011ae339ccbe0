"""The owner's allowance in a real browser, as an anonymous visitor on a Space: the page says what is left (calls
and dollars), each debate on the Hugging Face router's backbone is paid with the owner's token and counted, and
past the allowance one sentence offers sign-in and nothing more is sent. The router is the scripted server on
loopback (R2MAD_HF_ROUTER_URL); no real Hugging Face call is made."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from app import serve  # noqa: E402
from r2mad.settings.config import load_config  # noqa: E402
from testing.scripted_server import FakeServer, ok  # noqa: E402
from tests.browser import SHOTS, sync_api  # noqa: E402  (skips without Chromium)
from tests.helpers import free_port  # noqa: E402

pytestmark = pytest.mark.slow  # a real browser and app

ROOT = Path(__file__).resolve().parents[2]
OWNER = "hf_" + "OwnerBrowserAllowance" + "5" * 12  # token-shaped, built: no real token


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("allowance")
    with FakeServer(models=["m"], responder=lambda body: ok("Two and two make \\boxed{4}.", prompt_tokens=200,
                                                              completion_tokens=50)) as srv:
        configs = tmp / "configs"
        configs.mkdir()
        for name in ("methods.yaml", "annotation.yaml"):
            (configs / name).write_text((ROOT / "configs" / name).read_text())
        shipped = yaml.safe_load((ROOT / "configs" / "backbones.yaml").read_text())["backbones"]
        (configs / "backbones.yaml").write_text(yaml.safe_dump({"default": "qwen2.5-7b", "backbones": {
            "qwen2.5-7b": {**shipped["qwen2.5-7b"], "timeout_s": 10, "max_retries": 0},
            "smollm2-135m": shipped["smollm2-135m"]}}))
        app = yaml.safe_load((ROOT / "configs" / "app.yaml").read_text())
        app["allowance"] = {"enabled": True, "visitor_calls": 6, "visitor_usd": 0.05}
        (configs / "app.yaml").write_text(yaml.safe_dump({**app, "default_bank": None}))
        before = os.environ.get("HF_TOKEN")
        os.environ["HF_TOKEN"] = OWNER  # the Space's secret
        config = load_config(configs, env={**os.environ, "SPACE_ID": "someone/r2mad-studio",
                                           "R2MAD_DATA_DIR": str(tmp / "var"), "R2MAD_HF_ROUTER_URL": srv.base_url})
        port = free_port()
        demo = serve(config, port=port, block=False, warm=False)
        yield f"http://127.0.0.1:{port}/", srv
        demo.close()
        if before is None:
            os.environ.pop("HF_TOKEN", None)
        else:
            os.environ["HF_TOKEN"] = before


def open_page(browser, url: str, width: int, height: int):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    page.wait_for_selector("#question textarea", timeout=60_000)
    return page


def allowance(page) -> str:
    return page.locator("#allowance").inner_text()


def run(page, question: str) -> None:
    page.locator("#question textarea").fill(question)
    page.click("#run")
    sync_api.expect(page.locator("#run")).to_be_enabled(timeout=60_000)  # the debate has ended (or was refused)


def test_an_anonymous_visitor_sees_what_is_left_and_past_it_the_sign_in_sentence(space, browser):
    url, srv = space
    SHOTS.mkdir(exist_ok=True)
    page = open_page(browser, url, 1440, 900)
    line = page.locator("#allowance")
    sync_api.expect(line).to_contain_text("6 model calls and $0.0500 left today", timeout=30_000)
    page.screenshot(path=str(SHOTS / "i31-models-allowance-1440.png"))

    run(page, "What is 2+2?")  # three agents agree in round 0: three calls
    sync_api.expect(line).to_contain_text("3 model calls and", timeout=30_000)
    assert srv.hits == 3 and {r.authorization for r in srv.requests} == {f"Bearer {OWNER}"}
    # 3 calls x (200 prompt + 50 completion tokens) at the unpriced $1 per million = $0.00075 spent
    assert "$0.0493 left today" in allowance(page)
    page.screenshot(path=str(SHOTS / "i31-models-allowance-after-run-1440.png"), full_page=True)

    run(page, "What is 2+2, again?")
    sync_api.expect(line).to_contain_text("sign in with Hugging Face", timeout=30_000)
    page.locator("#question textarea").fill("And once more?")
    page.click("#run")  # refused before any call
    sync_api.expect(page.locator("#final")).to_contain_text(
        "Not started: Your free allowance on this Space's account is used up for today", timeout=30_000)
    assert srv.hits == 6
    page.screenshot(path=str(SHOTS / "i31-models-allowance-spent-1440.png"), full_page=True)
    assert OWNER not in page.content()

    phone = open_page(browser, url, 390, 844)  # another browser: another visitor, their own allowance
    sync_api.expect(phone.locator("#allowance")).to_contain_text("6 model calls", timeout=30_000)
    phone.screenshot(path=str(SHOTS / "i31-models-allowance-390.png"), full_page=True)
