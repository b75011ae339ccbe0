"""The app's process-wide services: the shared resources of r2mad/serving/shared.py (run store, banks, backends)
plus what belongs to visitors' browser sessions: the stop signal of each session's running debate, the line
for debates (admission) and the key their browser's visitor id is kept with."""
from __future__ import annotations

import asyncio
import os
import secrets as random_secrets
from pathlib import Path
from typing import Any, Callable, Iterable

from r2mad.serving.admission import Ticket
from r2mad.serving.line import in_line, make_admission
from r2mad.serving.sealed import Sealed
from r2mad.serving.shared import Shared, VisitorResources
from r2mad.settings.config import Config


class Services(Shared):
    def __init__(self, config: Config, *, secrets: Iterable[str] = ()):
        super().__init__(config, secrets=secrets)
        self._active: dict[str, tuple[asyncio.Event, Any]] = {}  # session -> (stop signal, its loop)
        self.admission = make_admission(config)  # which debates run now, and the fair line of the others
        self.sealed = Sealed()  # runs of blind comparisons waiting for their vote (serving/sealed.py)
        self.notes: dict[str, list[str]] = {}  # session -> a visitor's notes for its running debate (moderator_box)
        self.noted: dict[str, int] = {}  # session -> characters of notes sent to its running debate (budget.py)

    def in_line(self, key: str, *, token: str | None = None, login_token: str | None = None,
                waiting: Callable[[Ticket], None] | None = None) -> VisitorResources:
        """The engine's resources for one visitor's request, which waits in the line for debates as `key` (who
        they are to the line and to the owner's allowance); `waiting` gets its ticket at once."""
        line = in_line(self.admission, self.config, key, waiting=waiting)
        return self.resources(token, login_token, key, line=line)

    def browser_secret(self) -> str:
        """The key gr.BrowserState encrypts the visitor id with in the browser. Gradio sends it to every page
        (in /config), so it protects nothing: the id alone is the visitor's identity, like a password their
        browser keeps. It is kept in the data folder only so that ids stored before a restart still read back."""
        path = Path(self.config.app.data_dir) / "browser-secret"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(random_secrets.token_hex(32))
        return path.read_text().strip()

    # --- one debate per browser session ---------------------------------------------------------

    def begin(self, session: str) -> asyncio.Event | None:
        """Mark a debate as running in this session; returns its stop signal, or None when one is
        already running there. Call from the event loop the debate runs on."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            if session in self._active:
                return None
            self._active[session] = (asyncio.Event(), loop)
            return self._active[session][0]

    def request_stop(self, session: str) -> bool:
        """Ask the debate running in this session to stop (from any thread)."""
        with self._lock:
            entry = self._active.get(session)
        if entry is None:
            return False
        stop, loop = entry
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(stop.set)
        else:
            stop.set()
        return True

    def end(self, session: str) -> None:
        with self._lock:
            self._active.pop(session, None)
            self.notes.pop(session, None)
            self.noted.pop(session, None)
