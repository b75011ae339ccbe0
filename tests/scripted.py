"""The tests' scripted backend (r2mad/backends/scripted.py) and the helpers their replies use."""
from __future__ import annotations

from r2mad.backends.base import BackendError
from r2mad.backends.scripted import Call, ScriptedBackend  # noqa: F401 - the tests import them from here


def last_user(messages) -> str:
    return next(m.content for m in reversed(messages) if m.role == "user")


def persona_of(messages) -> str:
    return messages[0].content


def fail(text="The endpoint is down; try later.") -> BackendError:
    return BackendError(text, transient=True)
