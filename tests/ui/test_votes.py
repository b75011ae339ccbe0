"""Visitors' blind votes: the vote table (one vote per visitor per comparison, the visitor kept as a hash), the
Bradley-Terry method board checked against strengths worked out by hand, the blind view (no names, no gold, no
method panels until the vote), the vote handler, and votes.parquet in the annotation export."""
import math
import random
from types import SimpleNamespace

import pytest

from r2mad.annotation.book import LabelBook
from r2mad.evaluation.board import bradley_terry, method_board, pairwise
from r2mad.exports.dataset import read_dataset, write_dataset
from r2mad.runs.store import RunStore
from r2mad.runs.votes import VoteRefused, VoteStore, comparison_id, voter_hash
from r2mad.serving.sealed import Sealed
from r2mad.types import AuxCall, Vote
from r2mad.ui.render.blind import Curtain, blinded, revealed
from r2mad.ui.render.chat import chat_messages
from r2mad.ui.render.scoreboard import matrix_html
from r2mad.ui.vote_panel import VoteHandlers, reveal_note
from tests.helpers import PLANET_MCQ, make_transcript, save_run

BROWSER = "browser:" + "f" * 32  # a visitor's key: works like a password, never stored


def vote(winner: str, methods: list[str], n: int = 0) -> Vote:
    runs = {m: f"{m}-{n}" for m in methods}
    return Vote(comparison_id(runs.values()), f"v{n}", runs[winner], runs, {})


def table(*rows: tuple[str, str, int]) -> list[Vote]:
    """Votes from (winner, loser, how many times) rows of a head-to-head table."""
    votes = []
    for winner, loser, times in rows:
        for _ in range(times):
            votes.append(vote(winner, [winner, loser], len(votes)))
    return votes


# --- Bradley-Terry by hand -------------------------------------------------------------------------------

def test_two_methods_strengths_are_half_the_log_odds_of_the_wins():
    # A beat B 3 times, B beat A once: the fit has P(A over B) = 3/4, so s_A - s_B = ln 3, centred on 0
    s = bradley_terry(["A", "B"], pairwise(table(("A", "B", 3), ("B", "A", 1))), alpha=0)
    assert s["A"] == pytest.approx(math.log(3) / 2) and s["B"] == pytest.approx(-math.log(3) / 2)


def test_three_methods_match_strengths_worked_out_by_hand():
    # true strengths p = (4, 2, 1): A–B 2:1, B–C 2:1, A–C 4:1 meet the likelihood equations exactly
    # (A: wins 6 = 3·4/6 + 5·4/5; B: 3 = 3·2/6 + 3·2/3; C: 2 = 3·1/3 + 5·1/5), so s = ln p − mean(ln p)
    votes = table(("A", "B", 2), ("B", "A", 1), ("B", "C", 2), ("C", "B", 1), ("A", "C", 4), ("C", "A", 1))
    s = bradley_terry(["A", "B", "C"], pairwise(votes), alpha=0)
    mean = math.log(8) / 3
    assert [s[m] for m in "ABC"] == pytest.approx([math.log(4) - mean, math.log(2) - mean, -mean])


def test_a_vote_among_three_counts_as_two_wins():
    assert sorted(pairwise([vote("b", ["a", "b", "c"])])) == [("b", "a"), ("b", "c")]


def test_board_rows_votes_wins_accuracy_and_intervals():
    votes = table(("A", "B", 2), ("B", "A", 1), ("B", "C", 2), ("C", "B", 1), ("A", "C", 4), ("C", "A", 1))
    correct = {run: run.startswith("A") for v in votes for run in v.runs.values()}
    correct[votes[0].runs["B"]] = None  # a run with no gold answer is not scored
    board = method_board(votes, correct)
    rows = {r.method: r for r in board}
    assert [r.method for r in board] == ["A", "B", "C"]  # strongest first
    assert (rows["A"].votes, rows["A"].wins, rows["A"].correct, rows["A"].scored) == (8, 6, 8, 8)
    assert (rows["B"].votes, rows["B"].wins, rows["B"].scored, rows["B"].accuracy) == (6, 3, 5, 0.0)
    for r in rows.values():  # regularised fit, inside its own bootstrap interval
        assert r.low < r.strength < r.high
    assert method_board(votes, correct, resamples=30) == method_board(votes, correct, resamples=30)  # fixed seed
    [only, other] = method_board(table(("A", "B", 1)), {})
    assert only.low is None and only.strength > other.strength  # one vote: nothing to resample


