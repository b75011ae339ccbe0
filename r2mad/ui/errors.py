"""A visitor's expected mistake as the gr.Error that shows it: logged as one line, without the traceback
Gradio prints for every gr.Error unless told not to. Not for bugs: unexpected errors keep their traceback."""
from __future__ import annotations

import logging

import gradio as gr

from r2mad.runs.records import scrub
from r2mad.text import without_paths

log = logging.getLogger("r2mad.ui")


def refusal(message: str) -> gr.Error:
    """The gr.Error to raise for `message` (one sentence a visitor can act on); the server log gets it as one
    line, with anything shaped like a Hugging Face token redacted. No folder of the server is shown (without_paths)."""
    message = without_paths(message)
    log.warning("Refused a request: %s", " ".join(str(scrub(message)).split()))
    return gr.Error(message, print_exception=False)


def sentence(exc: BaseException) -> str:
    """What a refused request says: the exception's text (a KeyError's without the quotes repr adds)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
