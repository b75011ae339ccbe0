"""Who is annotating: the one place the workbench asks for the annotator's name. Today it is the
name typed in the tab, or "local"; a Hugging Face login can be wired in here later."""
from __future__ import annotations

from typing import Any

LOCAL = "local"


def current_annotator(request: Any, typed: str | None) -> str:
    """The annotator of this browser request: the typed name (trimmed), else "local".
    `request` (a gr.Request) is unused today; the login will read the signed-in user from it."""
    return " ".join((typed or "").split())[:80] or LOCAL
