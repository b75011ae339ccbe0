"""On a public Space a visitor who is not signed in is the random id their browser keeps, and nothing more:
gr.BrowserState's key travels to every page, so the app must not claim the id is sealed. What the key does
give is continuity: an id stored before a restart still reads back after it."""
import pytest

pytest.importorskip("gradio")

from r2mad.serving.services import Services  # noqa: E402
from r2mad.serving.visitors import identify, kept_notice  # noqa: E402
from r2mad.settings.config import load_config  # noqa: E402
from r2mad.ui import build_app  # noqa: E402


@pytest.fixture
def space_config(config_dir, tmp_path):
    return load_config(config_dir, env={"SPACE_ID": "someone/r2mad-studio", "R2MAD_DATA_DIR": str(tmp_path / "v")})


def test_the_browser_id_alone_is_the_identity_and_the_page_says_so(space_config):
    an_id = "a" * 32
    # the same id from another page session (another browser, a script) is the same visitor
    assert identify(space_config, browser_id=an_id, session="one").owner == \
        identify(space_config, browser_id=an_id, session="two").owner == f"browser:{an_id}"
    assert identify(space_config, browser_id="b" * 32, session="one").owner != f"browser:{an_id}"
    notice = kept_notice(space_config)
    assert "works like a password" in notice and "sealed" not in notice


def test_browserstates_key_is_published_to_pages_and_survives_a_restart(space_config):
    services = Services(space_config)
    secret = services.browser_secret()
    page_config = str(build_app(space_config, services=services).get_config_file())
    assert secret in page_config  # every visitor's page holds it: it protects nothing
    assert Services(space_config).browser_secret() == secret  # a restart keeps stored ids readable
