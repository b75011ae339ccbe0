import shutil
from pathlib import Path

import pytest
import yaml

from testing.scripted_server import FakeServer, ok

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Every writable path (run store, Qdrant indexes) goes to a temp dir; no test touches the repo."""
    monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def answer(body):
    """Every agent of the scripted server picks B."""
    return ok("Checked it twice. ((B))")


@pytest.fixture
def server():
    with FakeServer(models=["fake-model"], responder=answer) as srv:
        yield srv


@pytest.fixture
def config_dir(tmp_path, server):
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "backbones.yaml").write_text(yaml.safe_dump({"default": "fake", "backbones": {
        "fake": {"base_url": server.base_url, "model": "fake-model", "api_key_env": "R2MAD_TEST_TOKEN",
                 "visitor_token": True, "timeout_s": 30, "max_retries": 1},  # timeout: a hang guard
        "needs-token": {"base_url": server.base_url, "model": "fake-model", "api_key_env": "R2MAD_TEST_TOKEN",
                        "api_key_required": True, "visitor_token": True},
        "nowhere": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout_s": 0.5, "max_retries": 1},
    }}))
    return folder


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for a module of browser tests (tests/browser/__init__.py skips them where it is missing)."""
    from tests.browser import ARGS, CHROMIUM, sync_api

    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()
