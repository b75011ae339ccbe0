"""The Memory bank tab: audit a bank before use — search its cases by text, filter by agent, round and
correctness, open one case in full, and quarantine (or release) a case so retrieval never uses it."""
from __future__ import annotations

import gradio as gr

from r2mad.serving.services import Services
from r2mad.ui.errors import refusal
from r2mad.ui.render.chat import esc
from r2mad.ui.render.tables import CASE_HEADERS, case_markdown, case_rows

ANY = "any"


def _choice(value: str | None) -> int | None:
    return None if value in (None, "", ANY) else int(value)


class BankHandlers:
    def __init__(self, services: Services):
        self.services = services

    def _bank(self, folder: str):
        if not folder or folder not in self.services.bank_choices():
            raise refusal("No such bank; pick one from the list (banks are folders under memory/).")
        try:
            return self.services.bank(folder)
        except (ValueError, OSError) as exc:
            raise refusal(esc(str(exc))) from None

    def search(self, folder: str, text: str, agent: str, round_: str, outcome: str, limit: float):
        """Cases of the bank matching the text and filters; and a one-line description of the bank."""
        if not folder and not self.services.bank_choices():
            return "No memory bank here yet; build one with `python -m r2mad build-memory`.", []
        bank = self._bank(folder)
        m = bank.manifest
        agent_index = _choice(agent)
        cases = bank.search(text or None, agent=None if agent_index is None else agent_index - 1,
                            round=_choice(round_), correct={"correct": True, "wrong": False}.get(outcome),
                            limit=int(limit or 50))
        share = (m.get("counts") or {}).get("positive_share")
        about = (f"**{esc(bank.name)}** · {esc(m.get('task'))} cases from split {esc(m.get('split'))} · "
                 f"backbone {esc(m.get('backbone'))} · embedder {esc((m.get('embedder') or {}).get('id'))} · "
                 f"{len(bank)} cases ({'?' if share is None else f'{share:.0%}'} positive) · "
                 f"{len(cases)} shown")
        return about, case_rows(cases)

    def open_case(self, folder: str, case_id: str) -> str:
        bank = self._bank(folder)
        case_id = (case_id or "").strip()
        found = [c for c in bank.cases() if c.id == case_id]
        if not found:
            raise refusal("No case with that id in this bank; click a row of the search results.")
        return case_markdown(found[0])

    def select(self, folder: str, evt: gr.SelectData):
        row = evt.row_value or []
        case_id = str(row[0]) if row else ""
        return case_id, self.open_case(folder, case_id)

    def set_quarantine(self, folder: str, case_id: str, flag: bool) -> str:
        if self.services.config.on_space:
            raise refusal("Quarantine is switched off on a public Space; run the app locally to edit a bank.")
        bank = self._bank(folder)
        try:
            (bank.quarantine if flag else bank.unquarantine)((case_id or "").strip())
        except ValueError as exc:
            raise refusal(esc(str(exc))) from None
        return self.open_case(folder, case_id)

    def quarantine(self, folder: str, case_id: str) -> str:
        """Keep this case out of every retrieval (recorded beside the bank's cases.jsonl)."""
        return self.set_quarantine(folder, case_id, True)

    def unquarantine(self, folder: str, case_id: str) -> str:
        return self.set_quarantine(folder, case_id, False)


def build(services: Services, tab: gr.Tab) -> None:
    h = BankHandlers(services)
    banks = services.bank_choices()
    gr.Markdown("A memory of wrong debates can reinforce errors: look at what a bank holds before "
                "using it, and quarantine cases you do not trust.")
    with gr.Row():
        default = services.config.app.default_bank  # the same bank the Debate tab starts with
        bank = gr.Dropdown(banks, value=default if default in banks else (banks[0] if banks else None),
                           label="Memory bank")
        text = gr.Textbox(label="Search text (any field)")
    with gr.Row():
        agent = gr.Dropdown([ANY, *map(str, range(1, 9))], value=ANY, label="Agent")
        round_ = gr.Dropdown([ANY, *map(str, range(1, 10))], value=ANY, label="Round")
        outcome = gr.Radio([ANY, "correct", "wrong"], value=ANY, label="That agent was")
        limit = gr.Slider(10, 500, value=50, step=10, label="At most")
    search = gr.Button("Search cases", variant="primary")
    about = gr.Markdown(elem_id="bank-about")
    table = gr.Dataframe(headers=CASE_HEADERS, interactive=False, wrap=True, label="Cases (click one to open it)",
                         elem_id="bank-cases")
    with gr.Row():
        case_id = gr.Textbox(label="Case id", scale=3)
        open_button = gr.Button("Open case", scale=1)
        editable = not services.config.on_space  # visitors of a public Space share its banks
        quarantine = gr.Button("Quarantine", scale=1, variant="stop", visible=editable)
        release = gr.Button("Unquarantine", scale=1, visible=editable)
    case = gr.Markdown()

    search.click(h.search, [bank, text, agent, round_, outcome, limit], [about, table], api_name="bank_search")
    # the cases show as soon as the tab is opened or a filter changes
    gr.on([text.submit, tab.select, bank.change, agent.change, round_.change, outcome.change, limit.release],
          h.search, [bank, text, agent, round_, outcome, limit], [about, table], api_visibility="private")
    open_button.click(h.open_case, [bank, case_id], [case], api_name="bank_case")
    table.select(h.select, [bank], [case_id, case], api_visibility="private")
    quarantine.click(h.quarantine, [bank, case_id], [case], api_name="bank_quarantine")
    release.click(h.unquarantine, [bank, case_id], [case], api_name="bank_unquarantine")
