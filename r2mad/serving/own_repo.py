"""Where a signed-in annotator's dataset push goes: a bare repo name (or none) lands in their own
namespace, which the Space's `contribute-repos` OAuth scope lets their login token create and write
without a pasted write token. No Gradio here."""
from __future__ import annotations

from typing import Any

DEFAULT_NAME = "r2mad-annotations"


def own_repo(repo: str | None, profile: Any = None) -> str:
    """`user/name` as typed; a bare `name` (or nothing) under the signed-in user's namespace; without a
    login, what was typed (push_dataset then asks for user/name)."""
    repo = (repo or "").strip()
    username = getattr(profile, "username", None)
    if "/" in repo or not username:
        return repo
    return f"{username}/{repo or DEFAULT_NAME}"
