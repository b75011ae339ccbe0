"""What every Annotate handler shares: the services and label book, who the annotator is, the chosen
queue, and the chat every turn of which can be clicked. Handlers are in annotate_handlers.py (a run and
its labels) and annotate_tools.py (queues, adjudication, agreement, compare, export)."""
from __future__ import annotations

import gradio as gr

from r2mad.annotation.book import LabelBook
from r2mad.annotation.queues import Queue, get_queue, queues
from r2mad.serving.identity import current_annotator
from r2mad.serving.services import Services
from r2mad.ui.errors import refusal
from r2mad.ui.handlers import warn
from r2mad.ui.render.chat import chat_messages, esc

ANY = "any"
Req, Profile, Token = gr.Request, gr.OAuthProfile | None, gr.OAuthToken | None  # injected by Gradio
FLAGS = ("shared misconception", "correct→wrong flip", "parse failures")


class AnnotateBase:
    def __init__(self, services: Services):
        self.services = services
        self.book = LabelBook(services.store)
        self.hub_endpoint: str | None = None  # None: huggingface_hub's own (HF_ENDPOINT or the Hub)

    @property
    def store(self):
        return self.services.store

    def queue_names(self) -> list[str]:
        return list(queues(self.store))

    def _queue(self, name: str | None) -> Queue | None:
        if not (name or "").strip():
            return None
        try:
            return get_queue(self.store, name)
        except KeyError as exc:
            warn(exc.args[0])
            return None

    def _me(self, typed, visitor_id, request, profile, oauth_token) -> str:
        """The annotator of this request (see identity.current_annotator); on a public Space only
        its allow-listed annotators, signed in, may use the tab."""
        name = current_annotator(self.services.config, request, typed, browser_id=visitor_id, profile=profile,
                                 token=oauth_token)
        if name is None:
            raise refusal("The Annotate tab is for this Space's annotators; sign in with Hugging Face as one "
                          "of them (the Space's owner lists them in R2MAD_ANNOTATORS).")
        return name


def flat_chat(transcript) -> list[dict]:
    """The Inspect chat with every agent turn as its own message (not folded under its round), so a
    click on a turn reports that turn."""
    if transcript is None:
        return []
    return [{**m, "metadata": {k: v for k, v in m["metadata"].items() if k != "parent_id"}}
            for m in chat_messages(transcript)]


def final_text(final) -> str:
    if final is None:
        return "*No final labels yet.*"
    return f"Final labels by **{esc(final.adjudicator)}**: " + (", ".join(final.labels) or "none")
