"""The Debate tab's allowance line: what an anonymous visitor may still spend today of the owner's allowance
(r2mad/serving/allowance.py) on the Hugging Face backbones, or, past it, the one sentence that offers sign-in.
Shown only where the owner switched the allowance on; a signed-in visitor reads that their own account pays."""
from __future__ import annotations

from typing import Any

from r2mad.serving.allowance import Left, refusal
from r2mad.serving.line import visitor_key
from r2mad.serving.visitors import identify
from r2mad.settings.config import Config


def short_name(backbone) -> str:
    """A backbone's model as people call it: its label up to the first bracket."""
    return (backbone.label or backbone.name).split(" (")[0].strip()


def allowance_words(config: Config, left: Left | None, signed_in: bool, backbone: str | None = None) -> str:
    """The line itself (markdown): what is left, the refusal past it, or nothing without an allowance.
    `backbone`: the one chosen on the form, named when the allowance pays for it."""
    if left is None and not signed_in:
        return ""
    if signed_in:
        return "Signed in: the Hugging Face backbones run on your own account."
    if left.spent:
        return refusal(left, config.app.allowance)
    paid = [b for b in config.backbones.values() if b.visitor_token and config.on_hf_router(b)]
    chosen = next((b for b in paid if b.name == backbone), None)
    if chosen is not None:
        return f"**This Space pays for your debates on {short_name(chosen)}:** **{left.words()}** left today."
    example = f" such as {short_name(paid[0])}" if paid else ""
    return (f"**Real models, paid by this Space:** choose a Hugging Face backbone{example} under *Advanced*; "
            f"**{left.words()}** left for you today.")


class AllowanceLine:
    """The handler that refreshes the line at page load, when the backbone changes and after each debate."""

    def __init__(self, services: Any):
        self.services = services

    def refresh(self, visitor_id: str | None, backbone: str | None = None, request: Any = None, profile: Any = None,
                token: Any = None) -> str:
        services = self.services
        if services.ledger is None:
            return ""
        session = getattr(request, "session_hash", None)
        visitor = identify(services.config, browser_id=visitor_id, session=session, profile=profile, token=token)
        if visitor.username:
            return allowance_words(services.config, None, True)
        left = services.allowance_left(visitor_key(visitor.owner, visitor_id, session))
        return allowance_words(services.config, left, False, backbone)
