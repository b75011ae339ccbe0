"""How a side-by-side comparison ends in the Debate tab: debates that all stopped after the shared round 0 are
identical, so no vote is asked (and none counts); the revealed summary's figures are the saved runs' (seconds from
the run's start to its last save); a note that reached no agent is said on the note line, not "Sent". The tab's
handlers on a scripted server, a real run store."""
import asyncio
import random
from types import SimpleNamespace

import pytest

from r2mad.runs.store import RunStore
from r2mad.runs.votes import VoteStore
from r2mad.serving.sealed import Sealed
from r2mad.serving.services import Services
from r2mad.ui import moderator_box
from r2mad.ui.board_tab import board_view
from r2mad.ui.handlers import DebateHandlers
from r2mad.ui.render.blind import Curtain
from r2mad.ui.render.states import title_of
from r2mad.ui.render.tables import SUMMARY_HEADERS
from r2mad.ui.views import VIEW_NAMES
from r2mad.ui.vote_panel import VOTE_NAMES, VoteHandlers
from testing.scripted_server import FakeServer, ok
from tests.helpers import PLANET_MCQ, make_transcript, save_run, scripted_config

NAMES = (*VIEW_NAMES, *VOTE_NAMES, "note_said")  # the Run event's outputs
SECONDS = SUMMARY_HEADERS.index("Seconds")


def run(services, methods, blind=True) -> list[dict]:
    form = dict(backbone="fake", methods=methods, blind=blind, bank="", agents=2, rounds=2, temperature=0.7,
                max_tokens=32, seed=0, answer_guard="off", gold="B", question="Which planet is largest?",
                option_a="Mars", option_b="Jupiter", option_c="Venus")

    async def go():
        return [dict(zip(NAMES, u)) async for u in DebateHandlers(services).run_debate(
            **form, visitor_id="v" * 32, request=SimpleNamespace(session_hash="s"))]
    return asyncio.run(go())


@pytest.fixture
def agreeing():
    """Every agent answers B at once: each debate method stops after the shared round 0."""
    with FakeServer(responder=lambda body: ok("Jupiter. ((B))")) as srv:
        yield srv


def test_debates_that_all_stopped_after_the_shared_round_0_ask_no_vote(tmp_path, agreeing):
    services = Services(scripted_config(agreeing.base_url, tmp_path / "var"))
    updates = run(services, ["mad", "madm2-objective"])
    last = updates[-1]
    assert last["vote_box"].visible is False and last["vote_state"] == {}  # no "Which debate convinced you?"
    assert last["vote_note"].startswith("*Both methods stopped after the shared first round: their debates are "
                                        "identical, so no vote is asked")
    assert title_of("madm2-objective") in str(last["status"])  # the names are shown at once
    runs = {r.method: r for r in services.store.list_runs()}
    assert {m: r.rounds for m, r in runs.items()} == {"mad": 1, "madm2-objective": 1}
    # every figure is the saved run's: seconds from its start to its last save (round 0 included)
    rows = {row[0]: row for row in last["summary"].value["data"]}
    for method, r in runs.items():
        assert rows[method][SECONDS] == round(r.updated_at - r.created_at, 1)
        assert rows[method][5] == r.tokens


