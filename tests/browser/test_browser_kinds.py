"""The answer-kind chip in a real headless Chromium: it follows the question as it is typed, says what
"agree" means, and "change" picks another kind, which the debate then runs under (scripted backbone: the
chip and the request, not a model, are under test here)."""
from __future__ import annotations

import shutil

import pytest
import yaml

from r2mad.settings.config import load_config
from r2mad.ui import build_app
from tests.browser import SHOTS, served_page  # skips without Chromium
from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # a browser


@pytest.fixture(scope="module")
def app(tmp_path_factory, browser):
    from testing.scripted_server import FakeServer, ok

    tmp = tmp_path_factory.mktemp("kinds")
    reply = ok("I weighed both.\nFinal answer: Learn Go first.")
    with FakeServer(models=["fake"], responder=lambda body: reply) as srv:
        shutil.copytree(ROOT / "configs", tmp / "configs")
        (tmp / "configs" / "backbones.yaml").write_text(yaml.safe_dump(
            {"default": "fake", "backbones": {"fake": {"base_url": srv.base_url, "model": "fake"}}}))
        config = load_config(tmp / "configs", env={"R2MAD_DATA_DIR": str(tmp / "var")})
        demo = build_app(config)
        with served_page(browser, demo) as page:
            yield page, demo.r2mad_services


def chip_says(page, text: str) -> None:
    page.wait_for_function(f"document.querySelector('#kind-chip').innerText.includes({text!r})", timeout=30_000)


def test_the_chip_guesses_as_the_visitor_types_and_change_picks_another_kind(app):
    page, services = app
    for question, label in (("Is a hot dog a sandwich?", "yes or no"), ("What is the capital of Australia?",
                                                                        "short answer"),
                            ("Should I learn Rust or Go first?", "open question")):
        page.fill("#question textarea", question)
        chip_says(page, f"Answer kind: {label} (guessed from the question)")
    assert "Agree = the same position: the same wording" in page.inner_text("#kind-chip")
    page.fill("#question textarea", "Is a hot dog a sandwich?")
    chip_says(page, "yes or no")
    assert not page.locator("#kind").is_visible()
    page.click("#kind-change")
    page.locator("#kind input").click()
    page.get_by_role("option", name="open question").click()
    chip_says(page, "Answer kind: open question")
    assert "guessed" not in page.inner_text("#kind-chip")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "kinds-chip-changed.png"))
    page.click("#run")
    page.wait_for_function("document.querySelector('#final').innerText.includes('Final answer: Learn Go first')",
                           timeout=120_000)
    assert "Answer kind: open question · consensus 1.00" in page.inner_text("#final")
    [record] = services.store.list_runs(limit=1)
    assert record.question == "Is a hot dog a sandwich?"
    assert services.store.get_run(record.id).transcript.task.kind == "open"
