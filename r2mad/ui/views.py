"""Component updates of the Debate tab from transcripts: the outcome line, the scoreboard, the chat of
full texts, and for a side-by-side run the methods × rounds matrix, the summary table with its CSV and
the per-method chats in tabs. The renderers are pure (r2mad.ui.render.chat, scoreboard, tables); this module
only wraps their output in Gradio updates and writes the download files."""
from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

import gradio as gr

from r2mad.evaluation.costs import PriceTable
from r2mad.runs.exits import csv_cells
from r2mad.runs.faults import StoreError
from r2mad.steer.fork import fork_starts
from r2mad.types import Transcript, to_dict
from r2mad.ui.render.blind import is_blind
from r2mad.ui.render.chat import chat_messages, esc, final_markdown
from r2mad.ui.render.scoreboard import matrix_html, scoreboard_html
from r2mad.ui.render.states import progress_line, title_of
from r2mad.ui.render.tables import SUMMARY_HEADERS, summary_rows

MAX_COLUMNS = 4
BLIND_FIGURES = ("*Calls and tokens count the agents' answers only; each method's own calls (summaries, "
                 "masks, advice) are added when the names are shown.*")


def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="r2mad-transcript-"))


def write_transcripts(transcripts: dict[str, Transcript]) -> str:
    folder = _folder()
    name = "transcript.json" if len(transcripts) == 1 else "transcripts.json"
    data = {m: to_dict(t) for m, t in transcripts.items()}
    (folder / name).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return str(folder / name)


def write_summary_csv(transcripts: dict[str, Transcript], seconds: dict[str, float] | None = None) -> str:
    path = _folder() / "summary.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(SUMMARY_HEADERS)
        writer.writerows(map(csv_cells, summary_rows(transcripts, seconds)))
    return str(path)


def as_saved(store, runs: dict[str, str],
             shown: dict[str, Transcript]) -> tuple[dict[str, Transcript], dict[str, float]]:
    """A finished comparison's transcripts as its runs were saved (`runs`: method -> run id), and each run's seconds
    from its start to its last save: a debate that replayed the shared round 0 counts that round, which its own
    clock leaves out. A run not saved yet (a full disk) or unreadable keeps what the page had. Reads the store:
    call it off the event loop."""
    transcripts, seconds = dict(shown), {}
    for method, run_id in runs.items():
        try:
            record = store.get_run(run_id)
        except (KeyError, StoreError):
            continue
        if method in transcripts and record.transcript is not None and record.status != "running":
            transcripts[method] = record.transcript
            seconds[method] = record.updated_at - record.created_at
    return transcripts, seconds


def compare_status(transcripts: dict[str, Transcript], elapsed: float | None = None) -> str:
    running = any(t.status == "running" for t in transcripts.values())
    shared = " Round 0 was computed once and shared by the debate methods." if any(
        t.shared_round0 for t in transcripts.values()) else ""
    progress = "  \n".join(esc(progress_line(title_of(m), t)) for m, t in transcripts.items())
    clock = f" ({elapsed:.0f} s so far)" if running and elapsed is not None else ""
    blind = f"  \n{BLIND_FIGURES}" if any(is_blind(m) for m in transcripts) else ""
    return (f"**Side by side: {len(transcripts)} methods — {'running…' if running else 'finished'}{clock}.**"
            f"{shared}  \n{progress}{blind}")


def status_line(transcripts: dict[str, Transcript], prices: PriceTable | None = None,
                elapsed: float | None = None) -> str:
    """The status line above the debate: the outcome (or progress), its cost and, while it runs, the seconds
    since the visitor asked (`elapsed`)."""
    if len(transcripts) > 1:
        return compare_status(transcripts, elapsed)
    return final_markdown(next(iter(transcripts.values())), prices, elapsed) if transcripts else ""