def test_a_vote_on_identical_debates_is_not_counted(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        same = {m: make_transcript(PLANET_MCQ, [["B", "B"]], "B", True, method=m) for m in ("mad", "truemad")}
        runs = {m: save_run(store, t) for m, t in same.items()}
        curtain = Curtain()
        curtain.draw(list(runs), random.Random(0))
        curtain.runs.update(runs)
        curtain.hide(same)
        assert not curtain.votable()
        services = SimpleNamespace(store=store, config=SimpleNamespace(private_runs=False), sealed=Sealed())
        handlers = VoteHandlers(services)
        out = dict(zip((*VIEW_NAMES, *VOTE_NAMES), handlers.vote(0, curtain.state(), "b" * 32,
                                                                  SimpleNamespace(session_hash="s"), None, None)))
        assert handlers.votes.votes() == []  # the board does not count it
        assert out["vote_note"].startswith("**The names, as you skipped the vote:**")


def test_votes_stored_on_identical_debates_are_left_off_the_board(tmp_path):
    """Two votes in the store, as an older build kept them: one on debates that read the same (both stopped
    after round 0 with B), one on debates that differ. The board counts the second alone and says so."""
    with RunStore(tmp_path / "runs.sqlite") as store:
        same = {m: save_run(store, make_transcript(PLANET_MCQ, [["B", "B"]], "B", True, method=m))
                for m in ("mad", "truemad")}
        differ = {"mad": save_run(store, make_transcript(PLANET_MCQ, [["B", "A"], ["B", "B"]], "B", True,
                                                         method="mad")),
                  "truemad": save_run(store, make_transcript(PLANET_MCQ, [["B", "A"], ["A", "A"]], "A", False,
                                                             method="truemad"))}
        votes = VoteStore(store)
        votes.record(runs=same, winner_method="mad", voter_key="k1", shown={})
        votes.record(runs=differ, winner_method="truemad", voter_key="k2", shown={})
        rows, line = board_view(votes)
        assert [(r[0], r[3], r[4]) for r in rows] == [(title_of("truemad"), 1, 1), (title_of("mad"), 1, 0)]
        assert line == ("*1 vote(s) from 1 visitor(s) on side-by-side comparisons. 1 vote(s) on debates that "
                        "read the same are not counted.*")


def test_the_revealed_summary_reads_each_runs_seconds_from_its_saved_times(tmp_path):
    """A debate that replayed the shared round 0 has its own clock near 0 s; its run ran from its start (before
    round 0) to its last save: 36.4 s here, set in the store by hand."""
    with RunStore(tmp_path / "runs.sqlite") as store:
        shown = {"mad": make_transcript(PLANET_MCQ, [["B", "A"], ["B", "B"]], "B", True, method="mad"),
                 "truemad": make_transcript(PLANET_MCQ, [["B", "A"], ["A", "A"]], "A", False, method="truemad")}
        runs = {m: save_run(store, t) for m, t in shown.items()}
        with store.transaction() as conn:
            for run_id, (start, end) in zip(runs.values(), ((1000.0, 1036.4), (1000.0, 1012.25))):
                conn.execute("UPDATE runs SET created_at = ?, updated_at = ? WHERE id = ?", (start, end, run_id))
        curtain = Curtain()
        curtain.draw(list(runs), random.Random(0))
        curtain.runs.update(runs)
        curtain.hide(shown)  # the page's transcripts say 2.5 s each (make_transcript's clock)
        services = SimpleNamespace(store=store, config=SimpleNamespace(private_runs=False), sealed=Sealed())
        out = dict(zip((*VIEW_NAMES, *VOTE_NAMES), VoteHandlers(services).vote(
            None, curtain.state(), "b" * 32, SimpleNamespace(session_hash="s"), None, None)))
        rows = {row[0]: row for row in out["summary"].value["data"]}
        assert rows["mad"][SECONDS] == 36.4 and rows["truemad"][SECONDS] == 12.2  # 1036.4 − 1000, 1012.25 − 1000
        assert rows["mad"][4] == 5 and rows["mad"][5] == 70  # 4 turns and a summary call, as saved


def test_a_note_that_reached_no_agent_is_said_on_the_note_line(tmp_path):
    """The visitor sends a note during round 0; the agents agree there, so no round reads it."""
    services, sent = None, []

    def reply(body):
        if not sent:  # typed once, while round 0 runs
            sent.append(moderator_box.send(services, "Check the sizes again.", "s"))
        return ok("Jupiter. ((B))")
    with FakeServer(responder=reply) as srv:
        services = Services(scripted_config(srv.base_url, tmp_path / "var"))
        with pytest.warns(UserWarning, match="reached no agent"):
            updates = run(services, ["mad"], blind=False)
    said = [u.get("note_said") for u in updates if isinstance(u.get("note_said"), str)]
    assert said == ["**Not delivered:** Your note reached no agent: the debate had no round after it. "
                    + moderator_box.HELP]
    assert sent[0][1].startswith("Sent — reaches every agent")  # what the line said when it was sent
