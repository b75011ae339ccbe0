"""The Inspect tab's tools on saved runs: download a run (or every listed run) as self-contained HTML, the
same page `python -m r2mad export-html` writes, and ask the LLM judge about the open run (its suggestions
join the label book, as `python -m r2mad judge` does). Handlers only; the pages and the judge are
exports/html.py's and annotation/judge.py's."""
from __future__ import annotations

import dataclasses
import tempfile
import zipfile
from pathlib import Path

import gradio as gr

from r2mad.annotation.book import LabelBook
from r2mad.backends.base import BackendError
from r2mad.serving.line import visitor_key
from r2mad.ui.errors import refusal, sentence
from r2mad.ui.render.chat import esc

LIST_LIMIT = 200  # runs in one HTML download of the list


def page_of(store, record) -> str:
    """The HTML page of one saved run: its labels, suggestions and adjudication, secrets scrubbed again."""
    from r2mad.exports.html import run_page

    book = LabelBook(store)
    book.detect([record.id])
    if record.transcript is not None:  # saved scrubbed; scrubbed again for keys set since
        record = dataclasses.replace(record, transcript=store.scrub_transcript(record.transcript))
    return run_page(record, book.suggestions(record.id), book.finals().get(record.id), store.taxonomy)


class InspectTools:
    """Mixed into InspectHandlers: `services`, `visitor(...)` and `_record(run_id, visitor)` come from it."""

    def download_html(self, run_id, visitor_id=None, request: gr.Request = None,
                      profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None) -> str:
        """The open run as one HTML file that reads the same offline and with JavaScript off."""
        record = self._record(run_id, self.visitor(visitor_id, request, profile, oauth_token))
        path = Path(tempfile.mkdtemp(prefix="r2mad-html-")) / f"run-{record.id[:8]}.html"
        path.write_text(page_of(self.services.store, record), encoding="utf-8")
        return str(path)

    def export_html(self, ids: list[str], visitor_id=None, request: gr.Request = None,
                    profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None) -> str:
        """The listed runs as a zip of HTML pages, one per run (the first LIST_LIMIT)."""
        if not ids:
            raise refusal("The list is empty; change the filters so it shows the runs to export.")
        visitor = self.visitor(visitor_id, request, profile, oauth_token)
        path = Path(tempfile.mkdtemp(prefix="r2mad-html-")) / "runs-html.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for run_id in ids[:LIST_LIMIT]:
                record = self._record(run_id, visitor)
                zf.writestr(f"run-{record.id[:8]}.html", page_of(self.services.store, record))
        return str(path)

    async def ask_judge(self, run_id, visitor_id=None, request: gr.Request = None,
                        profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None) -> str:
        """One call of the LLM judge on the open run (its auxiliary backbone where configured, else the
        default); the labels it proposes join the run's suggestions for annotators."""
        from r2mad.annotation.judge import judge_transcript
        from r2mad.annotation.judge_book import save_verdict

        visitor = self.visitor(visitor_id, request, profile, oauth_token)
        if not visitor.annotator:
            raise refusal("Asking the judge is for this Space's annotators; sign in with Hugging Face as one.")
        record = self._record(run_id, visitor)
        if record.transcript is None or record.status == "running" or not record.transcript.finished().rounds:
            raise refusal("This run has no finished round for the judge to read; open a finished run.")
        config, store = self.services.config, self.services.store
        aux = record.transcript.backbone
        name = aux if aux in config.backbones else config.default_backbone
        try:
            backend = self.services.backend(name, visitor=visitor_key(visitor.owner, visitor_id,
                                                                    getattr(request, "session_hash", None)))
            verdict = await judge_transcript(backend, name, record.transcript, store.taxonomy)
        except (BackendError, ValueError) as exc:
            raise refusal(f"The judge could not read this run: {sentence(exc)}") from None
        save_verdict(LabelBook(store), record.id, verdict)
        lines = [f"**The judge ({esc(verdict.judge)})** proposed {len(verdict.suggestions)} label(s) "
                 f"and dropped {len(verdict.dropped)} ({verdict.tokens} tokens); annotators see them as suggestions."]
        lines += [f"- `{esc(s.label)}`: {esc(s.summary)}" for s in verdict.suggestions]
        lines += [f"- *dropped* {esc(why)}" for why in verdict.dropped]
        return "\n".join(lines)
