"""A gradio_client Client that also knows the app's UI events by name: the app keeps them out of its
public API (undocumented: off the API page and the MCP tools), so the stock client would call them by
position only. Tests that drive the UI through its events use this; programs use the public endpoints
(tests call those with PatientClient).
The Run button's outputs come back as a tuple; debate_outputs names them."""
from __future__ import annotations

from unittest import mock

from gradio_client import Client
from gradio_client import utils as client_utils

from r2mad.ui.debate_form import FILL


class PatientClient(Client):
    """The stock client with a hang guard instead of httpx's 5 s timeout, which a loaded machine (CI beside
    other jobs) exceeds while the app serves its config: a slow answer is not a wrong one."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("httpx_kwargs", {"timeout": 300})
        super().__init__(*args, **kwargs)


class UIClient(PatientClient):
    def _get_api_info(self):
        every = client_utils.RAW_API_INFO_URL + "&all_endpoints=True"
        with mock.patch.object(client_utils, "RAW_API_INFO_URL", every):
            return super()._get_api_info()


DEBATE_OUTPUTS = ("status", "chat", "col0", "col1", "col2", "col3", "summary", "json", "download", "scoreboard",
                  "matrix", "summary_csv")  # the /debate event's outputs, in order


def debate_outputs(values) -> dict:
    """One /debate result (or one of a job's outputs()) by output name: status, chat, ..., json (the
    transcripts by method)."""
    return dict(zip(DEBATE_OUTPUTS, values))


def rerun_values(values) -> dict:
    """One /rerun result by the Debate form's names (r2mad.ui.debate_form.FILL), then "tabs"."""
    return dict(zip((*FILL, "tabs"), values))
