"""The Method board tab: visitors' blind votes on side-by-side comparisons, aggregated per method with a
Bradley-Terry model and 95% bootstrap intervals (r2mad.evaluation.board), next to each method's accuracy in the
same comparisons. Only totals are shown, never who voted or on which run."""
from __future__ import annotations

import asyncio
from typing import Any

import gradio as gr

from r2mad.evaluation.board import BoardRow, method_board
from r2mad.runs.faults import StoreError
from r2mad.runs.votes import VoteStore
from r2mad.ui.render.states import title_of

HEADERS = ["Method", "Strength (Bradley-Terry)", "95% interval", "Votes", "Won", "Accuracy (same comparisons)"]
INTRO = ("### Which methods' debates convince people?\nAfter a side-by-side run in the Debate tab, visitors vote "
         "for the debate whose reasoning convinced them most, before they see the methods' names or the gold "
         "answer. The votes are fitted with a **Bradley-Terry** model (strength 0 = the average method here; "
         "a method 0.69 above another is preferred 2 to 1 in a head-to-head vote), with 95% intervals from 200 "
         "bootstrap resamples of the votes. Accuracy counts the same comparisons' runs that had a gold answer: "
         "being convincing and being right are not the same thing.")


def cells(row: BoardRow) -> list[Any]:
    interval = "—" if row.low is None else f"{row.low:+.2f} to {row.high:+.2f}"
    accuracy = "no gold" if row.accuracy is None else f"{row.accuracy:.0%} ({row.correct}/{row.scored})"
    return [title_of(row.method), f"{row.strength:+.2f}", interval, row.votes, row.wins, accuracy]


def board_view(votes: VoteStore) -> tuple[list[list[Any]], str]:
    """The board's rows and the line under it."""
    found, left_out = votes.counted()
    unsaid = (f" {left_out} vote(s) on debates that read the same are not counted." if left_out else "")
    if not found:
        return [], f"*No votes yet: run two or more methods side by side in the Debate tab and vote.{unsaid}*"
    rows = method_board(found, votes.correctness(r for v in found for r in v.runs.values()))
    voters = len({v.voter for v in found})
    return [cells(r) for r in rows], (f"*{len(found)} vote(s) from {voters} visitor(s) on side-by-side "
                                      f"comparisons.{unsaid}*")


def build(services: Any, tab: Any) -> None:
    gr.Markdown(INTRO, elem_id="board-intro")
    table = gr.Dataframe(headers=HEADERS, interactive=False, elem_id="board-table", wrap=True)
    note = gr.Markdown(elem_id="board-note")
    refresh = gr.Button("Refresh", size="sm", elem_id="board-refresh")

    async def show():
        try:
            rows, line = await asyncio.to_thread(board_view, VoteStore(services.store))
        except StoreError as exc:
            return [], f"The votes cannot be read now: {exc}"
        return gr.Dataframe(value=rows, headers=HEADERS), line

    for event in (tab.select, refresh.click):
        event(show, None, [table, note], api_visibility="private", show_progress="minimal")
