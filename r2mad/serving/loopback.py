"""The served model on a port in a background thread (uvicorn), for `bench --serve` and the tests; `python -m r2mad
serve` runs the same app in the foreground. Waits until the server answers, bounded."""
from __future__ import annotations

import threading
import time

LOOPBACK = ("127.0.0.1", "localhost", "::1")
START_S = 60.0


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


class ServerThread:
    """`with ServerThread(app, port) as url:` serves `app` at http://127.0.0.1:port until the block ends."""

    def __init__(self, app, port: int, host: str = "127.0.0.1"):
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, name="serve", daemon=True)
        self.url = f"http://{host}:{port}"

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + START_S
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"The served model did not start at {self.url} within {START_S:g} s.")
            time.sleep(0.02)
        return self.url

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