# --- the vote table --------------------------------------------------------------------------------------

@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as s:
        yield s


def comparison(store, *answers) -> dict[str, str]:
    methods = ("mad", "r2mad", "madm2-subjective")[:len(answers)]
    return {m: save_run(store, make_transcript(PLANET_MCQ, [[a] * 3], a, a == "B", method=m))
            for m, a in zip(methods, answers)}


def test_one_vote_per_visitor_per_comparison(store):
    votes, runs = VoteStore(store), comparison(store, "B", "A")
    shown = {"Debate A": "r2mad", "Debate B": "mad"}
    first = votes.record(runs=runs, winner_method="r2mad", voter_key=BROWSER, shown=shown)
    with pytest.raises(VoteRefused, match=r"^This comparison already has its vote \(for Debate A\); one vote"):
        votes.record(runs=runs, winner_method="mad", voter_key=BROWSER, shown=shown)
    with pytest.raises(VoteRefused, match="already has its vote"):  # another key, the same comparison
        votes.record(runs=runs, winner_method="mad", voter_key="hf:someone", shown=shown, username="someone")
    assert [(v.voter, v.winner_method) for v in votes.votes()] == [(voter_hash(BROWSER), "r2mad")]
    assert first.winner == runs["r2mad"] and votes.votes([runs["mad"]]) == votes.votes()
    assert votes.votes(["another-run"]) == []
    assert BROWSER.encode() not in (store.path).read_bytes()  # the key itself is never kept
    assert votes.correctness(runs.values()) == {runs["mad"]: True, runs["r2mad"]: False}


