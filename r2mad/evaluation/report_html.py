"""Self-contained HTML pages: an eval's report.md with its plots inlined as data: URLs (report.html), and
the page frame the run export (exports/html.py) shares: inline styles, no script, no external URL, so a
file reads the same offline, with JavaScript off, sent by mail."""
from __future__ import annotations

import base64
import re
from html import escape
from pathlib import Path

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#111827;
line-height:1.45}h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #e5e7eb}
table{border-collapse:collapse;font-size:14px}th,td{border:1px solid #d1d5db;padding:4px 8px;vertical-align:top;
text-align:left}details{border:1px solid #e5e7eb;border-radius:6px;margin:6px 0;padding:4px 10px}
summary{font-weight:600;cursor:pointer}.msg{white-space:normal;margin:6px 0}.user{background:#f3f4f6;padding:8px;
border-radius:6px}img{max-width:100%}code{background:#f3f4f6;padding:0 3px}"""
_OUT = r"""\s*=\s*["'](?!#|data:)[^"']*["']"""  # a link or source that leaves the file
_LINK_OUT = re.compile(r"<a\s[^>]*href" + _OUT + r"[^>]*>(.*?)</a>", re.I | re.S)
_IMG_OUT = re.compile(r"<img\s[^>]*src" + _OUT + r"[^>]*>", re.I)
_ANY_OUT = re.compile(r"(src|href)" + _OUT, re.I)


def markdown_html(text: str) -> str:
    """Markdown (with the app's inline HTML) to HTML, tables included (markdown-it-py, CommonMark)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text or "")


def page(title: str, body: str) -> str:
    """A whole page; a link that would leave the file becomes its text, such an image goes, any other
    such source is cut (only #anchors and data: URLs stay)."""
    body = _ANY_OUT.sub(lambda m: f'{m.group(1)}="#"', _IMG_OUT.sub("", _LINK_OUT.sub(r"\1", body)))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width,initial-scale=1"><title>{escape(title)}</title><style>{STYLE}</style>'
            f"</head><body>{body}</body></html>\n")


def report_page(report_md: str, folder: Path) -> str:
    """An eval's report.md as one page, each image it links (plots in `folder`) inlined as a data: URL."""
    def inline(match: re.Match) -> str:
        alt, name = match.group(1), match.group(2)
        path = folder / name
        if "://" in name or not path.is_file():
            return f"*({escape(alt or name)}: not written)*"
        data = base64.b64encode(path.read_bytes()).decode()
        return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'
    text = re.sub(r"!\[([^\]]*)\]\(([^)\s]+)\)", inline, report_md)
    return page("Eval report", markdown_html(text))


def write_report_html(folder: str | Path) -> Path:
    """report.html beside report.md (which write_report wrote first)."""
    folder = Path(folder)
    path = folder / "report.html"
    path.write_text(report_page((folder / "report.md").read_text(encoding="utf-8"), folder), encoding="utf-8")
    return path
