"""Who is asking, and what they may read. On a local install every visitor reads every run and may
annotate. On a public Space (`Config.private_runs`) each visitor reads and reruns only their own runs,
kept under their Hugging Face login when signed in, else under a random id their browser keeps
(`gr.BrowserState`); annotators from the allow-list, signed in, read every run and label as themselves.
That id is bound to nothing else: BrowserState's encryption key is sent to every page, and the id reaches
the handlers as an input, so whoever presents it (a copy of the browser's storage, a script) reads those
runs. It is unguessable (128 random bits), not secret from the browser that holds it; signing in is the
stronger identity."""
from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from r2mad.settings.config import Config

KEPT = ("**What is kept.** Each debate you run here is saved with its question, settings and transcript "
        "so that you can open, rerun and download it later. {who} {how_long} A token you paste or your "
        "login's token is used for your own debates only and is never saved, logged or shown.")
WHO_PRIVATE = ("Only you can see your runs (tied to your Hugging Face login when signed in, otherwise to a "
               "random id this browser keeps, which works like a password: anyone who copies it from this "
               "browser's storage can read them too), and the Space's annotators, who read failed debates to "
               "study why they fail.")
WHO_LOCAL = "Everyone who can open this app can read every run."


@dataclass(frozen=True)
class Visitor:
    owner: str | None  # the key their runs are kept under; None where runs are not private
    username: str | None = None  # their Hugging Face login
    annotator: bool = True

    def can_read(self, run_owner: str | None) -> bool:
        return self.owner is None or self.annotator or run_owner == self.owner

    @property
    def list_filter(self) -> str | None:
        """The owner to list runs of (None: all runs)."""
        return None if self.owner is None or self.annotator else self.owner


def new_browser_id() -> str:
    return uuid.uuid4().hex


def identify(config: Config, *, browser_id: str | None, session: str | None, profile: Any = None,
             token: Any = None, orgs_of: Callable[[str], tuple[str, ...]] | None = None) -> Visitor:
    """The visitor behind a request. `profile` / `token`: Gradio's OAuthProfile / OAuthToken (None when
    not signed in); `browser_id`: the id their browser keeps; `session`: the page's session, the key of
    last resort (an API client that sends no browser id)."""
    username = getattr(profile, "username", None) or None
    if not config.private_runs:
        return Visitor(None, username, True)
    if username:
        allowed = set(config.app.annotators)
        annotator = username in allowed or bool(
            allowed and allowed & set((orgs_of or _orgs_of)(getattr(token, "token", "") or "")))
        return Visitor(f"hf:{username}", username, annotator)
    key = (browser_id or "").strip()
    return Visitor(f"browser:{key}" if len(key) >= 16 else f"session:{session or new_browser_id()}", None, False)


class VisitorHandlers:
    """Event handlers whose answers depend on who asks; `services` is the app's r2mad.serving.services.Services."""

    def __init__(self, services: Any):
        self.services = services

    def visitor(self, visitor_id: str | None, request: Any, profile: Any, oauth_token: Any) -> Visitor:
        """The visitor behind a Gradio event: its browser id, login, token and page session."""
        return identify(self.services.config, browser_id=visitor_id, profile=profile, token=oauth_token,
                        session=getattr(request, "session_hash", None))


@functools.lru_cache(maxsize=256)
def _orgs_of(token: str) -> tuple[str, ...]:
    """The organisations a signed-in visitor belongs to (from the Hub; none when it cannot say)."""
    if not token:
        return ()
    try:
        from huggingface_hub import whoami

        return tuple(org.get("name", "") for org in whoami(token=token).get("orgs", []))
    except Exception:  # the Hub unreachable or the token expired: no org membership
        return ()


def kept_notice(config: Config) -> str:
    if not config.private_runs:
        return KEPT.format(who=WHO_LOCAL, how_long="Runs stay until whoever runs the app deletes them.")
    how_long = ("Runs stay until the Space's owner deletes them; they are kept in the Space's storage"
                + (" and a private dataset." if config.app.persist_repo else "."))
    return KEPT.format(who=WHO_PRIVATE, how_long=how_long)
