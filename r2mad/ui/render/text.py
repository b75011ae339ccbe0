"""Text from visitors and models, shown as inert text in Markdown components: no HTML, no images
loaded, and no links (markdown links and bare URLs are defused; they read the same)."""
from __future__ import annotations

import html
import re
from typing import Any

_MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\(")
_BARE_URL = re.compile(r"(?i)\b(?:[a-z][a-z0-9+.-]*:(?=//)|www\.)")


def esc(text: Any, *, quote: bool = False) -> str:
    """`<`, `>`, `&` escaped (and quotes, for an attribute, with `quote`); `![…](…)` and `[…](…)` shown as text;
    `https://…` and `www.…` no links."""
    s = html.escape("" if text is None else str(text), quote=quote)
    s = _MARKDOWN_LINK.sub(lambda m: f"&#91;{m.group(1)}&#93;(", s)
    return _BARE_URL.sub(lambda m: m.group(0).replace(":", "&#58;").replace(".", "&#46;"), s)
