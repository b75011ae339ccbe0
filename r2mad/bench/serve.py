"""`python -m r2mad bench --serve`: what the OpenAI-compatible server adds to a debate (r2mad/serving/), on a
scripted backbone with a fixed latency per call: one debate asked over HTTP against the same debate started
directly through the same line and run service, N requests at once, and one request for N debates (`n`). Figures,
not timed tests."""
from __future__ import annotations

import asyncio
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from r2mad.bench.speed import TASK, reply_for
from r2mad.methods import PLAIN
from r2mad.settings.config import Backbone, load_config

QUESTION = "\n".join([TASK.question, *(f"{letter}) {text}" for letter, text in TASK.options)])


def _config(base_url: str, data_dir: Path, concurrent: int):
    config = load_config(env={"R2MAD_DATA_DIR": str(data_dir)})
    bench = Backbone(name="bench", base_url=base_url, model="bench", timeout_s=60, max_retries=0)
    app = dataclasses.replace(config.app, private_runs="off", default_bank=None,
                              remote_concurrency_limit=max(concurrent, config.app.remote_concurrency_limit),
                              max_queue=max(concurrent, config.app.max_queue))
    return dataclasses.replace(config, backbones={**config.backbones, "bench": bench}, default_backbone="bench",
                               app=app, settings=config.settings.replace(early_stop=False))


async def _direct(served, repeats: int) -> list[float]:
    """Debates started as the server starts them, without HTTP: wall seconds each."""
    from r2mad.serving.model_names import parse_model

    body = {"model": f"{PLAIN}@bench", "messages": [{"role": "user", "content": QUESTION}]}
    walls = []
    for _ in range(repeats + 1):  # the first warms up (imports, the store, the client) and is not counted
        request, _ = served.request_for(body, parse_model(body["model"], served.services.config), 0)
        t0 = time.perf_counter()
        await served.debate(request, lambda rnd: None, None)
        walls.append(time.perf_counter() - t0)
    return walls[1:]


async def _over_http(url: str, repeats: int, concurrent: int) -> tuple[list[float], float, float]:
    """Debates asked of the server one after another (wall seconds each), then `concurrent` at once (total s), then
    one request for `concurrent` debates (s)."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url + "/v1", api_key="bench", max_retries=0, timeout=600)

    async def ask(n: int = 1) -> float:
        t0 = time.perf_counter()
        await client.chat.completions.create(model=f"{PLAIN}@bench", n=n,
                                             messages=[{"role": "user", "content": QUESTION}])
        return time.perf_counter() - t0
    walls = [await ask() for _ in range(repeats + 1)][1:]  # the first warms up
    t0 = time.perf_counter()
    await asyncio.gather(*(ask() for _ in range(concurrent)))
    return walls, time.perf_counter() - t0, await ask(concurrent)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_figures(latency_s: float, repeats: int = 3, concurrent: int = 8) -> list[dict]:
    from r2mad.bench.scripted.server import FakeServer
    from r2mad.serving.loopback import ServerThread
    from r2mad.serving.openai_server import Served, create_app
    from r2mad.serving.services import Services

    def responder(body):
        behaviour = reply_for(body)
        behaviour.latency_s = latency_s
        return behaviour

    with FakeServer(models=["bench"], responder=responder) as backbone, tempfile.TemporaryDirectory() as tmp:
        config = _config(backbone.base_url, Path(tmp), concurrent)
        direct = Served(Services(config), key=None, key_required=False)
        direct_walls = asyncio.run(_direct(direct, repeats))
        calls = backbone.hits // (repeats + 1)
        served = Served(Services(config), key=None, key_required=False)
        with ServerThread(create_app(served), _free_port()) as url:
            http_walls, together, as_n = asyncio.run(_over_http(url, repeats, concurrent))
    base, over = statistics.median(direct_walls), statistics.median(http_walls)
    return [
        {"figure": f"one MAD debate started directly ({calls} calls, median of {repeats})", "value": f"{base:.3f} s"},
        {"figure": "the same debate asked over HTTP (chat completion, median)", "value": f"{over:.3f} s"},
        {"figure": "server overhead (target <= 5 % of the debate's wall)",
         "value": f"{over - base:+.3f} s ({100 * (over - base) / base:+.1f} %)"},
        {"figure": f"{concurrent} requests at once: all answered after (target <= 1.3 x one debate)",
         "value": f"{together:.2f} s"},
        {"figure": f"{concurrent} requests at once: throughput",
         "value": f"{concurrent / together * 60:.1f} debates/min ({together / base:.2f} x one debate's wall)"},
        {"figure": f"one request with n={concurrent} (target <= 1.3 x one request alone)",
         "value": f"{as_n:.3f} s ({as_n / over:.2f} x one request alone)"},
    ]
