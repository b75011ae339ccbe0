"""Who is annotating: the one place the workbench asks for the annotator's name. On a local install
it is the name typed in the tab, or "local"; on a public Space (private runs) it is the Hugging Face
login of an allow-listed annotator, and nobody else may annotate (see serving/visitors.py)."""
from __future__ import annotations

from typing import Any

from r2mad.serving.visitors import identify
from r2mad.settings.config import Config

LOCAL = "local"


def current_annotator(config: Config, request: Any, typed: str | None, *, browser_id: str | None = None,
                      profile: Any = None, token: Any = None) -> str | None:
    """The annotator behind a browser request, or None when this visitor may not annotate."""
    if not config.private_runs:
        return " ".join((typed or "").split())[:80] or LOCAL
    visitor = identify(config, browser_id=browser_id, session=getattr(request, "session_hash", None),
                       profile=profile, token=token)
    return visitor.username if visitor.annotator and visitor.username else None
