"""The app as a public Space serves it (SPACE_ID set, launched by app.serve): no custom endpoints, no
files from memory/ or configs/, finite queue, our own error sentences only, and eight visitors at once
whose debates run side by side without crossing."""
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from app import serve
from r2mad.settings.config import load_config
from testing.scripted_server import FakeServer, ok
from tests.helpers import free_port
from tests.ui_client import UIClient as Client  # the UI events are undocumented
from tests.ui_client import debate_outputs

pytestmark = pytest.mark.slow  # real model, server, embedder or browser

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 8


CALLS = {"now": 0, "peak": 0}  # chat calls the scripted server is answering at once
CALLS_LOCK = threading.Lock()


def echo_question(body):
    """Each agent repeats the session tag of its question, so a crossed transcript would show; each call
    takes 0.3 s, and the server counts how many it answers at once."""
    text = body["messages"][1]["content"] if len(body["messages"]) > 1 else ""
    tag = text.split(":")[0]
    with CALLS_LOCK:
        CALLS["now"] += 1
        CALLS["peak"] = max(CALLS["peak"], CALLS["now"])
    try:
        time.sleep(0.3)
    finally:
        with CALLS_LOCK:
            CALLS["now"] -= 1
    return ok(f"{tag} says ((B))")


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("space")
    with FakeServer(models=["m"], responder=echo_question) as srv, \
            FakeServer(models=["m"]) as visitor_target:
        configs = tmp / "configs"
        configs.mkdir()
        for name in ("methods.yaml", "annotation.yaml"):
            (configs / name).write_text((ROOT / "configs" / name).read_text())
        (configs / "backbones.yaml").write_text(yaml.safe_dump({"backbones": {
            "fake": {"base_url": srv.base_url, "model": "m", "timeout_s": 60}}}))  # a hang guard
        app_cfg = yaml.safe_load((ROOT / "configs" / "app.yaml").read_text())
        (configs / "app.yaml").write_text(yaml.safe_dump({**app_cfg, "concurrency_limit": SESSIONS,
                                                          "default_bank": None}))
        config = load_config(configs, env={**os.environ, "SPACE_ID": "someone/r2mad-studio",
                                           "R2MAD_DATA_DIR": str(tmp / "var")})
        port = free_port()
        demo = serve(config, port=port, block=False)
        yield demo, f"http://127.0.0.1:{port}", srv, visitor_target
        demo.close()


def ask(client, question, **kw):
    args = dict(backbone="fake", methods=["mad"], bank="", agents=3, rounds=3, max_tokens=32, seed=0,
                question=question)
    out = client.predict(**{**args, **kw}, api_name="/debate")
    return out


def test_space_mode_settings(space):
    demo, base, _, _ = space
    config = demo.r2mad_services.config
    assert config.on_space and not config.app.allow_custom_endpoint
    assert demo._queue.max_size == config.app.max_queue  # a finite queue
    with urllib.request.urlopen(f"{base}/config") as page:
        assert '"show_error":false' in page.read().decode().replace(" ", "")


@pytest.mark.parametrize("target", [ROOT / "configs" / "app.yaml", ROOT / "memory" / "demo-mcq" / "manifest.yaml",
                                    "configs/app.yaml", "memory/demo-mcq/cases.jsonl", "../configs/app.yaml"])
def test_config_and_memory_files_are_not_served(space, target):
    _, base, _, _ = space
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{base}/gradio_api/file={target}")
    assert refused.value.code in (403, 404)


def test_a_visitor_cannot_point_the_server_at_an_address(space):
    demo, base, _, target = space
    out = ask(Client(base, verbose=False), "Which is right?", base_url=target.base_url, model="m")
    assert target.hits == 0 and "custom" in str(debate_outputs(out)["status"]).lower()


def test_eight_visitors_at_once_finish_without_crossing(space):
    _, base, _, _ = space
    results = {}
    clients = [Client(base, verbose=False) for _ in range(SESSIONS)]
    start = threading.Barrier(SESSIONS)
    CALLS["peak"] = 0

    def visit(i):
        start.wait()
        results[i] = ask(clients[i], f"Session {i}: which option is right? Give a short answer.")

    threads = [threading.Thread(target=visit, args=(i,)) for i in range(SESSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)  # a hang guard
    assert len(results) == SESSIONS
    for i, out in results.items():
        transcript = next(v for v in out if isinstance(v, dict) and "mad" in v)["mad"]
        assert transcript["status"] == "done" and transcript["task"]["question"].startswith(f"Session {i}:")
        texts = [turn["text"] for r in transcript["rounds"] for turn in r["turns"]]
        assert texts and all(text.startswith(f"Session {i} says") for text in texts)
    assert CALLS["peak"] > 3  # the debates ran side by side: more calls at once than one debate's 3 agents


def test_an_upload_over_the_limit_is_refused_by_the_server(space):
    """Gradio's upload route takes files from anyone; over the Your data tab's limit it refuses them (413)."""
    import httpx

    from r2mad.serving.own_eval import MAX_UPLOAD_BYTES

    _, base, _, _ = space
    with httpx.Client(timeout=120) as http:
        small = http.post(f"{base}/gradio_api/upload", files={"files": ("q.csv", b"question,answer\n1+1,2\n")})
        big = http.post(f"{base}/gradio_api/upload", files={"files": ("q.csv", b"x" * (MAX_UPLOAD_BYTES + 1))})
    assert small.status_code == 200 and big.status_code == 413
    assert "maximum allowed size" in big.text