def view(transcripts: dict[str, Transcript], *, final: bool, prices: PriceTable | None = None,
         saved: dict[str, str] | None = None, elapsed: float | None = None,
         seconds: dict[str, float] | None = None) -> tuple:
    """Updates for the Debate tab's outputs, in VIEW_NAMES' order; `prices`: each backbone's by
    name, for the cost in money; `saved`: each method's run id (a finished single debate offers a fork);
    `elapsed`: the seconds since the visitor asked, shown while the debate runs; `seconds`: each method's
    run time as saved (r2mad.ui.vote_panel.from_store), for the summary."""
    methods = list(transcripts)
    compare = len(methods) > 1
    first = transcripts[methods[0]] if methods else None
    status = status_line(transcripts, prices, elapsed)
    single = chat_messages(first) if first is not None and not compare else []
    columns = [gr.Chatbot(value=chat_messages(transcripts[methods[i]]), label=title_of(methods[i]))
               if compare and i < len(methods) else gr.Chatbot(value=[]) for i in range(MAX_COLUMNS)]
    tabs = [gr.Tab(label=title_of(methods[i]), visible=True) if compare and i < len(methods)
            else gr.Tab(visible=False) for i in range(MAX_COLUMNS)]
    state = {m: to_dict(t) for m, t in transcripts.items()}
    sealed = any(is_blind(m) for m in methods)  # blind: the transcripts and their file come with the reveal
    return (status, gr.Column(visible=not compare), single, gr.Column(visible=compare), *columns,
            gr.Dataframe(value=summary_rows(transcripts, seconds), visible=compare),
            ({} if sealed else state) if final else gr.skip(),
            (gr.DownloadButton(value=None, visible=False) if sealed else
             gr.DownloadButton(value=write_transcripts(transcripts), visible=True)) if final else gr.skip(),
            state,
            scoreboard_html(first) if first is not None and not compare else "",
            matrix_html(transcripts, {m: title_of(m) for m in methods}) if compare else "",
            gr.DownloadButton(value=write_summary_csv(transcripts, seconds), visible=True) if final and compare
            else gr.skip(),
            *tabs, *fork_offer(None if compare else first, (saved or {}).get(methods[0]) if methods else None,
                               final), gr.Column(visible=bool(methods)))


def fork_offer(t: Transcript | None, run_id: str | None, final: bool) -> tuple:
    """(the saved run a fork starts from, the "Fork from this round" row, its rounds): shown under a finished
    single debate, hidden while one runs."""
    starts = fork_starts(t) if final and run_id else []
    if not starts:
        return gr.skip(), gr.Row(visible=False), gr.skip()
    return run_id, gr.Row(visible=True), gr.Dropdown(choices=starts, value=1)


# what view() returns, by the Debate tab's output names, in order
VIEW_NAMES = ("status", "single_box", "single_chat", "compare_box", *(f"column_{i}" for i in range(MAX_COLUMNS)),
              "summary", "transcript_json", "download", "state", "scoreboard", "matrix", "summary_file",
              *(f"tab_{i}" for i in range(MAX_COLUMNS)), "saved_run", "fork_box", "fork_round", "note_box")
VIEW_OUTPUTS = len(VIEW_NAMES)


def idle(message: str) -> tuple:
    """Only the status line changes."""
    return (message, *(gr.skip() for _ in range(VIEW_OUTPUTS - 1)))


def methods_hint(methods: list[str] | None) -> str:
    n = len(methods or [])
    if n > MAX_COLUMNS:
        return (f"**{n} methods are picked; side by side shows at most {MAX_COLUMNS}** — remove "
                f"{n - MAX_COLUMNS} before running.")
    if n > 1:
        return f"{n} methods will run side by side; debate methods share one round 0."
    return ""


def layout_for(methods: list[str] | None) -> tuple:
    """Single view or side by side, and the hint under the method list."""
    n = len(methods or [])
    compare = 1 < n
    return (gr.Column(visible=not compare), gr.Column(visible=compare), methods_hint(methods))
