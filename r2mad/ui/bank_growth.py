"""The annotator's "add this run to a memory bank" button (Annotate tab): the open run, finished with a gold
answer, becomes cases in the chosen bank with its provenance (memory/growth.py), under the leakage rule.
Only an annotator's click writes a bank: on a Space, the tab refuses everyone but its named annotators,
and visitors' debates never enter a bank by themselves. `bank history` / `bank undo` take a batch back."""
from __future__ import annotations

from typing import Callable

import gradio as gr

from r2mad.annotation.book import LabelBook
from r2mad.evaluation.leakage import eval_tasks
from r2mad.memory.growth import add_runs
from r2mad.serving.services import Services
from r2mad.ui.errors import refusal
from r2mad.ui.render.chat import esc

Req, Profile, Token = gr.Request, gr.OAuthProfile | None, gr.OAuthToken | None  # injected by Gradio


class BankGrowth:
    def __init__(self, services: Services, me: Callable[..., str]):
        self.services, self.me = services, me  # me(typed, visitor_id, request, profile, token) -> annotator

    def add_run(self, folder, run_id, typed, visitor_id, request: Req = None, profile: Profile = None,
                oauth_token: Token = None) -> str:
        """Write the open run into the chosen bank; one sentence on what happened."""
        me = self.me(typed, visitor_id, request, profile, oauth_token)
        run_id = (run_id or "").strip()
        if not run_id:
            raise refusal("No run is open; open a run before adding it to a bank.")
        if not folder or folder not in self.services.bank_choices():
            raise refusal("No such bank; pick one from the list (banks are folders under memory/).")
        store = self.services.store
        try:
            record = store.get_run(run_id)
            bank = self.services.bank(folder)
            batch, refused = add_runs(bank, [record], by=me, tested=eval_tasks(bank),
                                      finals=LabelBook(store).finals())
        except (KeyError, ValueError) as exc:
            raise refusal(esc(exc.args[0] if exc.args else str(exc))) from None
        if batch is None:
            return f"Not added: {esc(refused[0].reason)}"
        return (f"Added run {esc(run_id[:8])} to **{esc(bank.name)}** as {len(batch.case_ids)} cases (batch "
                f"{batch.number}, by {esc(me)}); `python -m r2mad bank undo {esc(folder)} {batch.number}` takes "
                "them out again.")


def bank_growth_block(services: Services, me: Callable[..., str], run_id: gr.Textbox, who: list) -> None:
    """The accordion with the bank list and the button, wired to the open run (call inside the tab)."""
    growth = BankGrowth(services, me)
    with gr.Accordion("Write this run into a memory bank", open=False):
        gr.Markdown("A finished debate with a gold answer becomes cases of the bank (one per agent per round "
                    "after the first), each recording the run, you and the time. Runs on questions an eval of "
                    "that bank tests are refused.")
        with gr.Row():
            choices = services.bank_choices()
            bank = gr.Dropdown(choices, value=choices[0] if choices else None, label="Bank", scale=2,
                               elem_id="ann-grow-bank")
            add = gr.Button("Add this run to the bank", scale=1, elem_id="ann-grow-add")
        added = gr.Markdown(elem_id="ann-grow-added")
    add.click(growth.add_run, [bank, run_id, *who], [added], api_visibility="private")
