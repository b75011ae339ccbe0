"""The Gradio layer: layout, event handlers and pure renderers from transcripts to components.
Importing this package does not import Gradio; `build_app` does."""
from __future__ import annotations

from typing import Any


def build_app(*args: Any, **kwargs: Any):
    """Build the Gradio Blocks app (see r2mad.ui.layout.build_app)."""
    from r2mad.ui.layout import build_app as build

    return build(*args, **kwargs)


__all__ = ["build_app"]