def test_votes_sent_at_once_under_many_ids_count_once_per_comparison(store):
    """The probe: ten votes at once on one comparison and sixteen over four, each under its own browser id."""
    import threading

    one, shown = comparison(store, "B", "A"), {"Debate A": "r2mad", "Debate B": "mad"}
    others = [{m: save_run(store, make_transcript(PLANET_MCQ, [["B"] * 3], "B", True, method=m))
               for m in ("mad", "r2mad")} for _ in range(3)]
    jobs = [(one, i) for i in range(10)] + [(runs, i) for runs in [one, *others] for i in range(4)]
    refused, start = [], threading.Barrier(len(jobs))

    def send(runs, i):
        start.wait()
        try:
            VoteStore(store).record(runs=runs, winner_method="mad" if i % 2 else "r2mad",
                                    voter_key=f"browser:{i:032d}{id(runs)}", shown=shown)
        except VoteRefused:
            refused.append(i)

    threads = [threading.Thread(target=send, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    counted = VoteStore(store).votes()
    assert len(counted) == 4 and len({v.comparison for v in counted}) == 4  # one per comparison
    assert len(refused) == len(jobs) - 4


def test_a_vote_outside_the_comparison_is_refused(store):
    runs = comparison(store, "B", "A")
    with pytest.raises(VoteRefused, match="nothing was counted"):
        VoteStore(store).record(runs=runs, winner_method="truemad", voter_key=BROWSER, shown={})
    with pytest.raises(VoteRefused):
        VoteStore(store).record(runs={"mad": runs["mad"]}, winner_method="mad", voter_key=BROWSER, shown={})


def test_votes_travel_with_the_annotation_export(store, tmp_path):
    runs = comparison(store, "B", "A", "C")
    VoteStore(store).record(runs=runs, winner_method="mad", voter_key=BROWSER, shown={"Debate C": "mad"})
    assert write_dataset(LabelBook(store), tmp_path / "out")["votes"] == 1
    assert "votes.parquet" in (tmp_path / "out" / "README.md").read_text()
    with RunStore(tmp_path / "copy.sqlite") as copy:
        read_dataset(LabelBook(copy), tmp_path / "out")
        [again] = VoteStore(copy).votes()
        assert (again.runs, again.winner_method, again.shown) == (runs, "mad", {"Debate C": "mad"})


# --- the blind view and the vote -------------------------------------------------------------------------

def memory_transcript(method="r2mad"):
    t = make_transcript(PLANET_MCQ, [["A", "B", "C"], ["B", "B", "C"]], "B", True, method=method)
    rounds = (t.rounds[0], t.rounds[1].__class__(1, t.rounds[1].turns, 0.67, details={"summary": "R²-MAD says h"},
                                                 aux=(AuxCall("judge", 1, "MAD-M² verdict"),)))
    return t.__class__(**{**t.__dict__, "rounds": rounds,
                          "notices": ("Memory off: R²-MAD ran without a bank.", "R²-MAD note")})


def test_the_blind_view_names_no_method_and_no_gold():
    t = blinded(memory_transcript(), "Debate B")
    assert (t.method, t.task.gold, t.correct) == ("Debate B", None, None)
    assert t.notices == ("Memory off: this debate's method reads a memory bank and ran without one.",)
    assert t.rounds[1].details == {} and t.rounds[1].aux == ()
    shown = str(chat_messages(t)) + matrix_html({"Debate B": t}, {"Debate B": "Debate B"})
    assert "R²-MAD" not in shown and "r2mad" not in shown and "MAD-M²" not in shown
    assert blinded(memory_transcript("mad"), "Debate A").notices == ()  # MAD reads no bank


def test_curtain_labels_hide_and_reveal():
    curtain = Curtain()
    curtain.draw(["mad", "r2mad"], random.Random(1))
    assert sorted(curtain.labels.values()) == ["Debate A", "Debate B"]
    mad = make_transcript(PLANET_MCQ, [["B", "B", "C"]], "B", True, method="mad")  # other texts: a choice to make
    shown = curtain.hide({"mad": mad, "r2mad": memory_transcript()})
    assert list(shown) == ["Debate A", "Debate B"] and not curtain.votable()  # no saved runs to vote on yet
    curtain.runs.update({"mad": "r1", "r2mad": "r2"})
    assert curtain.votable()
    state = curtain.state()
    assert revealed(state)["r2mad"] == curtain.real["r2mad"]
    order = {tuple(c.labels) for c in (Curtain() for _ in range(30)) if c.draw(["a", "b"]) is None}
    assert len(order) == 2  # either method may be "Debate A"
    running = memory_transcript().__class__(**{**memory_transcript().__dict__, "status": "cancelled"})
    curtain.hide({"mad": mad, "r2mad": running})
    assert not curtain.votable()  # a stopped comparison asks for no vote


def test_the_vote_handler_counts_once_and_reveals(store):
    runs = comparison(store, "B", "A")
    curtain = Curtain()
    curtain.draw(list(runs), random.Random(0))
    curtain.runs.update(runs)
    curtain.hide({m: store.get_run(r).transcript for m, r in runs.items()})
    state, services = curtain.state(), SimpleNamespace(store=store, config=SimpleNamespace(private_runs=False),
                                                 sealed=Sealed())
    handlers, voted = VoteHandlers(services), curtain.labels["mad"]
    out = handlers.vote(ord(voted[-1]) - ord("A"), state, "b" * 32, SimpleNamespace(session_hash="s"), None, None)
    assert [v.winner_method for v in handlers.votes.votes()] == ["mad"]
    note = out[-5]
    assert f"**{voted}** was **MAD** — correct (+1 call of the method's own, now counted) ← your vote" in note
    assert "Gold answer: **B**" in note  # make_transcript's summary call: left out of the blind figures
    with pytest.warns(UserWarning, match=r"^This comparison already has its vote"):  # again: refused, said
        handlers.vote(0, state, "b" * 32, SimpleNamespace(session_hash="s"), None, None)
    assert len(handlers.votes.votes()) == 1
    assert reveal_note(state, None).startswith("**The names, as you skipped the vote:**")


def test_nothing_method_specific_leaves_before_the_vote(store):
    """The probe: before the vote the page got every prompt and a fetchable transcripts.json."""
    import dataclasses
    import json

    from r2mad.types import Message
    from r2mad.ui.inspect_tab import InspectHandlers
    from r2mad.ui.views import BLIND_FIGURES, VIEW_NAMES, compare_status, view

    secret = (Message("user", "Similar past debate (reward 1): retrieved memory case; peer 2 is high confidence"),)
    t = memory_transcript()
    t = dataclasses.replace(t, rounds=tuple(dataclasses.replace(r, turns=tuple(
        dataclasses.replace(turn, prompt=secret) for turn in r.turns)) for r in t.rounds))
    runs = comparison(store, "B", "A")
    curtain = Curtain()
    curtain.draw(list(runs), random.Random(0))
    curtain.runs.update(runs)
    shown = curtain.hide({"mad": memory_transcript("mad"), "r2mad": t})
    out = dict(zip(VIEW_NAMES, view(shown, final=True)))
    assert out["transcript_json"] == {} and out["download"].visible is False  # they come with the reveal
    sent = json.dumps([c.value for c in (out[f"column_{i}"] for i in range(2))], default=str)
    sent += str(out["status"]) + str(out["matrix"]) + str(out["summary"].value)
    assert "retrieved memory case" not in sent and "r2mad" not in sent and "R²-MAD" not in sent
    assert all(turn.prompt == () for s in shown.values() for r in s.rounds for turn in r.turns)
    # the figures say what the reveal adds: the blind ones count the agents' calls only
    assert BLIND_FIGURES in compare_status(shown)
    assert [row[4] for row in out["summary"].value["data"]] == [t.usage(("debate",)).calls] * 2
    revealed_view = dict(zip(VIEW_NAMES, view(curtain.real, final=True)))
    assert revealed_view["download"].visible and revealed_view["transcript_json"]

    services = SimpleNamespace(store=store, config=SimpleNamespace(private_runs=False), sealed=Sealed())
    services.sealed.seal(runs.values())
    inspect = InspectHandlers(services)
    listed = inspect.list_runs("any", "any", "any", "any", [], "any", "b" * 32, SimpleNamespace(session_hash="s"))
    assert set(runs.values()).isdisjoint(listed[1])  # Inspect hides the pending comparison
    with pytest.raises(Exception, match="blind comparison waiting for its vote"):
        inspect.open_run(runs["mad"], "b" * 32, SimpleNamespace(session_hash="s"))
    from r2mad.ui.api import Api

    api = Api(services)
    assert set(runs.values()).isdisjoint(r["run_id"] for r in api.list_runs(request=SimpleNamespace(session_hash="s")))
    with pytest.raises(Exception, match="blind comparison waiting for its vote"):
        api.get_run(runs["mad"], request=SimpleNamespace(session_hash="s"))
    VoteHandlers(services).vote(None, curtain.state(), "b" * 32, SimpleNamespace(session_hash="s"), None, None)
    listed = inspect.list_runs("any", "any", "any", "any", [], "any", "b" * 32, SimpleNamespace(session_hash="s"))
    assert set(runs.values()) <= set(listed[1])  # skipped: the names are shown, and the runs listed


def test_vote_events_sent_at_once_from_one_page_under_other_ids_count_once(store):
    """The probe at the handler: ten clicks at once on one comparison's buttons, each with another browser id
    and session (the comparison is read from the page's state before any event clears it)."""
    import threading
    import warnings

    runs = comparison(store, "B", "A")
    curtain = Curtain()
    curtain.draw(list(runs), random.Random(0))
    curtain.runs.update(runs)
    curtain.hide({m: store.get_run(r).transcript for m, r in runs.items()})
    state = curtain.state()
    services = SimpleNamespace(store=store, config=SimpleNamespace(private_runs=False), sealed=Sealed())
    handlers, start = VoteHandlers(services), threading.Barrier(10)

    def click(i):
        start.wait()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the refusals, said to each page
            handlers.vote(i % 2, state, f"{i:032d}", SimpleNamespace(session_hash=f"s{i}"), None, None)

    threads = [threading.Thread(target=click, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(handlers.votes.votes()) == 1
